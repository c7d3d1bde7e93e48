"""The fuzz walk's generators for the edges of the domain, with torch as the oracle (docs/reliability.md):

- ``edge_gradient``: a differentiable op of the edge table (``tests/ops_db.GRAD_EDGES``) on random points drawn
  from its switching points, NaN in random places, ties, plus random reals: values and gradients.
- ``empty_input``: an op of the nn and ops families on shapes with a 0 in a random place: torch's result, or a
  refusal when torch refuses (a message in the op's name: the walk's unclear-error check reads it).
- ``huge_numel``: views and factories whose element count passes int64 (must be refused) or nearly does.
- ``collate_mixed``: ``default_collate`` of samples mixing Python numbers, NumPy scalars and arrays, tensors,
  tuples and dicts: torch's dtypes and values.
- ``setitem_leading_ones``, ``negative_index``, ``default_dtype``: a value with extra leading size-1 dims for every
  key kind, the index ops with negative and out-of-range indices, the number-to-tensor paths under float64.

torch is imported on the first reference that needs it; without torch (and under the AddressSanitizer core)
these calls only check for crashes, internal errors and unclear messages.
"""

from __future__ import annotations

import math
import os

import numpy as np

import pyframe as pf
from tests import ops_db
from tools.fuzz.ops import Call, _pick, generator

_torch = None


def torch():
    global _torch
    if _torch is None:
        import torch as t

        _torch = t
    return _torch


def _have_torch() -> bool:
    """Whether torch can be the oracle: importable, and not under the AddressSanitizer core (libasan preloaded
    into the interpreter reports torch's own libraries), where these calls check for crashes only."""
    if os.environ.get("PYFRAME_FUZZ_CORE"):
        return False
    try:
        torch()
    except ImportError:
        return False
    return True


def _np(M, t) -> np.ndarray:
    t = t.detach()
    return np.array((t.clone() if M is not pf else t).numpy())


def _dtype_tag(t) -> np.ndarray:
    """The dtype as a comparable array (the walk compares values after casting to pyframe's dtype)."""
    return np.array([str(t.dtype).split(".")[-1]])


# ---- gradients at kinks, ties and NaN -----------------------------------------------------------------------

_EDGES = [e for e in ops_db.GRAD_EDGES if e.rtol == 1e-9]  # hardsigmoid's float32 constant: the tests' own check
_EXTRA = (math.nan, math.nan, 0.0, -0.0, math.inf, -math.inf)


def _edge_inputs(rng, edge) -> tuple:
    """Arrays shaped as one of the row's probes, each element drawn from the row's own points (its kinks), NaN,
    infinities, signed zeros or a random real."""
    probe = edge.inputs[int(rng.integers(len(edge.inputs)))]
    pool = np.unique(np.concatenate([a.reshape(-1) for a in probe] + [np.array(_EXTRA)]))
    out = []
    for a in probe:
        if a.ndim == 1 and not edge.name.startswith(
            ("margin_ranking", "hinge", "soft_margin", "binary_cross", "multilabel")
        ):
            n = int(rng.integers(1, 9))
        else:
            n = None
        shape = (n,) if n is not None else a.shape
        pick = rng.choice(pool, size=shape)
        real = rng.standard_normal(shape) * 3
        arr = np.where(rng.random(shape) < 0.75, pick, real)
        if edge.name in ("binary_cross_entropy", "binary_cross_entropy_target"):  # probabilities
            arr = np.clip(np.nan_to_num(arr, nan=0.5), 0.0, 1.0)
        out.append(arr.astype(np.float64))
    if len({a.shape for a in out}) > 1:  # operands of one elementwise op share a shape
        out = [np.resize(a, out[0].shape) for a in out]
    return tuple(out)


def _edge_run(M, edge, arrays, ties: bool):
    xs = [M.tensor(a, dtype=M.float64, requires_grad=True) for a in arrays]
    out = edge.fn(M, *xs)
    y = out[0] if isinstance(out, tuple) else out
    if ties:  # which of equal elements is selected is left open by torch: the values only
        return (_np(M, y),)
    w = M.arange(1, y.numel() + 1, dtype=M.float64).reshape(y.shape)
    (y * w).sum().backward()
    grads = [np.zeros(a.shape) if x.grad is None else _np(M, x.grad) for a, x in zip(arrays, xs, strict=True)]
    if edge.nan_open:  # torch's gradient at NaN depends on its kernel's path there: not compared
        grads = [np.where(np.isnan(a), 0.0, gr) for a, gr in zip(arrays, grads, strict=True)]
    return (_np(M, y), *grads)


@generator
def edge_gradient(rng) -> Call:
    edge = _pick(rng, _EDGES)
    arrays = _edge_inputs(rng, edge)
    shown = ", ".join(np.array2string(a, separator=",", threshold=20) for a in arrays)
    ref = (lambda: _edge_run(torch(), edge, arrays, edge.ties)) if _have_torch() else None
    return Call(f"edge {edge.name}({shown})", lambda: _edge_run(pf, edge, arrays, edge.ties), ref)


# ---- empty inputs -------------------------------------------------------------------------------------------


def _F(M):
    return M.nn.functional


def _sizes(rng, k: int) -> list:
    """k sizes in {1, 2, 3, 4} with at least one 0 in a random place."""
    s = [int(rng.integers(1, 5)) for _ in range(k)]
    s[int(rng.integers(k))] = 0
    return s


def _empty_ops(rng):
    n, c, h, w = _sizes(rng, 4)
    kh = int(rng.integers(1, 3))
    L, N = _sizes(rng, 2)  # an RNN compares only empty outputs (the two libraries' initial weights differ)
    d = int(rng.integers(2))
    return {
        "logsumexp": lambda M: M.logsumexp(M.zeros(n, c), d),
        "softmax": lambda M: M.softmax(M.zeros(n, c), -1),
        "sum_prod_mean": lambda M: (M.zeros(n, c).sum(0), M.zeros(n, c).prod(1)),
        "conv2d": lambda M: _F(M).conv2d(M.zeros(n, max(c, 1), h + kh, w + kh), M.ones(2, max(c, 1), kh, kh)),
        "conv_transpose2d": lambda M: _F(M).conv_transpose2d(M.zeros(n, max(c, 1), h, w), M.ones(max(c, 1), 2, kh, kh)),
        "max_pool2d": lambda M: _F(M).max_pool2d(M.zeros(n, c, 2 * h + 2, 2 * w + 2), 2),
        "avg_pool2d": lambda M: _F(M).avg_pool2d(M.zeros(n, c, 2 * h + 2, 2 * w + 2), 2),
        "adaptive_max_pool2d": lambda M: _F(M).adaptive_max_pool2d(M.zeros(n, c, 5, 5), 3),
        "adaptive_avg_pool2d": lambda M: _F(M).adaptive_avg_pool2d(M.zeros(n, c, 5, 5), 3),
        "interpolate": lambda M: _F(M).interpolate(M.zeros(n, max(c, 1), h, w), size=(3, 2), mode="nearest"),
        "interpolate_bilinear": lambda M: _F(M).interpolate(M.zeros(n, max(c, 1), h, w), size=(3, 2), mode="bilinear"),
        "linear": lambda M: _F(M).linear(M.zeros(n, c), M.ones(h, c)),
        "layer_norm": lambda M: _F(M).layer_norm(M.zeros(n, max(c, 1)), (max(c, 1),)),
        "group_norm": lambda M: _F(M).group_norm(M.zeros(n, 2 * max(c, 1), 3), 2),
        "batch_norm": lambda M: _F(M).batch_norm(M.zeros(n, max(c, 1)), None, None, training=True),
        "cross_entropy": lambda M: _F(M).cross_entropy(
            M.zeros(n, max(c, 1)), M.zeros(n, dtype=M.int64), reduction="sum"
        ),
        "mse_loss": lambda M: _F(M).mse_loss(M.zeros(n, c), M.zeros(n, c), reduction="sum"),
        "sdpa": lambda M: _F(M).scaled_dot_product_attention(M.zeros(n, h, c), M.zeros(n, w, c), M.ones(n, w, 2)),
        "gru": lambda M: (M.manual_seed(0), M.nn.GRU(3, 2)(M.zeros(L, N, 3))[0])[1],
        "lstm": lambda M: (M.manual_seed(0), M.nn.LSTM(3, 2)(M.zeros(L, N, 3))[0])[1],
        "matmul": lambda M: M.zeros(n, c) @ M.zeros(c, h),
        "cat": lambda M: M.cat([M.zeros(n, c), M.zeros(h, c)]),
        "sort_topk": lambda M: (M.sort(M.zeros(n, c))[0], M.topk(M.zeros(n, c), min(c, 1) if c else 0)[0]),
        "cumsum": lambda M: M.cumsum(M.zeros(n, c), 1),
        "median_dim": lambda M: M.median(M.zeros(n, c), 1)[0],
    }


def _answer(M, fn):
    out = fn(M)
    items = out if isinstance(out, (tuple, list)) else (out,)
    return tuple(_np(M, t).astype(np.float64) for t in items if hasattr(t, "detach"))


@generator
def empty_input(rng) -> Call:
    ops = _empty_ops(rng)
    name = _pick(rng, sorted(ops))
    fn = ops[name]
    # torch's refusal must be pyframe's too (strict), except where pyframe answers with the math's result
    strict = name not in ("conv2d", "interpolate", "interpolate_bilinear", "median_dim")
    ref = (lambda: _answer(torch(), fn)) if _have_torch() else None
    return Call(f"empty {name} (sizes drawn with a 0)", lambda: _answer(pf, fn), ref, strict=strict)


# ---- element counts past int64 ------------------------------------------------------------------------------

_BIG = (2**31, 2**40, 2**62, 2**63 - 1, 3, 1)
_ALLOCATING = (2**40, 2**62, 2**63 - 1)  # what zeros/repeat get: refused, or a MemoryError at once (never 8 GiB)


@generator
def huge_numel(rng) -> Call:
    kind = _pick(rng, ["expand", "broadcast_to", "expand_view", "unsqueeze_expand", "zeros", "repeat"])
    pool = _ALLOCATING if kind in ("zeros", "repeat") else _BIG
    sizes = tuple(int(_pick(rng, pool)) for _ in range(int(rng.integers(1, 4))))

    def run():
        if kind == "expand":
            t = pf.ones(*([1] * len(sizes))).expand(*sizes)
        elif kind == "broadcast_to":
            t = pf.broadcast_to(pf.ones(1), sizes)
        elif kind == "expand_view":
            t = pf.ones(1).expand(math.prod(sizes)).view(*sizes)
        elif kind == "unsqueeze_expand":
            t = pf.ones(1).expand(sizes[0]).unsqueeze(0).expand(math.prod(sizes[1:]) or 1, sizes[0])
        elif kind == "zeros":
            t = pf.zeros(*sizes)
        else:
            t = pf.ones(1).expand(sizes[0]).repeat(math.prod(sizes[1:]) or 1)
        return np.array([t.numel()], dtype=object)

    def ref():
        n = math.prod(sizes)
        if n > 2**63 - 1:
            raise OverflowError("more elements than int64 counts")
        if kind in ("zeros", "repeat"):
            raise MemoryError("a real allocation of that size is refused or fails cleanly")
        return np.array([n], dtype=object)

    # past int64 pyframe must refuse (strict); a legal view must report its element count
    return Call(f"{kind} to {list(sizes)}", run, ref, strict=math.prod(sizes) > 2**63 - 1)


# ---- collation of mixed samples -----------------------------------------------------------------------------


def _sample_spec(rng, depth=0):
    r = rng.random()
    if depth < 1 and r < 0.15:
        return ("tuple", [_sample_spec(rng, depth + 1) for _ in range(2)])
    if depth < 1 and r < 0.25:
        return ("dict", _sample_spec(rng, depth + 1))
    kinds = ["int", "float", "bool", "np_float32", "np_float64", "np_int32", "np_int64", "np_array", "tensor"]
    return (_pick(rng, kinds), float(rng.integers(-3, 4)) + (0.5 if rng.random() < 0.5 else 0.0))


def _make(M, spec):
    kind, v = spec
    if kind == "tuple":
        return tuple(_make(M, s) for s in v)
    if kind == "dict":
        return {"a": _make(M, v)}
    return {
        "int": lambda: int(v), "float": lambda: float(v), "bool": lambda: v > 0, "np_float32": lambda: np.float32(v),
        "np_float64": lambda: np.float64(v), "np_int32": lambda: np.int32(int(v)), "np_int64": lambda: np.int64(int(v)),
        "np_array": lambda: np.array([v, v + 1]), "tensor": lambda: M.tensor([v, v + 1]),
    }[kind]()  # fmt: skip


def _shape_of(spec):
    kind, v = spec
    if kind == "tuple":
        return ("tuple", tuple(_shape_of(s) for s in v))
    if kind == "dict":
        return ("dict", _shape_of(v))
    return "pair" if kind in ("np_array", "tensor") else "number"


def _flatten_collated(M, out):
    if isinstance(out, (list, tuple)):
        return tuple(a for o in out for a in _flatten_collated(M, o))
    if isinstance(out, dict):
        return tuple(a for k in sorted(out) for a in _flatten_collated(M, out[k]))
    return (_np(M, out).astype(np.float64), _dtype_tag(out))


@generator
def collate_mixed(rng) -> Call:
    first = _sample_spec(rng)
    specs = [first]
    for _ in range(int(rng.integers(1, 4))):
        s = _sample_spec(rng)
        specs.append(s if _shape_of(s) == _shape_of(first) else first if rng.random() < 0.5 else s)

    def run_with(M, collate):
        return _flatten_collated(M, collate([_make(M, s) for s in specs]))

    def ref():
        from torch.utils.data import default_collate

        return run_with(torch(), default_collate)

    from pyframe.utils.data import default_collate as pf_collate

    return Call(f"default_collate({specs})", lambda: run_with(pf, pf_collate), ref if _have_torch() else None)


# ---- setitem with leading size-1 dims, negative indices, the default dtype ----------------------------------

_KEYS = {
    "int": lambda M, n: 0, "slice": lambda M, n: slice(1, 3), "ellipsis": lambda M, n: Ellipsis,
    "none": lambda M, n: None, "mask": lambda M, n: M.tensor([True, False, True, False]), "list": lambda M, n: [0, 2],
    "tensor": lambda M, n: M.tensor([1, 3]), "pair": lambda M, n: ([0, 1], [1, 2]),
    "ellipsis_int": lambda M, n: (..., 1),
}  # fmt: skip


@generator
def setitem_leading_ones(rng) -> Call:
    key_name = _pick(rng, sorted(_KEYS))
    lead = int(rng.integers(1, 4))

    def run_with(M):
        x = M.arange(12.0).reshape(4, 3)
        key = _KEYS[key_name](M, 0)
        target = tuple(x[key].shape)
        x[key] = M.arange(1.0, 1.0 + math.prod(target)).reshape((1,) * lead + target)
        return _np(M, x)

    ref = (lambda: run_with(torch())) if _have_torch() else None
    return Call(f"x[{key_name}] = value with {lead} leading 1s", lambda: run_with(pf), ref)


def _setitem_at(M, i):
    x = M.zeros(3)
    x[M.tensor([i])] = 2.0
    return x


def _index_ops():
    return {
        "gather": lambda M, i: M.gather(M.arange(6.0).reshape(2, 3), 1, M.tensor([[i], [0]])),
        "scatter_": lambda M, i: M.zeros(2, 3).scatter_(1, M.tensor([[i], [0]]), M.ones(2, 1)),
        "scatter_add_": lambda M, i: M.zeros(2, 3).scatter_add_(1, M.tensor([[i], [0]]), M.ones(2, 1)),
        "index_add_": lambda M, i: M.zeros(3).index_add_(0, M.tensor([i]), M.ones(1)),
        "index_copy_": lambda M, i: M.zeros(3).index_copy_(0, M.tensor([i]), M.ones(1)),
        "index_select": lambda M, i: M.index_select(M.arange(3.0), 0, M.tensor([i])),
        "index_fill_": lambda M, i: M.zeros(3).index_fill_(0, M.tensor([i]), 1.0),
        "getitem": lambda M, i: M.arange(3.0)[M.tensor([i])],
        "setitem": _setitem_at,
        "embedding": lambda M, i: M.nn.functional.embedding(M.tensor([i]), M.arange(6.0).reshape(3, 2)),
    }


@generator
def negative_index(rng) -> Call:
    ops = _index_ops()
    name = _pick(rng, sorted(ops))
    i = int(_pick(rng, [-1, -2, -3, -4, 0, 2, 3]))
    ref = (lambda: _np(torch(), ops[name](torch(), i))) if _have_torch() else None
    return Call(f"{name} with index {i}", lambda: _np(pf, ops[name](pf, i)), ref, strict=True)


_NUMBER_PATHS = {
    "full": lambda M: M.full((2,), 0.5), "tensor": lambda M: M.tensor([1, 2.5]),
    "arange": lambda M: M.arange(0, 1, 0.5),
    "linspace": lambda M: M.linspace(0, 1, 3), "int_times_float": lambda M: M.tensor([1]) * 0.5,
    "where": lambda M: M.where(M.tensor([True]), 0.5, 1.5),
    "normal": lambda M: M.distributions.Normal(0.0, 1.0).loc,
    "uniform": lambda M: M.distributions.Uniform(0.0, 1.0).sample(),
    "bernoulli": lambda M: M.distributions.Bernoulli(0.3).probs,
    "xlogy": lambda M: M.xlogy(2.0, M.tensor([3])), "sqrt_int": lambda M: M.sqrt(M.tensor([4])),
}  # fmt: skip


@generator
def default_dtype(rng) -> Call:
    name = _pick(rng, sorted(_NUMBER_PATHS))

    def run_with(M):
        M.set_default_dtype(M.float64)
        try:
            return _dtype_tag(_NUMBER_PATHS[name](M))
        finally:
            M.set_default_dtype(M.float32)

    ref = (lambda: run_with(torch())) if _have_torch() else None
    return Call(f"{name} under set_default_dtype(float64)", lambda: run_with(pf), ref)
