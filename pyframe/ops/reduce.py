"""Reductions and softmax. The reduced dims are moved last by a strided view (no copy),
so one C entry point serves any set of dims."""

from __future__ import annotations

import math
from typing import NamedTuple

from pyframe._backend import ShapeError, check, ffi, lib
from pyframe._dtype import as_dtype, bool_, float32, int64
from pyframe.ops import elementwise as ew
from pyframe.ops._common import cast
from pyframe.tensor import Tensor, empty_tensor, normalize_dim

__all__ = [
    "sum", "prod", "mean", "var", "std", "max", "min", "amax", "amin", "argmax", "argmin", "any", "all", "norm",
    "logsumexp", "softmax", "log_softmax",
]  # fmt: skip


class ValuesIndices(NamedTuple):
    """``max(dim)``/``min(dim)`` result, as torch.return_types.max."""

    values: Tensor
    indices: Tensor

    def __repr__(self) -> str:  # torch.return_types.max's layout
        name = "min" if isinstance(self, MinResult) else "max"
        return f"pyframe.return_types.{name}(\nvalues={self.values!r},\nindices={self.indices!r})"


class MinResult(ValuesIndices):
    """``min(dim)``'s result (a ValuesIndices that prints as torch.return_types.min)."""

    __slots__ = ()


def _dims(x: Tensor, dim) -> list:
    if dim is None:
        return list(range(x.ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    norm = [normalize_dim(d, x.ndim) for d in dims]
    if len(set(norm)) != len(norm):
        raise ShapeError(f"dim {list(dims)} appears multiple times in the list of dims")
    return sorted(norm) if x.ndim else []


def _reduce(
    op: int, x: Tensor, dim, keepdim: bool, out_dtype, want_values=True, want_index=False, correction: float = 0.0
):
    if not isinstance(x, Tensor):
        raise TypeError(f"expected a Tensor, got {type(x).__name__}")
    dims = _dims(x, dim)
    keep = [i for i in range(x.ndim) if i not in dims]
    moved = x._view(tuple(x._shape[i] for i in keep + dims), tuple(x._strides[i] for i in keep + dims))
    out_shape = tuple(x._shape[i] for i in keep)
    values = empty_tensor(out_shape, out_dtype) if want_values else None
    index = empty_tensor(out_shape, int64) if want_index else None
    check(
        lib.pf_reduce(
            op,
            moved._d(),
            len(dims),
            values._d() if values is not None else ffi.NULL,
            index._d() if index is not None else ffi.NULL,
            correction,
        )
    )
    if keepdim:
        kept = tuple(1 if i in dims else n for i, n in enumerate(x._shape))
        values = values.reshape(kept) if values is not None else None
        index = index.reshape(kept) if index is not None else None
    return values, index


def _full_if_empty(dim):
    """torch.sum/mean/var/std/norm reduce every dim for ``dim=()`` (any/all reduce none)."""
    return None if isinstance(dim, (tuple, list)) and len(dim) == 0 else dim


def _sum_dtype(x: Tensor, dtype):
    if dtype is not None:
        return as_dtype(dtype)
    return x.dtype if x.dtype.is_floating_point else int64


def sum(x: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:  # noqa: A001 - PyTorch's name
    """Same as torch.sum; integer and bool inputs sum to int64."""
    dt = _sum_dtype(x, dtype)
    if dt is not x.dtype and dt.is_floating_point:
        x = cast(x, dt)
    return _reduce(lib.PF_SUM, x, _full_if_empty(dim), keepdim, dt)[0]


def prod(x: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    return _reduce(lib.PF_PROD, x, dim, keepdim, _sum_dtype(x, dtype))[0]


def _require_float(x: Tensor, name: str, dtype=None) -> Tensor:
    if dtype is not None:
        return cast(x, as_dtype(dtype)) if as_dtype(dtype) is not x.dtype else x
    if not x.dtype.is_floating_point:
        raise TypeError(
            f"{name}(): could not infer output dtype. Input dtype must be a floating point dtype, got {x.dtype.name}"
        )
    return x


def mean(x: Tensor, dim=None, keepdim: bool = False, dtype=None) -> Tensor:
    x = _require_float(x, "mean", dtype)
    return _reduce(lib.PF_MEAN, x, _full_if_empty(dim), keepdim, x.dtype)[0]


def var(x: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
    """Same as torch.var: ``correction`` (default 1, Bessel) or the older ``unbiased`` flag."""
    if isinstance(unbiased, bool) is False and unbiased is not None:
        raise TypeError("var: unbiased must be a bool")
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    x = _require_float(x, "var")
    return _reduce(lib.PF_VAR, x, _full_if_empty(dim), keepdim, x.dtype, correction=float(correction))[0]


def std(x: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *, correction=None) -> Tensor:
    return ew.sqrt(var(x, dim, unbiased, keepdim, correction=correction))


def _extreme(op: int, name: str, x: Tensor, dim=None, keepdim: bool = False):
    if isinstance(dim, Tensor):  # max(a, b) is maximum
        return ew.maximum(x, dim) if name == "max" else ew.minimum(x, dim)
    if dim is None:
        if x._numel == 0:
            raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        return _reduce(op, x, None, False, x.dtype)[0]
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}(dim) takes a single dim; use amax/amin for several")
    values, index = _reduce(op, x, dim, keepdim, x.dtype, want_index=True)
    return MinResult(values, index) if name == "min" else ValuesIndices(values, index)


def max(x: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    """Same as torch.max: the overall maximum, or (values, indices) along ``dim``."""
    return _extreme(lib.PF_MAX, "max", x, dim, keepdim)


def min(x: Tensor, dim=None, keepdim: bool = False):  # noqa: A001
    return _extreme(lib.PF_MIN, "min", x, dim, keepdim)


def amax(x: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    return _reduce(lib.PF_MAX, x, None if dim == () else dim, keepdim, x.dtype)[0]


def amin(x: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    return _reduce(lib.PF_MIN, x, None if dim == () else dim, keepdim, x.dtype)[0]


def argmax(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Same as torch.argmax; with dim=None, an index into the flattened tensor."""
    if dim is None:
        out = _reduce(lib.PF_ARGMAX, x.reshape(-1), 0, False, None, False, True)[1]
        return out.reshape((1,) * x.ndim) if keepdim else out  # torch: keepdim keeps every dim as 1
    return _reduce(lib.PF_ARGMAX, x, dim, keepdim, None, False, True)[1]


def argmin(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    if dim is None:
        out = _reduce(lib.PF_ARGMIN, x.reshape(-1), 0, False, None, False, True)[1]
        return out.reshape((1,) * x.ndim) if keepdim else out
    return _reduce(lib.PF_ARGMIN, x, dim, keepdim, None, False, True)[1]


def any(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return _reduce(lib.PF_ANY, x, dim, keepdim, bool_)[0]


def all(x: Tensor, dim=None, keepdim: bool = False) -> Tensor:  # noqa: A001
    return _reduce(lib.PF_ALL, x, dim, keepdim, bool_)[0]


def norm(x: Tensor, p="fro", dim=None, keepdim: bool = False) -> Tensor:
    """Same as torch.norm for vector norms: p = 2/"fro", 1, inf, -inf, 0 or any positive number."""
    if not x.dtype.is_floating_point:
        raise TypeError(f"norm(): input dtype should be floating point, got {x.dtype.name}")
    a = ew.abs(x)
    if p in ("fro", 2, 2.0):
        return ew.sqrt(sum(ew.mul(x, x), dim, keepdim))
    if p == 1:
        return sum(a, dim, keepdim)
    if p == math.inf:
        return amax(a, () if dim is None else dim, keepdim)
    if p == -math.inf:
        return amin(a, () if dim is None else dim, keepdim)
    if p == 0:
        return sum(cast(ew.ne(x, 0), x.dtype), dim, keepdim)
    if isinstance(p, (int, float)) and p > 0:
        return ew.pow(sum(ew.pow(a, float(p)), dim, keepdim), 1.0 / p)
    raise ValueError(f"norm: unsupported p={p!r}; use 'fro', a positive number, inf or -inf")


def logsumexp(x: Tensor, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(x))) along dim, computed stably."""
    m = amax(x, dim, True)
    m = ew.where(ew.isfinite(m), m, ew.scalar_tensor(0.0, x.dtype))
    out = ew.add(ew.log(sum(ew.exp(ew.sub(x, m)), dim, True)), m)
    return out if keepdim else out.squeeze(dim)


def _softmax(x: Tensor, dim: int, log: bool, dtype=None) -> Tensor:
    if dtype is not None:
        x = cast(x, as_dtype(dtype))
    elif not x.dtype.is_floating_point:
        raise TypeError(f"{'log_softmax' if log else 'softmax'}: expected a floating point input, got {x.dtype.name}")
    d = normalize_dim(dim, x.ndim)
    out = empty_tensor(x._shape, x.dtype)
    order = [i for i in range(x.ndim) if i != d] + ([d] if x.ndim else [])

    def last(t: Tensor) -> Tensor:
        return t._view(tuple(t._shape[i] for i in order), tuple(t._strides[i] for i in order))

    check(lib.pf_softmax(last(x)._d(), last(out)._d(), int(log)))
    return out


def softmax(x: Tensor, dim: int, dtype=None) -> Tensor:
    """Same as torch.softmax."""
    return _softmax(x, dim, False, dtype)


def log_softmax(x: Tensor, dim: int, dtype=None) -> Tensor:
    """Same as torch.log_softmax."""
    return _softmax(x, dim, True, dtype)


_ = float32
