"""Writes at indices: ``scatter_reduce``, ``index_reduce``, ``index_add``, ``index_put``, ``put``,
``masked_scatter``, the ``*_scatter`` ops (a tensor written through a view of a copy), and ``as_strided`` with
the view built on it, ``Tensor.unfold``.

``scatter_reduce`` is one C call (``pf_scatter_reduce``); ``index_reduce`` is the same call with the index
broadcast along the other dims. The rest are index writes of ``index.py`` on flat positions, so their
gradients come from ``__setitem__``'s. Forward and backward side by side."""

from __future__ import annotations

from pyframe import _grad_mode
from pyframe._backend import ShapeError, check, lib
from pyframe._dtype import bool_, int64
from pyframe.autograd.graph import record
from pyframe.ops import elementwise as ew
from pyframe.ops import view as sh
from pyframe.ops._common import zeros_of
from pyframe.ops.creation import arange
from pyframe.ops.index import (
    _as_index,
    gather,
    getitem,
    index_add_,
    nonzero,
    same_dtype,
    scatter,
    scatter_add,
    setitem,
    setitem_accumulate,
)
from pyframe.ops.inplace_view import _check_inside, _positions, _strided_back
from pyframe.ops.view import broadcast_tensors
from pyframe.tensor import Tensor, normalize_dim

__all__ = [
    "scatter_reduce", "index_reduce", "index_add", "index_put", "index_put_", "put", "masked_scatter",
    "diagonal_scatter", "select_scatter", "slice_scatter", "as_strided", "as_strided_copy", "as_strided_scatter",
    "unfold_copy",
]  # fmt: skip

_REDUCE_CODES = {"sum": lib.PF_SUM, "prod": lib.PF_PROD, "mean": lib.PF_MEAN, "amax": lib.PF_MAX, "amin": lib.PF_MIN}


def _reduce_code(op: str, reduce: str, allowed) -> int:
    if reduce not in allowed:
        raise RuntimeError(f"{op}(): reduce argument must be one of {', '.join(map(repr, allowed))}, got {reduce!r}")
    return _REDUCE_CODES[reduce]


def _scatter_reduce_into(out: Tensor, d: int, index: Tensor, src: Tensor, code: int, include_self: bool) -> Tensor:
    check(lib.pf_scatter_reduce(out._d(), d, index._d(), src._d(), code, int(bool(include_self))))
    return out


def scatter_reduce(
    input: Tensor,  # noqa: A002
    dim: int,
    index: Tensor,
    src: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """Same as torch.scatter_reduce: ``src``'s values reduced into a copy of ``input`` at ``index`` along
    ``dim`` with "sum", "prod", "mean", "amax" or "amin"; without ``include_self`` the elements written to
    reduce ``src``'s values alone. Integer means round toward -inf, as torch's."""
    code = _reduce_code("scatter_reduce", reduce, tuple(_REDUCE_CODES))
    same_dtype("scatter_reduce", input, src)
    if input.dtype is bool_:
        raise RuntimeError("scatter_reduce(): bool tensors are not supported")
    index = _as_index(index)
    d = normalize_dim(dim, input.ndim)
    out = _scatter_reduce_into(input.detach().clone(), d, index, src.detach(), code, include_self)
    if _grad_mode.enabled and (input.requires_grad or src.requires_grad):
        x, s, y = input.detach(), src.detach(), out.detach()  # y: not out itself, a cycle through its node

        def backward(g):
            gx, gs = _scatter_reduce_grad(g, x, d, index, s, y, reduce, include_self)
            return (gx if input.requires_grad else None), (gs if src.requires_grad else None)

        record("ScatterReduceBackward0", backward, (input, src), out)
    return out


def scatter_reduce_(
    input: Tensor,  # noqa: A002
    dim: int,
    index: Tensor,
    src: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """Same as torch.Tensor.scatter_reduce_."""
    return ew.write_back(input, scatter_reduce, dim, index, src, reduce, include_self=include_self)


def _scatter_reduce_grad(g, x, d, index, src, out, reduce, include_self):
    """torch's derivatives of scatter_reduce (FunctionsManual's scatter_reduce_backward)."""
    src_shape = src._shape
    if reduce == "sum":
        gx, gs = g, gather(g, d, index)
    elif reduce == "mean":
        n = ew.add(zeros_of(x._shape, g.dtype), 1.0 if include_self else 0.0)
        n = scatter_add(n, d, index, ew.add(zeros_of(index._shape, g.dtype), 1.0))
        n = ew.where(ew.eq(n, 0.0), 1.0, n)
        gx = ew.div(g, n)
        gs = ew.div(gather(g, d, index), gather(n, d, index))
    elif reduce == "prod":
        src = getitem(src, tuple(slice(0, k) for k in index._shape))
        masked_self = ew.where(ew.eq(x, 0.0), 1.0, x)
        masked_self_result = _scatter_reduce_into(masked_self.clone(), d, index, src, lib.PF_PROD, include_self)
        gx = ew.div(ew.mul(g, masked_self_result), masked_self)
        src_zero = ew.eq(src, 0.0)
        zeros = scatter_add(zeros_of(x._shape, x.dtype), d, index, src_zero.to(x.dtype))
        single = ew.logical_and(src_zero, ew.eq(gather(zeros, d, index), 1.0))
        masked_src_result = _scatter_reduce_into(x.clone(), d, index, ew.where(single, 1.0, src), lib.PF_PROD,
                                                 include_self)  # fmt: skip
        gs = ew.where(single, gather(ew.mul(g, masked_src_result), d, index),
                      ew.div(gather(ew.mul(g, out), d, index), ew.where(src_zero, 1.0, src)))  # fmt: skip
    else:  # amax, amin: shared evenly among the values equal to the result
        src = getitem(src, tuple(slice(0, k) for k in index._shape))
        value = gather(out, d, index)
        self_is = ew.eq(x, out).to(g.dtype)
        src_is = ew.eq(src, value).to(g.dtype)
        share = ew.div(g, scatter_add(self_is, d, index, src_is))
        gx, gs = ew.mul(self_is, share), ew.mul(src_is, gather(share, d, index))
    if not include_self:
        gx = scatter(gx, d, index, value=0.0)
    if gs._shape != src_shape:  # src is read over the index's extent only: the rest gets no gradient
        full = zeros_of(src_shape, gs.dtype)
        setitem(full, tuple(slice(0, k) for k in gs._shape), gs)
        gs = full
    return gx, gs


def index_reduce(
    input: Tensor,  # noqa: A002
    dim: int,
    index: Tensor,
    source: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """Same as torch.index_reduce: ``source``'s slices reduced into a copy of ``input`` at the positions
    ``index`` names along ``dim``, with "prod", "mean", "amax" or "amin"."""
    _reduce_code("index_reduce", reduce, ("prod", "mean", "amax", "amin"))
    same_dtype("index_reduce", input, source)
    index = _as_index(index)
    if index.ndim > 1:
        raise IndexError(f"index_reduce(): index must be 0-d or 1-d, got shape {list(index._shape)}")
    if not input.ndim:
        return scatter_reduce(input, 0, index.reshape(()), source.reshape(()), reduce, include_self=include_self)
    d = normalize_dim(dim, input.ndim)
    index = index.reshape(-1)
    want = input._shape[:d] + (index._shape[0],) + input._shape[d + 1 :]
    if source._shape != want:
        raise ShapeError(f"index_reduce(): source has shape {list(source._shape)}, expected {list(want)} (input's "
                         f"shape with the index's length at dim {d})")  # fmt: skip
    spread = sh.expand(index.reshape((-1,) + (1,) * (input.ndim - d - 1)), *source._shape)
    return scatter_reduce(input, d, spread, source, reduce, include_self=include_self)


def index_reduce_(
    input: Tensor,  # noqa: A002
    dim: int,
    index: Tensor,
    source: Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> Tensor:
    """Same as torch.Tensor.index_reduce_."""
    return ew.write_back(input, index_reduce, dim, index, source, reduce, include_self=include_self)


def index_add(input: Tensor, dim: int, index: Tensor, source: Tensor, *, alpha=1) -> Tensor:  # noqa: A002
    """Same as torch.index_add: a copy of ``input`` with ``alpha * source``'s slices added at ``index`` along
    ``dim`` (repeated indices accumulate)."""
    same_dtype("index_add", input, source)
    return index_add_(input.clone(), dim, index, source, alpha)


def _index_key(indices) -> tuple:
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): indices must be a tuple of tensors, got {type(indices).__name__}")
    return tuple(indices)


def index_put_(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.index_put_: ``input[indices] = values``, or ``+=`` with ``accumulate`` (repeated
    positions then add up, where an assignment keeps the last)."""
    key = _index_key(indices)
    if isinstance(values, Tensor):
        same_dtype("index_put_", input, values)
    if accumulate:
        setitem_accumulate(input, key, values)
    else:
        setitem(input, key, values)
    return input


def index_put(input: Tensor, indices, values: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """Same as torch.index_put: ``index_put_`` on a copy."""
    return index_put_(input.clone(), indices, values, accumulate)


def put(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """Same as torch.put: a copy of ``input`` with ``source``'s values written (or added, with
    ``accumulate``) at the flat positions ``index`` (indices in [-numel, 0) wrap)."""
    index = _as_index(index)
    if not isinstance(source, Tensor) or source._numel != index._numel:
        got = source._numel if isinstance(source, Tensor) else type(source).__name__
        raise RuntimeError(f"put(): expected source and index to have the same number of elements, but got "
                           f"{got} and {index._numel}")  # fmt: skip
    if input._numel == 0 and index._numel:
        raise IndexError("put(): cannot put into an empty tensor")
    flat = input.reshape(-1).clone()
    return index_put_(flat, (index.reshape(-1),), source.reshape(-1), accumulate).reshape(input._shape)


def put_(input: Tensor, index: Tensor, source: Tensor, accumulate: bool = False) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.put_."""
    return ew.write_back(input, put, index, source, accumulate)


def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.masked_scatter: a copy of ``input`` (broadcast with ``mask``) whose elements where ``mask``
    is True take ``source``'s values in order (row-major)."""
    if not isinstance(mask, Tensor) or mask.dtype is not bool_:
        raise RuntimeError(f"masked_scatter(): expected mask to be a bool tensor, got {getattr(mask, 'dtype', mask)}")
    same_dtype("masked_scatter", input, source)
    x, m = broadcast_tensors(input, mask)
    coords = nonzero(m)
    count = coords._shape[0]
    if source._numel < count:
        raise RuntimeError(f"masked_scatter(): expected source to have at least {count} elements (the number of "
                           f"True values in mask), got {source._numel}")  # fmt: skip
    out = x.clone()
    if count:
        setitem(out, tuple(coords[:, k] for k in range(m.ndim)) or (m,), source.reshape(-1)[:count])
    return out


def masked_scatter_(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.masked_scatter_ (``mask`` broadcasts to ``input``'s shape)."""
    if isinstance(mask, Tensor) and ew.broadcast_shapes(input._shape, mask._shape) != input._shape:
        raise RuntimeError(f"masked_scatter_(): mask of shape {list(mask._shape)} does not broadcast to the "
                           f"tensor's shape {list(input._shape)}")  # fmt: skip
    return ew.write_back(input, masked_scatter, mask, source)


# ---- a tensor written through a view of a copy ------------------------------------------------------------


def _through_view(op: str, input: Tensor, src: Tensor, view) -> Tensor:
    """A copy of ``input`` with ``src`` written where ``view(input)`` reads: the view's flat positions come
    from the same view of ``arange``, so every ``*_scatter`` op is one indexed write (and its gradient)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): src must be a Tensor, got {type(src).__name__}")
    positions = view(arange(input._numel).reshape(input._shape))
    if src._shape != positions._shape:
        raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self, got {list(src._shape)} "
                           f"and {list(positions._shape)}")  # fmt: skip
    if src.dtype is not input.dtype:
        src = src.to(input.dtype)
    flat = input.reshape(-1).clone()
    setitem(flat, (positions.reshape(-1),), src.reshape(-1))
    return flat.reshape(input._shape)


def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """Same as torch.diagonal_scatter: a copy of ``input`` with ``src`` on the diagonal ``diagonal(offset,
    dim1, dim2)`` reads."""
    return _through_view("diagonal_scatter", input, src, lambda t: t.diagonal(offset, dim1, dim2))


def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:  # noqa: A002
    """Same as torch.select_scatter: a copy of ``input`` with ``src`` at ``index`` along ``dim``."""
    return _through_view("select_scatter", input, src, lambda t: sh.select(t, dim, index))


def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start=None, end=None, step: int = 1) -> Tensor:  # noqa: A002
    """Same as torch.slice_scatter: a copy of ``input`` with ``src`` in the slice ``start:end:step`` of
    ``dim``."""
    d = normalize_dim(dim, input.ndim)
    key = (slice(None),) * d + (slice(start, end, step),)
    return _through_view("slice_scatter", input, src, lambda t: getitem(t, key))


def _strided_positions(size, stride, offset: int) -> Tensor:
    """The storage position of every element of an (size, stride, offset) view, as an int64 tensor of that shape."""
    return _positions(zeros_of((), int64), size, stride, offset).reshape(size)


def _check_strided(op: str, t: Tensor, size, stride, offset: int) -> tuple:
    size, stride = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(size) != len(stride):
        raise RuntimeError(f"{op}(): mismatch in length of strides and shape ({len(stride)} and {len(size)})")
    if any(n < 0 for n in size) or any(s < 0 for s in stride) or offset < 0:
        raise RuntimeError(f"{op}(): size, stride and storage_offset must be non-negative, got {list(size)}, "
                           f"{list(stride)} and {offset}")  # fmt: skip
    _check_inside(t, size, stride, offset, op)
    return size, stride


def as_strided(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:  # noqa: A002
    """Same as torch.as_strided: a view of ``input``'s storage with the given sizes, strides and offset
    (``storage_offset`` defaults to the input's own). Views that overlap get every read's gradient added."""
    offset = input._offset if storage_offset is None else int(storage_offset)
    size, stride = _check_strided("as_strided", input, size, stride, offset)
    shape, strides, base = input._shape, input._strides, input._offset

    def as_strided_back(g):
        return _strided_back(g, size, stride, offset, shape, strides, base)

    return sh.view_op(input, size, stride, offset, as_strided_back)


def as_strided_copy(input: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:  # noqa: A002
    """Same as torch.as_strided_copy: ``as_strided``, copied."""
    return as_strided(input, size, stride, storage_offset).clone()


def as_strided_scatter(input: Tensor, src: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:  # noqa: A002
    """Same as torch.as_strided_scatter: a copy of ``input`` (laid out contiguously) with ``src`` written where
    ``as_strided(size, stride, storage_offset)`` of it reads."""
    offset = 0 if storage_offset is None else int(storage_offset)
    size, stride = _check_strided("as_strided_scatter", input.contiguous(), size, stride, offset)
    return _through_view("as_strided_scatter", input, src,
                         lambda t: getitem(t.reshape(-1), _strided_positions(size, stride, offset)))  # fmt: skip


def unfold(input: Tensor, dimension: int, size: int, step: int) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.unfold: a view of every window of ``size`` elements along ``dimension``, ``step``
    apart, the windows in place of that dim and each window's elements in a new last dim (overlapping windows
    add their gradients)."""
    x = input
    d = normalize_dim(dimension, x.ndim) if x.ndim else normalize_dim(dimension, 1)
    n = x._shape[d] if x.ndim else 1
    if not isinstance(step, int) or step <= 0:
        raise RuntimeError(f"unfold(): step is {step} but must be > 0")
    if not isinstance(size, int) or size < 0 or size > n:
        raise RuntimeError(f"unfold(): maximum size for tensor at dimension {d} is {n} but size is {size}")
    if not x.ndim:
        return as_strided(x, (size,), (1,))
    windows = (n - size) // step + 1
    shape = x._shape[:d] + (windows,) + x._shape[d + 1 :] + (size,)
    strides = x._strides[:d] + (x._strides[d] * step,) + x._strides[d + 1 :] + (x._strides[d],)
    base_shape, base_strides, offset = x._shape, x._strides, x._offset

    def unfold_back(g):
        return _strided_back(g, shape, strides, offset, base_shape, base_strides, offset)

    return sh.view_op(x, shape, strides, offset, unfold_back)


def unfold_copy(input: Tensor, dimension: int, size: int, step: int) -> Tensor:  # noqa: A002
    """Same as torch.unfold_copy: ``Tensor.unfold``, copied."""
    return unfold(input, dimension, size, step).clone()
