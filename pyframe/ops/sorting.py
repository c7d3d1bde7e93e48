"""Sorting, selection and scans along a dim, each one C call (core_c/src/sort.c, scan.c):
sort, argsort, msort, topk, kthvalue, unique, cumsum, cumprod. Forward and backward side by side."""

from __future__ import annotations

from typing import NamedTuple

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError, check, lib
from pyframe._dtype import int64
from pyframe.autograd.graph import record
from pyframe.ops import elementwise as ew
from pyframe.ops._common import _tensor_arg, zeros_of
from pyframe.ops.creation import arange, ones
from pyframe.ops.index import index_select, nonzero, scatter_add_
from pyframe.ops.join import cat
from pyframe.ops.scan import cumsum
from pyframe.tensor import Tensor, empty_tensor, normalize_dim

__all__ = [
    "sort", "argsort", "msort", "topk", "kthvalue", "unique",
]  # fmt: skip


class _ValuesIndices(NamedTuple):
    values: Tensor
    indices: Tensor

    def __repr__(self) -> str:  # torch.return_types' layout
        return f"pyframe.return_types.{self._kind}(\nvalues={self.values!r},\nindices={self.indices!r})"


class SortResult(_ValuesIndices):
    __slots__ = ()
    _kind = "sort"


class TopkResult(_ValuesIndices):
    __slots__ = ()
    _kind = "topk"


class KthvalueResult(_ValuesIndices):
    __slots__ = ()
    _kind = "kthvalue"


def _select(x: Tensor, dim: int, k: int, largest: bool, name: str) -> tuple[Tensor, Tensor]:
    """The k largest (or smallest) along dim, in order: values and int64 indices, with gradient."""
    d = normalize_dim(dim, x.ndim)
    shape = list(x._shape) or [1]
    n = shape[d]
    if isinstance(k, Tensor):
        k = k.item()
    if not isinstance(k, int) or isinstance(k, bool):
        raise TypeError(f"{name}(): k must be an int, got {type(k).__name__}")
    if not 0 <= k <= n:
        op = name.removesuffix("Backward0").lower()
        raise ShapeError(f"{op}(): k = {k} is out of range for dim {dim} of size {n} (allowed: 0 <= k <= {n})")
    src = x if x._contig else x.contiguous()
    if not x._shape:
        src = src.reshape(1)
    shape[d] = k
    values = empty_tensor(tuple(shape), x.dtype)
    indices = empty_tensor(tuple(shape), int64)
    check(lib.pf_topk(src._d(), d, k, int(largest), values._d(), indices._d()))
    if not x._shape:
        values, indices = values.reshape(()), indices.reshape(())
    if x.requires_grad and _grad_mode.enabled:
        idx = indices if x._shape else indices.reshape(1)

        def backward(g):
            g = g if x._shape else g.reshape(1)
            out = _scatter_into(zeros_of(tuple(list(x._shape) or [1]), g.dtype), d, idx, g)
            return (out if x._shape else out.reshape(()),)

        record(name, backward, (x,), values)
    return values, indices


def _scatter_into(z: Tensor, dim: int, index: Tensor, g: Tensor) -> Tensor:
    return scatter_add_(z, dim, index, g)


def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> SortResult:  # noqa: A002
    """Same as torch.sort; always stable (equal values keep their order), NaN sorts as the largest value."""
    x = _tensor_arg(input, "sort")
    n = x._shape[normalize_dim(dim, x.ndim)] if x._shape else 1
    values, indices = _select(x, dim, n, bool(descending), "SortBackward0")
    return SortResult(values, indices)


def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:  # noqa: A002
    """Same as torch.argsort (stable)."""
    return sort(input, dim, descending).indices


def msort(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.msort: sorted along dim 0."""
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int | None = None, largest: bool = True, sorted: bool = True) -> TopkResult:  # noqa: A002
    """Same as torch.topk. The k values always come in order (``sorted=False`` is allowed and gives the same);
    among equal values the lower index comes first."""
    x = _tensor_arg(input, "topk")
    if x.dtype is _dtype.bool_:
        raise TypeError("topk(): bool tensors are not supported (as torch); convert with .to(pyframe.int64)")
    values, indices = _select(x, -1 if dim is None else dim, k, bool(largest), "TopkBackward0")
    return TopkResult(values, indices)


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> KthvalueResult:  # noqa: A002
    """Same as torch.kthvalue: the k-th smallest value (1-based) along dim and its index."""
    x = _tensor_arg(input, "kthvalue")
    if x.dtype is _dtype.bool_:
        raise TypeError("kthvalue(): bool tensors are not supported (as torch); convert with .to(pyframe.int64)")
    d = normalize_dim(dim, x.ndim)
    n = x._shape[d] if x._shape else 1
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= n:
        raise ShapeError(f"kthvalue(): k = {k!r} is out of range for dim {dim} of size {n} (allowed: 1 <= k <= {n})")
    values, indices = _select(x, d, k, False, "KthvalueBackward0")
    if not x._shape:
        return KthvalueResult(values, indices)
    values, indices = values.narrow(d, k - 1, 1), indices.narrow(d, k - 1, 1)
    if not keepdim:
        values, indices = values.squeeze(d), indices.squeeze(d)
    return KthvalueResult(values, indices)


def unique(
    input: Tensor,  # noqa: A002
    sorted: bool = True,  # noqa: A002
    return_inverse: bool = False,
    return_counts: bool = False,
    dim: int | None = None,
):
    """Same as torch.unique over the flattened input: the sorted distinct values, and on request
    the index of each input element in them (shaped as the input) and each value's count.

    Differs: ``dim`` is not supported (a clear ValueError); the output is always sorted."""
    x = _tensor_arg(input, "unique")
    if dim is not None:
        raise ValueError("unique(): dim is not supported; call it on the flattened tensor or per slice")
    flat = x.detach().reshape(-1)
    values, perm = sort(flat)
    n = values._numel
    if n == 0:
        out = [values]
        if return_inverse:
            out.append(empty_tensor(x._shape, int64))
        if return_counts:
            out.append(empty_tensor((0,), int64))
        return out[0] if len(out) == 1 else tuple(out)
    # a new value starts wherever the sorted value differs from its predecessor (NaNs are each distinct, as torch)
    is_start = cat([ones(1, dtype=_dtype.bool_), ew.ne(values[1:], values[:-1])])
    start_pos = nonzero(is_start).reshape(-1)
    result = [index_select(values, 0, start_pos)]
    if return_inverse:
        group = ew.sub(cumsum(is_start, 0), 1)  # group of each sorted element
        inverse = empty_tensor((n,), int64)
        check(lib.pf_index_copy(inverse._d(), 0, perm._d(), group._d()))
        result.append(inverse.reshape(x._shape))
    if return_counts:
        ends = cat([start_pos[1:], arange(n, n + 1)])
        result.append(ew.sub(ends, start_pos))
    return result[0] if len(result) == 1 else tuple(result)


# ---- scans ------------------------------------------------------------------------------------
