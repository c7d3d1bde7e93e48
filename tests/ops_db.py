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
    return a.copy() if a.dtype == np.bool_ else np.sign(a)


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
    Op("op_and", lambda a, b: a & b, np.logical_and, ("bool",), B, "bool"),
    Op("op_or", lambda a, b: a | b, np.logical_or, ("bool",), B, "bool"),
    Op("op_xor", lambda a, b: a ^ b, np.logical_xor, ("bool",), B, "bool"),
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
