"""One description of pyframe's elementwise ops and reductions, read by the op tests (tests/ops) and the fuzz
walk (tools/fuzz/ops.py).

A row names the op, its pyframe callable, a NumPy reference, the dtypes it accepts (as torch), the input domain of
each operand (tests/_helpers.py's ``random_array`` and :func:`draw`), the kind of result dtype and, for
differentiable unary ops, the domain their gradients are checked on.

A unary op in pyframe's table (``pyframe.ops.elementwise.unary_ops``) that NumPy has under the same name needs no
row: its row is derived (:func:`derive`) with NumPy's function as the reference, the result kind NumPy gives
integers, every dtype for float and bool results (int and float ones otherwise) and the first domain of
:data:`DERIVED_DOMAINS` on which the reference is finite and moderate. Only irregular ops have rows below: no NumPy
function of that name, integer results NumPy would make float, special domains or dtypes, or callables that are
not a unary op of the table (operators, scalars, clamp bounds, binaries).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

import pyframe
from pyframe.ops.elementwise import unary_ops
from tests._helpers import ALL, DTYPES, FLOATS, INTS, NUMERIC, RANGES, random_array

np_erf = np.vectorize(math.erf, otypes=[np.float64])
np_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def np_sign(a):
    """np.sign with torch's sign(NaN) = 0."""
    return a.copy() if a.dtype == np.bool_ else np.nan_to_num(np.sign(a), nan=0.0)


def np_sigmoid(a):
    return 1.0 / (1.0 + np.exp(-a))


def np_pow(a, b):
    if a.dtype.kind in "iu" and np.asarray(b).dtype.kind in "iu":
        return np.power(a.astype(np.int64), b.astype(np.int64))
    return np.power(a, b)


@dataclass(frozen=True)
class Op:
    name: str
    fn: Callable
    ref: Callable  # on float64 copies of the inputs (int64 for integer results)
    dtypes: tuple
    domains: tuple  # one input domain per operand (see draw)
    result: str = "same"  # "same": the input dtype, "float": int/bool -> float32, "bool"
    grad: str | None = None  # unary ops: the domain float64 gradients are checked on
    derived: bool = False

    @property
    def arity(self) -> int:
        return len(self.domains)

    def result_dtype(self, dtype: str) -> str:
        if self.result == "bool":
            return "bool"
        if self.result == "float" and dtype not in FLOATS:
            return "float32"
        return dtype


U, B = ("real",), ("real", "real")


def np_lgamma(a):
    """log|gamma|: +inf at 0 and the negative integers, as torch."""

    def one(v):
        return math.inf if v <= 0 and v == int(v) else math.lgamma(v)

    return np.vectorize(one, otypes=[np.float64])(np.asarray(a, np.float64))


def np_digamma(a):
    """digamma as torch defines it: the recurrence up to 20, then the asymptotic series (to rounding); negative
    arguments by reflection, NaN at the negative integers (the poles), -inf at +0 and +inf at -0."""
    x = np.asarray(a, np.float64)
    neg = x < 0
    z = np.where(neg, 1 - x, x)
    acc = np.zeros_like(z)
    for k in range(20):
        acc -= 1.0 / (z + k)
    y = z + 20
    series = 1 / (12 * y**2) - 1 / (120 * y**4) + 1 / (252 * y**6) - 1 / (240 * y**8) + 1 / (132 * y**10)
    psi = acc + np.log(y) - 1 / (2 * y) - series
    psi = np.where(neg, psi - np.pi / np.tan(np.pi * x), psi)
    psi = np.where(neg & (x == np.floor(x)), np.nan, psi)
    return np.where(x == 0, np.copysign(np.inf, -x), psi)


def np_erfinv(a):
    """The inverse of math.erf by Newton's method from 0 (|a| < 1)."""

    def one(y):
        if abs(y) >= 1:
            return math.copysign(math.inf, y) if abs(y) == 1 else math.nan
        x = 0.0
        for _ in range(60):
            x -= (math.erf(x) - y) / (2 / math.sqrt(math.pi) * math.exp(-x * x))
        return x

    return np.vectorize(one, otypes=[np.float64])(np.asarray(a, np.float64))


ROWS = [
    # ---- unary: not derivable (no NumPy function of the name, integer results NumPy makes float, special
    # domains, bool inputs) or not in pyframe's unary table ----
    Op("neg", pyframe.neg, np.negative, NUMERIC, U),
    Op("sigmoid", pyframe.sigmoid, np_sigmoid, ALL, U, "float", grad="real"),
    Op("relu", pyframe.relu, lambda a: np.maximum(a, 0), NUMERIC, U),
    Op("sign", pyframe.sign, np_sign, ALL, U),
    Op("reciprocal", pyframe.reciprocal, lambda a: 1.0 / a, ALL, ("nonzero",), "float", grad="nonzero"),
    Op("rsqrt", pyframe.rsqrt, lambda a: 1.0 / np.sqrt(a), ALL, ("pos",), "float", grad="pos"),
    Op("erf", pyframe.erf, np_erf, ALL, U, "float", grad="real"),
    Op("erfc", pyframe.erfc, np_erfc, ALL, U, "float", grad="real"),
    Op("logit", pyframe.logit, lambda a: np.log(a / (1 - a)), ALL, ("prob",), "float", grad="prob"),
    Op("lgamma", pyframe.lgamma, lambda a: np_lgamma(a), ALL, ("pos",), "float", grad="pos"),
    Op("digamma", pyframe.digamma, lambda a: np_digamma(a), ALL, ("pos",), "float", grad="pos"),
    Op("erfinv", pyframe.erfinv, lambda a: np_erfinv(a), ALL, ("unit",), "float", grad="unit"),
    Op("i0", pyframe.i0, lambda a: np.i0(a.astype(np.float64)), ALL, U, "float", grad="real"),
    Op("floor", pyframe.floor, np.floor, NUMERIC, ("quarter",)),
    Op("ceil", pyframe.ceil, np.ceil, NUMERIC, ("quarter",)),
    Op("round", pyframe.round, np.round, NUMERIC, ("quarter",)),  # half to even, as torch.round
    Op("trunc", pyframe.trunc, np.trunc, NUMERIC, ("quarter",)),
    Op("isnan", pyframe.isnan, np.isnan, ALL, ("special",), "bool"),
    Op("isinf", pyframe.isinf, np.isinf, ALL, ("special",), "bool"),
    Op("isfinite", pyframe.isfinite, np.isfinite, ALL, ("special",), "bool"),
    Op("clamp", lambda x: pyframe.clamp(x, -1, 2), lambda a: np.clip(a, -1, 2), NUMERIC, U),
    Op("clamp_min", lambda x: pyframe.clamp(x, min=0.5), lambda a: np.maximum(a, 0.5), FLOATS, U),
    Op("clamp_max", lambda x: x.clamp(max=-0.5), lambda a: np.minimum(a, -0.5), FLOATS, U),
    Op("clip_int", lambda x: x.clip(0, 3), lambda a: np.clip(a, 0, 3), INTS, U),
    Op("pow_scalar2", lambda x: x**2, lambda a: a * a, NUMERIC, U),
    Op("pow_scalar_half", lambda x: pyframe.pow(x, 0.5), np.sqrt, FLOATS + INTS, ("pos",), "float"),
    Op("pow_scalar_neg", lambda x: x**-1.5, lambda a: np.power(a, -1.5), FLOATS, ("pos",)),
    Op("rpow_scalar", lambda x: 2**x, lambda a: np.power(2, a), NUMERIC, ("exp",)),
    Op("rpow_float", lambda x: 1.5**x, lambda a: np.power(1.5, a.astype(np.float64)), NUMERIC, ("exp",), "float"),
    # ---- binary ----
    Op("add", pyframe.add, np.add, ALL, B),
    Op("sub", pyframe.sub, np.subtract, NUMERIC, B),
    Op("mul", pyframe.mul, np.multiply, ALL, B),
    Op("div", pyframe.div, np.true_divide, ALL, ("real", "nonzero"), "float"),
    Op("pow", pyframe.pow, np_pow, NUMERIC, ("pos", "exp")),
    Op("maximum", pyframe.maximum, np.maximum, ALL, B),
    Op("minimum", pyframe.minimum, np.minimum, ALL, B),
    Op("floor_divide", pyframe.floor_divide, np.floor_divide, NUMERIC, ("quarter", "nonzero")),
    Op("remainder", pyframe.remainder, np.remainder, NUMERIC, ("quarter", "nonzero")),
    Op("atan2", pyframe.atan2, np.arctan2, ALL, B, "float"),
    Op("eq", pyframe.eq, np.equal, ALL, ("small", "small"), "bool"),
    Op("ne", pyframe.ne, np.not_equal, ALL, ("small", "small"), "bool"),
    Op("lt", pyframe.lt, np.less, ALL, ("small", "small"), "bool"),
    Op("le", pyframe.le, np.less_equal, ALL, ("small", "small"), "bool"),
    Op("gt", pyframe.gt, np.greater, ALL, ("small", "small"), "bool"),
    Op("ge", pyframe.ge, np.greater_equal, ALL, ("small", "small"), "bool"),
    Op("logical_and", pyframe.logical_and, np.logical_and, ALL, ("small", "small"), "bool"),
    Op("logical_or", pyframe.logical_or, np.logical_or, ALL, ("small", "small"), "bool"),
    Op("logical_xor", pyframe.logical_xor, np.logical_xor, ALL, ("small", "small"), "bool"),
    Op("op_add", lambda a, b: a + b, np.add, NUMERIC, B),
    Op("op_sub", lambda a, b: a - b, np.subtract, NUMERIC, B),
    Op("op_mul", lambda a, b: a * b, np.multiply, NUMERIC, B),
    Op("op_truediv", lambda a, b: a / b, np.true_divide, NUMERIC, ("real", "nonzero"), "float"),
    Op("op_floordiv", lambda a, b: a // b, np.floor_divide, NUMERIC, ("quarter", "nonzero")),
    Op("op_mod", lambda a, b: a % b, np.remainder, NUMERIC, ("quarter", "nonzero")),
    Op("op_pow", lambda a, b: a**b, np_pow, NUMERIC, ("pos", "exp")),
    Op("op_lt", lambda a, b: a < b, np.less, NUMERIC, ("small", "small"), "bool"),
    Op("op_eq", lambda a, b: a == b, np.equal, ALL, ("small", "small"), "bool"),
    Op("op_and", lambda a, b: a & b, np.bitwise_and, ("bool",), B, "bool"),
    Op("op_or", lambda a, b: a | b, np.bitwise_or, ("bool",), B, "bool"),
    Op("op_xor", lambda a, b: a ^ b, np.bitwise_xor, ("bool",), B, "bool"),
    Op(
        "clamp_tensor",
        lambda x, lo: pyframe.clamp(x, min=lo, max=lo + 1),
        lambda a, lo: np.clip(a, lo, lo + 1),
        NUMERIC,
        B,
    ),  # fmt: skip
]

# the domains a derived row may get, in the order they are tried
DERIVED_DOMAINS = ("real", "unit", "pos", "above_one")


def _tame(ref: Callable, domain: str) -> bool:
    """The reference is finite and at most 100 in size across the domain (no pole, no edge of its domain)."""
    with np.errstate(all="ignore"):
        y = ref(np.linspace(*RANGES[domain], 1001))
    return bool(np.all(np.isfinite(y)) and np.max(np.abs(y)) <= 100)


def derive(name: str) -> Op | None:
    """The row of pyframe's unary op ``name`` from NumPy's function of the same name, or None when there is none."""
    ref = getattr(np, name, None)
    if not isinstance(ref, np.ufunc) or (ref.nin, ref.nout) != (1, 1) or not hasattr(pyframe, name):
        return None
    with np.errstate(all="ignore"):
        kind = ref(np.arange(1, 4)).dtype.kind
    result = "bool" if kind == "b" else "float" if kind == "f" else "same"
    domain = next((d for d in DERIVED_DOMAINS if _tame(ref, d)), None)
    if domain is None:
        return None
    dtypes = NUMERIC if result == "same" else ALL
    return Op(name, getattr(pyframe, name), ref, dtypes, (domain,), result, domain if result == "float" else None, True)


_explicit = {op.name for op in ROWS}
OPS = ROWS + [op for op in (derive(n) for n in sorted(unary_ops) if n not in _explicit) if op is not None]
OPS_BY_NAME = {op.name: op for op in OPS}
assert len(OPS_BY_NAME) == len(OPS), "two rows of one name"
UNARY = [op for op in OPS if op.arity == 1]
BINARY = [op for op in OPS if op.arity == 2]


# ---- reductions -----------------------------------------------------------------------------------------


def _logsumexp(a, axis, keepdims):
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isinf(m), 0.0, m)  # an infinite maximum: the sum of exponentials says it (as torch)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis if axis is not None else None)


@dataclass(frozen=True)
class Red:
    name: str
    fn: Callable  # fn(tensor, dim, keepdim)
    ref: Callable  # ref(array, axis, keepdims) on float64 / int64 / bool arrays
    dtypes: tuple
    result: str  # "same", "sum" (ints/bool -> int64), "bool", "int64"
    domain: str = "real"
    all_dims_only_tuple: bool = False


def _method(name: str, **kw) -> Callable:
    """``t.<name>(dim, keepdim=k, **kw)``."""
    return lambda t, d, k: getattr(t, name)(d, keepdim=k, **kw)


def _np(fn: Callable, **kw) -> Callable:
    """``fn(a, axis=axis, keepdims=keepdims, **kw)``."""
    return lambda a, ax, kd: fn(a, axis=ax, keepdims=kd, **kw)


def _np_norm(p: float) -> Callable:
    """The p-norm along ``axis``: sqrt of the sum of squares, the sum of magnitudes, the largest one, or the sum of
    p-th powers to the 1/p."""
    if p == 2:
        return lambda a, ax, kd: np.sqrt(np.sum(a * a, axis=ax, keepdims=kd))
    if p == 1:
        return lambda a, ax, kd: np.sum(np.abs(a), axis=ax, keepdims=kd)
    if p == math.inf:
        return lambda a, ax, kd: np.max(np.abs(a), axis=ax, keepdims=kd)
    return lambda a, ax, kd: np.sum(np.abs(a) ** p, axis=ax, keepdims=kd) ** (1 / p)


REDUCTIONS = [
    Red("sum", _method("sum"), _np(np.sum), ALL, "sum"),
    Red("sum_fn", lambda t, d, k: pyframe.sum(t, dim=d, keepdim=k), _np(np.sum), ALL, "sum"),
    Red("prod", _method("prod"), _np(np.prod), ALL, "sum", "near1"),
    Red("mean", _method("mean"), _np(np.mean), FLOATS, "same"),
    Red("var", _method("var"), _np(np.var, ddof=1), FLOATS, "same"),
    Red("var_biased", _method("var", unbiased=False), _np(np.var), FLOATS, "same"),
    Red("var_correction2", lambda t, d, k: pyframe.var(t, d, keepdim=k, correction=2), _np(np.var, ddof=2), FLOATS,
        "same"),
    Red("std", _method("std"), _np(np.std, ddof=1), FLOATS, "same"),
    Red("std_biased", _method("std", correction=0), _np(np.std), FLOATS, "same"),
    Red("norm", lambda t, d, k: t.norm(dim=d, keepdim=k), _np_norm(2), FLOATS, "same"),
    Red("norm1", lambda t, d, k: t.norm(1, dim=d, keepdim=k), _np_norm(1), FLOATS, "same"),
    Red("norm_inf", lambda t, d, k: t.norm(float("inf"), dim=d, keepdim=k), _np_norm(math.inf), FLOATS, "same"),
    Red("norm3", lambda t, d, k: pyframe.norm(t, 3, d, k), _np_norm(3), FLOATS, "same"),
    Red("amax", lambda t, d, k: t.amax(() if d is None else d, keepdim=k), _np(np.max), ALL, "same"),
    Red("amin", lambda t, d, k: pyframe.amin(t, () if d is None else d, keepdim=k), _np(np.min), ALL, "same"),
    Red("any", _method("any"), _np(np.any), ALL, "bool", "sparse"),
    Red("all", _method("all"), _np(np.all), ALL, "bool", "dense"),
    Red("logsumexp", lambda t, d, k: pyframe.logsumexp(t, tuple(range(t.ndim)) if d is None else d, keepdim=k),
        _logsumexp, FLOATS, "same"),
]  # fmt: skip


def draw(rng: np.random.Generator, shape, dtype: str, domain: str) -> np.ndarray:
    """Input values of ``dtype`` from a domain: ``random_array``'s, or special (NaN and infinities among reals),
    small (ints in [-2, 2]: many ties), near1 (products stay moderate), sparse/dense (mostly zeros/ones)."""
    if domain == "special":
        a = random_array(rng, shape, dtype)
        if dtype in FLOATS and a.size:
            flat = a.reshape(-1)
            flat[::4] = np.nan
            flat[1::5] = np.inf
            flat[2::7] = -np.inf
        return a
    if domain == "small":
        if dtype == "bool":
            return random_array(rng, shape, dtype)
        return rng.integers(-2, 3, size=shape).astype(DTYPES[dtype].np)
    if domain == "near1":
        if dtype in FLOATS:
            return rng.uniform(0.7, 1.3, size=shape).astype(DTYPES[dtype].np)
        if dtype in INTS:
            return rng.choice([-1, 1, 1, 2], size=shape).astype(DTYPES[dtype].np)
    if domain in ("sparse", "dense"):  # so any/all see both outcomes along short dims
        p = 0.15 if domain == "sparse" else 0.85
        return (rng.random(shape) < p).astype(DTYPES[dtype].np)
    return random_array(rng, shape, dtype, domain)


# ---- edges: every differentiable op at its kinks, boundaries, ties and NaNs ----------------------------------
# An edge row's ``fn(M, *tensors)`` calls the op in library ``M`` (pyframe, or torch as the oracle of
# tests/autograd/test_edge_gradients.py) on float64 tensors; ``inputs`` lists the probes, each one array per
# tensor operand. Elementwise ops take every point of a grid holding each op family's switching points (0, the
# +-1 of hardtanh, 6 of relu6, +-3 of hardsigmoid, 20 of softplus, +-0.5 of the shrinks ...), signed zeros,
# infinities and NaN; binary ops every pair of a smaller grid; reductions ties, NaNs in each place, all-NaN rows.


@dataclass(frozen=True)
class Edge:
    name: str
    fn: Callable  # fn(M, *tensors) -> a tensor or a tuple whose first item is the differentiable result
    inputs: tuple  # probes: each a tuple of float64 arrays, one per tensor operand
    ties: bool = False  # selects elements whose choice among equal ones torch leaves open (sort, topk, median(dim)):
    # compared per last-dim row as the gradient each group of equal values (NaNs one group) receives, and the
    # multiset of gradients (each element gets one output's, never a share)
    rtol: float = 1e-9
    # torch's gradient at NaN depends on the kernel path (its vectorized loop gives 0 or NaN, its scalar tail
    # passes the gradient, as pyframe does): NaN probes sit in the scalar tail; the fuzz walk leaves them open
    nan_open: bool = False


INF, NAN = math.inf, math.nan
# the switching points of the ops below, and the values where their neighbours meet
EDGE_POINTS = (-INF, -20.0, -10.0, -6.0, -3.0, -2.0, -1.0, -0.5, -0.25, -0.0, 0.0, 0.25, 0.5, 1.0, 2.0, 3.0, 6.0,
               10.0, 20.0, INF, NAN)  # fmt: skip
EDGE_PAIR_VALUES = (-INF, -2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, INF, NAN)


def _unary_probe(points=EDGE_POINTS) -> tuple:
    return ((np.array(points, dtype=np.float64),),)


def _pair_probe(values=EDGE_PAIR_VALUES) -> tuple:
    a, b = np.meshgrid(np.array(values), np.array(values), indexing="ij")
    return ((a.reshape(-1).copy(), b.reshape(-1).copy()),)


def _signs(M, x, first=1.0):
    """+-1 alternating (starting with ``first``), shaped as ``x``: a target for the margin losses."""
    n = x.shape[-1]
    return M.tensor([first if i % 2 == 0 else -first for i in range(n)], dtype=M.float64).expand(*x.shape)


def _twice(points=EDGE_POINTS) -> tuple:
    """Each point twice in a row: with _signs, every point meets both targets."""
    return ((np.repeat(np.array(points, dtype=np.float64), 2),),)


def _arr(*rows) -> np.ndarray:
    return np.array(rows, dtype=np.float64)


# forms of the op table's rows that are not one function of the same name in both libraries
_FORMS = {
    "clamp": lambda M, x: M.clamp(x, -1, 2),
    "clamp_min": lambda M, x: M.clamp(x, min=0.5),
    "clamp_max": lambda M, x: x.clamp(max=-0.5),
    "pow_scalar2": lambda M, x: x**2,
    "pow_scalar_half": lambda M, x: M.pow(x, 0.5),
    "pow_scalar_neg": lambda M, x: x**-1.5,
    "rpow_scalar": lambda M, x: 2**x,
    "rpow_float": lambda M, x: 1.5**x,
    "clamp_tensor": lambda M, x, lo: M.clamp(x, min=lo, max=lo + 1),
}


def _table_edges() -> list:
    """The differentiable rows of the op table (float results of float inputs), over the edge grid."""
    rows = []
    for op in OPS:
        if op.result == "bool" or "float64" not in op.dtypes or op.name in ("clip_int",):
            continue
        form = _FORMS.get(op.name)
        if form is None and op.name.startswith("op_"):
            form = (lambda f: lambda M, *xs: f(*xs))(op.fn)  # an operator works on either library's tensors
        elif form is None:
            form = (lambda n: lambda M, *xs: getattr(M, n)(*xs))(op.name)
        rows.append(Edge(op.name, form, _unary_probe() if op.arity == 1 else _pair_probe()))
    return rows


def _F(M):
    return M.nn.functional


# the nn.functional activations and losses and the composite ops, each at its own switching points
FUNCTIONAL_EDGES = [
    Edge("relu", lambda M, x: _F(M).relu(x), _unary_probe()),
    Edge("relu6", lambda M, x: _F(M).relu6(x), _unary_probe(), nan_open=True),
    Edge("hardtanh", lambda M, x: _F(M).hardtanh(x), _unary_probe(), nan_open=True),
    Edge("hardtanh_-2_3", lambda M, x: _F(M).hardtanh(x, -2.0, 3.0), _unary_probe(), nan_open=True),
    Edge("leaky_relu", lambda M, x: _F(M).leaky_relu(x, 0.1), _unary_probe()),
    Edge("rrelu_eval", lambda M, x: _F(M).rrelu(x, training=False), _unary_probe()),
    Edge("prelu", lambda M, x: _F(M).prelu(x, M.tensor([0.25], dtype=M.float64)), _unary_probe()),
    Edge("elu", lambda M, x: _F(M).elu(x), _unary_probe(), nan_open=True),
    Edge("elu_2", lambda M, x: _F(M).elu(x, 2.0), _unary_probe(), nan_open=True),
    Edge("celu_2", lambda M, x: _F(M).celu(x, 2.0), _unary_probe(), nan_open=True),
    Edge("selu", lambda M, x: _F(M).selu(x), _unary_probe(), nan_open=True),
    Edge("gelu", lambda M, x: _F(M).gelu(x), _unary_probe()),
    Edge("gelu_tanh", lambda M, x: _F(M).gelu(x, approximate="tanh"), _unary_probe()),
    Edge("silu", lambda M, x: _F(M).silu(x), _unary_probe()),
    Edge("mish", lambda M, x: _F(M).mish(x), _unary_probe()),
    Edge("softplus", lambda M, x: _F(M).softplus(x), _unary_probe()),
    Edge("softplus_beta2_t10", lambda M, x: _F(M).softplus(x, 2.0, 10.0), _unary_probe((*EDGE_POINTS, 5.0))),
    Edge("logsigmoid", lambda M, x: _F(M).logsigmoid(x), _unary_probe()),
    Edge("sigmoid", lambda M, x: _F(M).sigmoid(x), _unary_probe()),
    Edge("tanh", lambda M, x: _F(M).tanh(x), _unary_probe()),
    # torch's hardsigmoid derivative is 1/6 rounded to float32, in float64 too
    Edge("hardsigmoid", lambda M, x: _F(M).hardsigmoid(x), _unary_probe(), rtol=1e-7),
    Edge("hardswish", lambda M, x: _F(M).hardswish(x), _unary_probe(), nan_open=True),
    Edge("softsign", lambda M, x: _F(M).softsign(x), _unary_probe()),
    Edge("tanhshrink", lambda M, x: _F(M).tanhshrink(x), _unary_probe()),
    Edge("softshrink", lambda M, x: _F(M).softshrink(x), _unary_probe(), nan_open=True),
    Edge("softshrink_1", lambda M, x: _F(M).softshrink(x, 1.0), _unary_probe(), nan_open=True),
    Edge("hardshrink", lambda M, x: _F(M).hardshrink(x), _unary_probe(), nan_open=True),
    Edge("hardshrink_0", lambda M, x: _F(M).hardshrink(x, 0.0), _unary_probe(), nan_open=True),
    Edge("threshold", lambda M, x: _F(M).threshold(x, 1.0, 0.5), _unary_probe()),
    Edge("abs", lambda M, x: M.abs(x), _unary_probe()),
    Edge("sgn", lambda M, x: M.sgn(x), _unary_probe()),
    Edge("frac", lambda M, x: M.frac(x), _unary_probe()),
    Edge("nan_to_num", lambda M, x: M.nan_to_num(x), _unary_probe()),
    Edge("nan_to_num_bounds", lambda M, x: M.nan_to_num(x, 1.0, 2.0, -2.0), _unary_probe()),
    Edge("sqrt", lambda M, x: M.sqrt(x), _unary_probe()),
    Edge("pow_0", lambda M, x: M.pow(x, 0.0), _unary_probe()),
    Edge("pow_1", lambda M, x: M.pow(x, 1.0), _unary_probe()),
    Edge("pow_1.5", lambda M, x: M.pow(x, 1.5), _unary_probe()),
    Edge("pow_3", lambda M, x: M.pow(x, 3), _unary_probe()),
    Edge("pow_-2", lambda M, x: M.pow(x, -2), _unary_probe()),
    Edge("rpow_0", lambda M, x: M.pow(0.0, x), _unary_probe()),
    Edge("clamp_0_6", lambda M, x: M.clamp(x, 0.0, 6.0), _unary_probe()),
    Edge("clamp_min_0", lambda M, x: M.clamp(x, min=0.0), _unary_probe()),
    Edge("clamp_max_1", lambda M, x: M.clamp(x, max=1.0), _unary_probe()),
    Edge("clamp_equal_bounds", lambda M, x: M.clamp(x, 1.0, 1.0), _unary_probe()),
    Edge("xlogy", lambda M, x, y: M.xlogy(x, y), _pair_probe()),
    Edge("hypot", lambda M, x, y: M.hypot(x, y), _pair_probe()),
    Edge("logaddexp", lambda M, x, y: M.logaddexp(x, y), _pair_probe()),
    Edge("fmod", lambda M, x, y: M.fmod(x, y), _pair_probe()),
    Edge("float_power", lambda M, x, y: M.float_power(x, y), _pair_probe()),
    Edge("lerp", lambda M, x, y: M.lerp(x, y, 0.5), _pair_probe()),
    Edge("dist", lambda M, x, y: M.dist(x, y), ((_arr(1.0, 2.0), _arr(1.0, 2.0)), (_arr(0.0), _arr(0.0)))),
    Edge("clamp_tensors", lambda M, x, lo: M.clamp(x, lo, lo + 1.0), _pair_probe()),
    # losses: reduction "none" where there is one, so each point's gradient stands alone
    Edge("l1_loss", lambda M, x, t: _F(M).l1_loss(x, t, reduction="none"), _pair_probe()),
    Edge("mse_loss", lambda M, x, t: _F(M).mse_loss(x, t, reduction="none"), _pair_probe()),
    Edge("smooth_l1_loss", lambda M, x, t: _F(M).smooth_l1_loss(x, t, reduction="none"), _pair_probe()),
    Edge("smooth_l1_loss_beta0", lambda M, x, t: _F(M).smooth_l1_loss(x, t, reduction="none", beta=0.0),
         _pair_probe()),
    Edge("smooth_l1_loss_beta0.5", lambda M, x, t: _F(M).smooth_l1_loss(x, t, reduction="none", beta=0.5),
         _pair_probe()),
    Edge("huber_loss", lambda M, x, t: _F(M).huber_loss(x, t, reduction="none"), _pair_probe()),
    Edge("huber_loss_2", lambda M, x, t: _F(M).huber_loss(x, t, reduction="none", delta=2.0), _pair_probe()),
    Edge("soft_margin_loss", lambda M, x: _F(M).soft_margin_loss(x, _signs(M, x), reduction="none"), _twice()),
    Edge("margin_ranking_loss", lambda M, a, b: _F(M).margin_ranking_loss(a, b, _signs(M, a), reduction="none"),
         ((np.repeat(_pair_probe()[0][0], 2), np.repeat(_pair_probe()[0][1], 2)),)),
    Edge("margin_ranking_loss_m1", lambda M, a, b: _F(M).margin_ranking_loss(a, b, _signs(M, a), 1.0,
                                                                              reduction="none"),
         ((np.repeat(_pair_probe()[0][0], 2), np.repeat(_pair_probe()[0][1], 2)),)),
    Edge("hinge_embedding_loss", lambda M, x: _F(M).hinge_embedding_loss(x, _signs(M, x), reduction="none"),
         _twice()),
    Edge("hinge_embedding_loss_m2", lambda M, x: _F(M).hinge_embedding_loss(x, _signs(M, x), 2.0, reduction="none"),
         _twice()),
    Edge("multilabel_soft_margin_loss", lambda M, x: _F(M).multilabel_soft_margin_loss(
        x.reshape(-1, 2), (_signs(M, x) > 0).to(M.float64).reshape(-1, 2), reduction="none"), _twice()),
    Edge("binary_cross_entropy_with_logits", lambda M, x: _F(M).binary_cross_entropy_with_logits(
        x, (_signs(M, x) > 0).to(M.float64), reduction="none"), _twice()),
    Edge("binary_cross_entropy", lambda M, x: _F(M).binary_cross_entropy(
        x, (_signs(M, x) > 0).to(M.float64), reduction="none"), _twice((0.0, 1e-300, 0.5, 1.0 - 1e-16, 1.0))),
    Edge("binary_cross_entropy_target", lambda M, x, t: _F(M).binary_cross_entropy(x, t, reduction="none"),
         _pair_probe((0.0, 0.5, 1.0))),
    Edge("kl_div", lambda M, x, t: _F(M).kl_div(x, t, reduction="none"), _pair_probe()),
    Edge("kl_div_log_target", lambda M, x, t: _F(M).kl_div(x, t, reduction="none", log_target=True),
         _pair_probe()),
    Edge("poisson_nll_loss", lambda M, x, t: _F(M).poisson_nll_loss(x, t, reduction="none"), _pair_probe()),
    Edge("poisson_nll_loss_nolog", lambda M, x, t: _F(M).poisson_nll_loss(x, t, log_input=False, reduction="none"),
         _pair_probe()),
    Edge("multi_margin_loss", lambda M, x: _F(M).multi_margin_loss(x, M.tensor([0, 1, 2]), reduction="none"),
         ((_arr([1.0, 0.0, 0.5], [0.0, 1.0, 2.0], [2.0, 2.0, 2.0]),), (_arr([0.0, 0.0, 0.0], [1.0, 1.0, 0.0],
                                                                            [NAN, 0.0, 1.0]),))),
    Edge("triplet_margin_loss", lambda M, a, p, n: _F(M).triplet_margin_loss(a, p, n, reduction="none"),
         ((_arr([0.0, 0.0]), _arr([1.0, 0.0]), _arr([2.0, 0.0])), (_arr([0.0, 0.0]), _arr([0.0, 0.0]),
                                                                    _arr([0.0, 0.0])))),
    Edge("cosine_embedding_loss", lambda M, a, b: _F(M).cosine_embedding_loss(
        a, b, M.tensor([1.0, -1.0], dtype=M.float64), margin=0.0, reduction="none"),
         ((_arr([1.0, 0.0], [1.0, 0.0]), _arr([1.0, 0.0], [0.0, 1.0])), (_arr([0.0, 0.0], [0.0, 0.0]),
                                                                          _arr([1.0, 0.0], [1.0, 0.0])))),
    Edge("pairwise_distance", lambda M, a, b: _F(M).pairwise_distance(a, b),
         ((_arr([1.0, 0.0], [0.0, 0.0]), _arr([1.0, 0.0], [0.0, 0.0])),)),
    Edge("normalize_zero", lambda M, x: _F(M).normalize(x, dim=-1), ((_arr([0.0, 0.0], [3.0, 4.0]),),)),
]  # fmt: skip

# ties, NaN in each place and all-NaN rows, for the reductions and the ops that select elements
_TIES = (_arr(1.0, 3.0, 3.0, 2.0), _arr(2.0, 2.0, 2.0), _arr(-INF, -INF, 1.0), _arr(INF, 1.0, INF))
_NANS = (_arr(1.0, NAN, 3.0, 2.0), _arr(NAN, 1.0, 2.0), _arr(1.0, 2.0, NAN), _arr(NAN, 2.0, NAN), _arr(NAN, NAN))
_ROWS = (_arr([1.0, NAN, 3.0, 0.0], [2.0, 2.0, 1.0, 1.0], [NAN, NAN, NAN, NAN], [5.0, 4.0, 4.0, 5.0]),)
_VEC = tuple((a,) for a in _TIES + _NANS)
_MAT = tuple((a,) for a in _ROWS)
_POOL = (
    (np.array([[[1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 0.0]]]),),
    (np.array([[[1.0, NAN, 3.0, 2.0, NAN, 5.0, 0.0]]]),),
    (np.array([[[NAN, NAN, 3.0, NAN, NAN, NAN, 0.0]]]),),
)
_POOL2 = (
    (np.array([[[[1.0, 3.0, 3.0, 2.0, 5.0], [5.0, 0.0, 5.0, 1.0, 1.0], [2.0, 2.0, 2.0, 2.0, 2.0]]]]),),
    (np.array([[[[1.0, NAN, 3.0, 2.0, 5.0], [NAN, 0.0, 5.0, 1.0, NAN], [2.0, 2.0, NAN, 2.0, 2.0]]]]),),
)

REDUCTION_EDGES = [
    Edge("max", lambda M, x: M.max(x), _VEC + _MAT),
    Edge("min", lambda M, x: M.min(x), _VEC + _MAT),
    Edge("max_dim", lambda M, x: M.max(x, -1), _VEC + _MAT, ties=True),
    Edge("min_dim", lambda M, x: M.min(x, -1), _VEC + _MAT, ties=True),
    Edge("amax", lambda M, x: M.amax(x), _VEC + _MAT),
    Edge("amin", lambda M, x: M.amin(x), _VEC + _MAT),
    Edge("amax_dim", lambda M, x: M.amax(x, -1), _VEC + _MAT),
    Edge("amin_dim", lambda M, x: M.amin(x, -1), _VEC + _MAT),
    Edge("aminmax_max", lambda M, x: M.aminmax(x, dim=-1)[1], _VEC + _MAT),
    Edge("maximum_self", lambda M, x: M.maximum(x, x.flip(-1)), _VEC + _MAT),
    Edge("median", lambda M, x: M.median(x), _VEC + _MAT),
    Edge("median_dim", lambda M, x: M.median(x, -1), _VEC + _MAT, ties=True),
    Edge("nanmedian", lambda M, x: M.nanmedian(x), _VEC + _MAT),
    Edge("nanmedian_dim", lambda M, x: M.nanmedian(x, -1), _VEC + _MAT, ties=True),
    Edge("kthvalue_2", lambda M, x: M.kthvalue(x, 2), _VEC + _MAT, ties=True),
    Edge("sort", lambda M, x: M.sort(x), _VEC + _MAT, ties=True),
    Edge("sort_desc", lambda M, x: M.sort(x, descending=True), _VEC + _MAT, ties=True),
    Edge("topk_2", lambda M, x: M.topk(x, 2), _VEC + _MAT, ties=True),
    Edge("topk_2_smallest", lambda M, x: M.topk(x, 2, largest=False), _VEC + _MAT, ties=True),
    Edge("logsumexp", lambda M, x: M.logsumexp(x, -1), _VEC + _MAT),
    Edge("softmax", lambda M, x: M.softmax(x, -1), _VEC + _MAT),
    Edge("log_softmax", lambda M, x: M.log_softmax(x, -1), _VEC + _MAT),
    Edge("norm", lambda M, x: M.norm(x, dim=-1), _VEC + _MAT + ((_arr(0.0, 0.0),),)),
    Edge("norm_inf", lambda M, x: M.norm(x, float("inf"), dim=-1), _VEC + _MAT),
    Edge("norm_1", lambda M, x: M.norm(x, 1, dim=-1), _VEC + _MAT + ((_arr(0.0, 0.0),),)),
    Edge("prod", lambda M, x: M.prod(x, -1), _VEC + _MAT + ((_arr(0.0, 2.0, 3.0),), (_arr(0.0, 0.0, 3.0),))),
    Edge("cumprod", lambda M, x: M.cumprod(x, -1), _VEC + _MAT + ((_arr(2.0, 0.0, 3.0),), (_arr(0.0, 0.0, 3.0),))),
    Edge("std", lambda M, x: M.std(x, -1), _VEC + _MAT + ((_arr(1.0),),)),
    Edge("var", lambda M, x: M.var(x, -1), _VEC + _MAT),
    Edge("max_pool1d", lambda M, x: _F(M).max_pool1d(x, 2), _POOL),
    Edge("max_pool1d_s1", lambda M, x: _F(M).max_pool1d(x, 3, 1), _POOL),
    Edge("adaptive_max_pool1d", lambda M, x: _F(M).adaptive_max_pool1d(x, 3), _POOL),
    Edge("adaptive_max_pool1d_5", lambda M, x: _F(M).adaptive_max_pool1d(x, 5), _POOL),
    Edge("max_pool2d", lambda M, x: _F(M).max_pool2d(x, 2, 1), _POOL2),
    Edge("adaptive_max_pool2d", lambda M, x: _F(M).adaptive_max_pool2d(x, (2, 3)), _POOL2),
    Edge("adaptive_max_pool2d_2", lambda M, x: _F(M).adaptive_max_pool2d(x, 2), _POOL2),
]

GRAD_EDGES = _table_edges() + FUNCTIONAL_EDGES + REDUCTION_EDGES
