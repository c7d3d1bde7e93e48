"""Sorting, selection and search along a dim, each one C call (core_c/src/sort.c): sort, argsort, msort, topk,
kthvalue, unique, unique_consecutive, mode, searchsorted, bucketize, isin. Forward and backward side by side."""

from __future__ import annotations

import math
from collections import namedtuple
from typing import NamedTuple

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError, check, lib
from pyframe._dtype import as_number, int64
from pyframe.autograd.graph import record
from pyframe.ops import elementwise as ew
from pyframe.ops._common import _tensor_arg, zeros_of
from pyframe.ops.creation import arange, ones
from pyframe.ops.index import index_select, nonzero, scatter_add_
from pyframe.ops.join import cat
from pyframe.ops.scan import cumsum
from pyframe.tensor import Tensor, empty_tensor, normalize_dim

__all__ = [
    "sort", "argsort", "msort", "topk", "kthvalue", "unique", "searchsorted", "bucketize", "isin",
    "unique_consecutive", "mode",
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
    k = as_number(k)
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


# ---- searching, counting --------------------------------------------------------------------------------


ModeResult = namedtuple("mode", ["values", "indices"])


def searchsorted(
    sorted_sequence: Tensor,
    input,  # noqa: A002
    *,
    out_int32: bool = False,
    right: bool = False,
    side: str | None = None,
    sorter: Tensor | None = None,
) -> Tensor:
    """Same as torch.searchsorted: for each value of ``input``, the index in ``sorted_sequence`` (ascending along
    its last dim; 1-d, or with leading dims equal to ``input``'s) where it would be inserted keeping the order:
    before equal elements, or after them with ``right=True`` / ``side="right"``. ``sorter`` sorts an unsorted
    sequence. A NaN value goes after everything, as torch's."""
    seq = _tensor_arg(sorted_sequence, "searchsorted")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side!r}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")  # fmt: skip
        right = side == "right"
    scalar = not isinstance(input, Tensor)
    values = ew.as_tensor_of(input, ew.result_type(seq, input)) if scalar else input
    if seq.ndim == 0 or (seq.ndim > 1 and (values.ndim != seq.ndim or values._shape[:-1] != seq._shape[:-1])):
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                           f"dimensions of boundaries tensor and input value tensor must match, but we got "
                           f"boundaries {list(seq._shape)} and input values {list(values._shape)}")  # fmt: skip
    if sorter is not None:
        if sorter._shape != seq._shape or sorter.dtype is not int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be an int64 tensor of the boundaries' shape "
                               f"{list(seq._shape)}, got {sorter.dtype.name} {list(sorter._shape)}")  # fmt: skip
        seq = seq.gather(-1, sorter)
    dt = ew.result_type(seq, values)
    seq = seq.to(dt).contiguous().reshape(1 if seq.ndim == 1 else math.prod(seq._shape[:-1]), seq._shape[-1])
    rows = seq._shape[0]
    if values._numel == 0:
        return empty_tensor(values._shape, _dtype.int32 if out_int32 else int64)
    flat = values.to(dt).contiguous().reshape(rows, -1)
    out = empty_tensor(flat._shape, _dtype.int32 if out_int32 else int64)
    check(lib.pf_searchsorted(seq._d(), flat._d(), int(bool(right)), out._d()))
    return out.reshape(values._shape)


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:  # noqa: A002
    """Same as torch.bucketize: ``searchsorted`` of ``input``'s values in the 1-d ``boundaries``."""
    if not isinstance(boundaries, Tensor) or boundaries.ndim != 1:
        got = boundaries.ndim if isinstance(boundaries, Tensor) else type(boundaries).__name__
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got dim({got})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Same as torch.isin: whether each element of ``elements`` is in ``test_elements`` (either may be a number):
    the test elements sorted once, then one binary search per element."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin(): expected elements or test_elements to be a Tensor, got two numbers")
    dt = ew.result_type(elements, test_elements)
    x = ew.as_tensor_of(elements, dt) if not isinstance(elements, Tensor) else elements.to(dt)
    t = ew.as_tensor_of(test_elements, dt) if not isinstance(test_elements, Tensor) else test_elements.to(dt)
    table = sort(t.detach().reshape(-1)).values
    if table._numel == 0:
        found = ew.ne(zeros_of(x._shape, _dtype.int32), 0)
    else:
        pos = ew.clamp(searchsorted(table, x.detach()), max=table._numel - 1)
        found = ew.eq(table[pos], x.detach())
    return ew.logical_not(found) if invert else found


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False, dim=None):  # noqa: A002
    """Same as torch.unique_consecutive: the first element of every run of equal consecutive elements (of the
    flattened input, or slices along ``dim``), with on request each element's run number and each run's
    length. NaNs are each their own run, as torch."""
    x = _tensor_arg(input, "unique_consecutive")
    if dim is None:
        rows, n = x.detach().reshape(-1, 1), x._numel
    else:
        d = normalize_dim(dim, x.ndim)
        n = x._shape[d]
        rows = x.detach().movedim(d, 0).reshape(n, -1)
    if n == 0:
        values = x.detach().reshape(-1) if dim is None else x.detach()
        starts, groups = empty_tensor((0,), int64), empty_tensor((0,), int64)
    else:
        differs = ew.ne(rows[1:], rows[:-1]).any(1) if rows._shape[1] else zeros_of((n - 1,), _dtype.bool_)
        is_start = cat([ones(1, dtype=_dtype.bool_), differs])
        starts = nonzero(is_start).reshape(-1)
        groups = ew.sub(cumsum(is_start, 0), 1)
        values = index_select(x.detach().reshape(-1), 0, starts) if dim is None else index_select(x, d, starts)
    result = [values]
    if return_inverse:
        result.append(groups.reshape(x._shape) if dim is None else groups)
    if return_counts:
        result.append(ew.sub(cat([starts[1:], arange(n, n + 1)]), starts) if n else empty_tensor((0,), int64))
    return result[0] if len(result) == 1 else tuple(result)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False):  # noqa: A002
    """Same as torch.mode: the most frequent value along ``dim`` (the smallest of equally frequent ones) and
    the index of its last occurrence, as a ``(values, indices)`` named tuple."""
    x = _tensor_arg(input, "mode")
    d = normalize_dim(dim, x.ndim)
    if not x.ndim:
        return ModeResult(x.clone(), zeros_of((), int64))
    moved = x.detach().movedim(d, -1).contiguous()
    rows = moved.reshape(-1, x._shape[d])
    values = empty_tensor((rows._shape[0],), x.dtype)
    indices = empty_tensor((rows._shape[0],), int64)
    check(lib.pf_mode(rows._d(), values._d(), indices._d()))
    shape = moved._shape[:-1]
    values, indices = values.reshape(shape), indices.reshape(shape)
    if x.requires_grad and _grad_mode.enabled:
        index = indices.unsqueeze(d)
        record("ModeBackward0", lambda g: (scatter_add_(zeros_of(x._shape, g.dtype), d, index, g.unsqueeze(d)),),
               (x,), values)  # fmt: skip
    if keepdim:
        values, indices = values.unsqueeze(d), indices.unsqueeze(d)
    return ModeResult(values, indices)
