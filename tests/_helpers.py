"""Helpers shared by the test modules (imported as ``from tests._helpers import ...``)."""

from __future__ import annotations

import numpy as np

import pyframe

DTYPES = {
    "float32": pyframe.float32,
    "float64": pyframe.float64,
    "float16": pyframe.float16,
    "int64": pyframe.int64,
    "int32": pyframe.int32,
    "bool": pyframe.bool,
}
FLOATS = ("float32", "float64", "float16")
INTS = ("int64", "int32")
ALL = FLOATS + INTS + ("bool",)
NUMERIC = FLOATS + INTS

# (rtol, atol) per result dtype; the core computes float16 in float32 and rounds on store
TOL = {
    "float32": (2e-5, 1e-6),
    "float64": (1e-12, 1e-13),
    "float16": (2e-3, 2e-3),
}


def pf(arr: np.ndarray) -> pyframe.Tensor:
    """A pyframe tensor holding a copy of ``arr`` in the same dtype."""
    return pyframe.tensor(np.asarray(arr, order="C"))


def npy(t: pyframe.Tensor) -> np.ndarray:
    """A NumPy copy of a pyframe tensor (independent of pyframe.numpy's sharing)."""
    assert isinstance(t, pyframe.Tensor), f"expected a pyframe.Tensor, got {type(t).__name__}"
    return np.array(t.numpy(), copy=True)


def assert_matches(got: pyframe.Tensor, expected, dtype: str, *, rtol=None, atol=None, what: str = "") -> None:
    """``got`` has dtype ``dtype``, ``expected``'s shape and its values (within the dtype's tolerance).

    ``expected`` is computed in float64 (or exactly, for integers and bools) by the caller."""
    assert isinstance(got, pyframe.Tensor), f"{what}: expected a Tensor, got {type(got).__name__}"
    assert got.dtype == DTYPES[dtype], f"{what}: dtype {got.dtype} != expected {dtype}"
    expected = np.asarray(expected)
    assert tuple(got.shape) == expected.shape, f"{what}: shape {tuple(got.shape)} != {expected.shape}"
    g = npy(got)
    if dtype in TOL:
        r, a = TOL[dtype]
        r = r if rtol is None else rtol
        a = a if atol is None else atol
        # the reference is rounded to the result dtype first, as the library must round its result
        ref = expected.astype(np.float64).astype(DTYPES[dtype].np).astype(np.float64)
        np.testing.assert_allclose(g.astype(np.float64), ref, rtol=r, atol=a, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(g, expected.astype(DTYPES[dtype].np), err_msg=what)


# the float ranges of the named input domains (random_array, tests/ops_db.py)
RANGES = {
    "real": (-3.0, 3.0), "pos": (0.1, 4.0), "unit": (-0.95, 0.95), "exp": (-2.0, 2.0), "above_one": (1.1, 4.0),
    "prob": (0.05, 0.95),
}  # fmt: skip


def random_array(rng: np.random.Generator, shape, dtype: str, domain: str = "real") -> np.ndarray:
    """Random values of ``dtype`` in a domain: real, pos (> 0), unit (-1, 1), prob (0, 1), above_one (> 1), exp (-2, 2),
    small ints, nonzero, quarter (multiples of 0.25)."""
    np_dt = DTYPES[dtype].np
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype in INTS:
        lo, hi = {"pos": (1, 6), "nonzero": (1, 6), "exp": (0, 4), "unit": (-1, 2), "above_one": (2, 6)}.get(
            domain, (-6, 7)
        )
        a = rng.integers(lo, hi, size=shape)
        if domain == "nonzero":
            a = a * rng.choice([-1, 1], size=shape)
        return a.astype(np_dt)
    if domain == "nonzero":
        a = rng.choice([-2.5, -2.0, -1.5, -0.5, 0.5, 1.5, 2.0, 2.5], size=shape)
    elif domain == "quarter":  # exact multiples of 0.25: ties for round, exact floor/remainder
        a = rng.integers(-16, 17, size=shape) / 4.0
    else:
        a = rng.uniform(*RANGES.get(domain, RANGES["real"]), size=shape)
    return np.asarray(a).astype(np_dt)


def t64(arr, requires_grad=False) -> pyframe.Tensor:
    return pyframe.tensor(np.asarray(arr, dtype=np.float64), requires_grad=requires_grad)


def fd_gradcheck(fn, *arrays, eps=1e-6, tol=1e-6, seed=0):
    """The analytic gradient of sum(fn(*xs) * w) (w random) against central differences, in float64."""
    xs = [t64(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    w = np.random.default_rng(seed).standard_normal(tuple(out.shape))
    (out * t64(w)).sum().backward()
    for k, a in enumerate(arrays):
        num = np.zeros_like(a, dtype=np.float64)
        it = np.nditer(a, flags=["multi_index"])
        for _ in it:
            i = it.multi_index
            hi = [np.array(b, dtype=np.float64) for b in arrays]
            lo = [np.array(b, dtype=np.float64) for b in arrays]
            hi[k][i] += eps
            lo[k][i] -= eps
            f = lambda args: float((fn(*[t64(b) for b in args]).numpy() * w).sum())  # noqa: E731
            num[i] = (f(hi) - f(lo)) / (2 * eps)
        np.testing.assert_allclose(xs[k].grad.numpy(), num, rtol=tol, atol=tol)


def log_module_hooks(m, order: list) -> None:
    """Registers ``m``'s forward pre, forward, full backward pre and full backward hooks, each appending its
    name (pre, fwd, bpre, bwd) to ``order``."""
    m.register_forward_pre_hook(lambda *a: order.append("pre"))
    m.register_forward_hook(lambda *a: order.append("fwd"))
    m.register_full_backward_pre_hook(lambda *a: order.append("bpre"))
    m.register_full_backward_hook(lambda *a: order.append("bwd"))


def arr(t) -> np.ndarray:
    """A tensor's values (detached) as NumPy, or ``np.asarray`` of anything else."""
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def allclose(a, b, **kw) -> bool:
    """``np.allclose`` of two tensors or arrays."""
    return bool(np.allclose(arr(a), arr(b), **kw))
