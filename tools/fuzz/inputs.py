"""Random inputs for the fuzz walk: shapes, dtypes, values and memory layouts.

Every input is made twice from one set of values: a pyframe tensor (contiguous, transposed,
sliced with a step, expanded, or from NumPy) and the NumPy array it should equal, which the
reference computations use.
"""

from __future__ import annotations

import math

import numpy as np

import pyframe as pf

DTYPES = (pf.float32, pf.float64, pf.float16, pf.int64, pf.int32, pf.bool)
FLOATS = (pf.float32, pf.float64, pf.float16)
MAX_NUMEL = 2048  # per input: the walk is about many calls, not big ones
SPECIAL_FLOATS = (math.nan, math.inf, -math.inf, 0.0, -0.0, 1e30, -1e-30, 65504.0, 3e38)
# Python ints that do not fit some dtype, and bad values of every other kind: a clean refusal is the answer
HOSTILE_SCALARS = (2**31, -(2**31) - 1, 2**40, 2**63, -(2**63) - 1, 2**70, math.nan, math.inf, -math.inf, 1e300)
BAD_ARGS = (None, "x", 1.5, -1, 2**40, 2**63, -(2**70), [], (), object(), math.nan, True)


class Case:
    """One input: the pyframe tensor, its NumPy twin, and how it was laid out (for the report)."""

    __slots__ = ("t", "a", "layout")

    def __init__(self, t: pf.Tensor, a: np.ndarray, layout: str):
        self.t, self.a, self.layout = t, a, layout

    def __repr__(self) -> str:
        return f"<{self.t.dtype.name}{list(self.t.shape)} {self.layout}>"


def shape(rng: np.random.Generator, ndim: int | None = None) -> tuple:
    """Up to 8 dims, sizes in {0, 1, 2, 3, 5}, shrunk until the tensor is small."""
    if ndim is None:
        ndim = int(rng.choice([0, 1, 1, 2, 2, 3, 3, 4, 5, 8]))
    dims = [int(rng.choice([0, 1, 1, 2, 2, 3, 3, 5])) if rng.random() < 0.97 else 0 for _ in range(ndim)]
    while math.prod(dims) > MAX_NUMEL:
        dims[int(np.argmax(dims))] //= 2
    return tuple(dims)


def broadcast_partner(rng: np.random.Generator, s: tuple) -> tuple:
    """A shape that broadcasts with ``s``: some dims set to 1, some leading dims dropped."""
    out = [1 if rng.random() < 0.3 else n for n in s]
    drop = int(rng.integers(0, len(out) + 1)) if rng.random() < 0.3 else 0
    return tuple(out[drop:])


def values(rng: np.random.Generator, s: tuple, dt: pf.dtype) -> np.ndarray:
    n = math.prod(s)
    if dt is pf.bool:
        return (rng.random(n) < 0.5).reshape(s)
    if dt.is_floating_point:
        v = rng.standard_normal(n) * float(rng.choice([1.0, 10.0, 1000.0]))
        if n and rng.random() < 0.3:  # NaN, inf, signed zeros and huge values in a few places
            k = int(rng.integers(1, min(n, 4) + 1))
            v[rng.integers(0, n, k)] = rng.choice(SPECIAL_FLOATS, k)
        with np.errstate(over="ignore"):
            return v.astype(dt.np.type).reshape(s)
    info = np.iinfo(dt.np)
    v = rng.integers(-50, 50, n)
    if n and rng.random() < 0.1:  # the dtype's extremes
        v[rng.integers(0, n)] = rng.choice([info.min, info.max])
    return v.astype(dt.np.type).reshape(s)


def case(rng: np.random.Generator, s: tuple | None = None, dt: pf.dtype | None = None) -> Case:
    """A tensor of shape ``s`` in one of the layouts pyframe must treat like a contiguous one."""
    s = shape(rng) if s is None else s
    dt = DTYPES[int(rng.integers(len(DTYPES)))] if dt is None else dt
    a = values(rng, s, dt)
    layout = str(rng.choice(["contiguous", "transposed", "stepped", "expanded", "numpy", "negative-stride"]))
    if layout == "transposed" and len(s) >= 2:
        perm = list(rng.permutation(len(s)))
        base = np.ascontiguousarray(np.transpose(a, np.argsort(perm)))
        t = pf.tensor(base).permute(*[int(p) for p in perm])
        return Case(t, a, f"permuted {perm}")
    if layout == "stepped" and s:
        big = np.zeros((s[0] * 2,) + s[1:], dtype=a.dtype)
        big[::2] = a
        return Case(pf.tensor(big)[::2], a, "sliced [::2]")
    if layout == "expanded" and s:
        d = int(rng.integers(len(s)))
        small = a.take([0], axis=d) if s[d] else a
        a = np.broadcast_to(small, s).copy()
        return Case(pf.tensor(small).expand(*s), a, f"expanded along dim {d}")
    if layout == "numpy":
        return Case(pf.from_numpy(a.copy()), a, "from_numpy")
    if layout == "negative-stride" and s:
        rev = a[::-1].copy()[::-1]  # a NumPy view with a negative stride: pf.tensor copies it
        return Case(pf.tensor(rev), a, "tensor(negative-stride array)")
    return Case(pf.tensor(a.copy()), a, "contiguous")


def float_case(rng: np.random.Generator, s: tuple | None = None) -> Case:
    return case(rng, s, FLOATS[int(rng.integers(len(FLOATS)))])


def dim(rng: np.random.Generator, ndim: int) -> int:
    """A valid dim most of the time, an out-of-range one sometimes."""
    if rng.random() < 0.1:
        return int(rng.choice([ndim, -ndim - 1, 2**40, -(2**63)]))
    n = max(ndim, 1)
    return int(rng.integers(-n, n))


def bad(rng: np.random.Generator):
    return BAD_ARGS[int(rng.integers(len(BAD_ARGS)))]


def scalar(rng: np.random.Generator, dt: pf.dtype):
    """A Python number for ``dt``: usually fitting, sometimes hostile."""
    if rng.random() < 0.15:
        return HOSTILE_SCALARS[int(rng.integers(len(HOSTILE_SCALARS)))]
    if dt is pf.bool:
        return bool(rng.random() < 0.5)
    if dt.is_floating_point:
        return float(rng.choice([0.5, -2.0, 3.25, math.nan, math.inf, 0.0]))
    return int(rng.integers(-5, 6))
