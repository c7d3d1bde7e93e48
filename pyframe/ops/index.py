"""Indexing: basic indexing makes views; integer-array and mask indexing gather in C."""

from __future__ import annotations

import math
import warnings

import numpy as np

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError, check, lib
from pyframe._dtype import bool_, int32, int64
from pyframe.autograd.graph import record
from pyframe.ops import elementwise as ew
from pyframe.ops import join as jn
from pyframe.ops import view as sh
from pyframe.ops._common import (
    broadcast_shapes,
    cast,
    scalar_tensor,
    unaliased,
    zeros_of,
)
from pyframe.ops.creation import arange
from pyframe.ops.view import broadcast_tensors, contiguous, embed, expand, permute, view_op
from pyframe.tensor import Tensor, empty_tensor, from_numpy, normalize_dim

__all__ = [
    "gather", "index_select", "nonzero", "scatter_add", "take_along_dim", "masked_select", "scatter", "index_fill",
    "index_copy", "tril_indices", "triu_indices", "triu", "tril", "argwhere", "nonzero_static", "unravel_index",
]  # fmt: skip


def refuse_negative(op: str, index: Tensor, dim: int, size: int) -> None:
    """torch's rule for negative indices, one place for every index op: the ops that take an index tensor
    along a dim (gather, scatter, scatter_add, index_select, index_add_, index_copy_, embedding) refuse them;
    Python indexing ``x[index]``, index_fill and take_along_dim wrap an index in [-size, 0) once."""
    if index._numel and not index.dtype.is_floating_point:
        lo = int(index.min())
        if lo < 0:
            raise IndexError(f"{op}(): index {lo} is out of bounds for dimension {dim} with size {size} (negative "
                             "indices are refused, as torch; x[index] and index_fill wrap them)")  # fmt: skip


def same_dtype(op: str, x: Tensor, src: Tensor) -> None:
    """The rule of the ops that write a tensor's values into another (scatter, index_add, index_put...): one
    dtype, as torch (no silent conversion)."""
    if not isinstance(src, Tensor):
        raise TypeError(f"{op}(): src must be a Tensor, got {type(src).__name__}")
    if src.dtype is not x.dtype:
        raise RuntimeError(f"{op}(): expected self.dtype to be equal to src.dtype, got {x.dtype.name} and "
                           f"{src.dtype.name}")  # fmt: skip


def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Same as torch.index_select: indices in [0, size) (negative ones refused, as torch); a 0-d input is read
    as one element (its result 0-d, as torch's)."""
    if isinstance(input, Tensor) and input.ndim == 0 and isinstance(index, Tensor):
        normalize_dim(dim, 1)
        return index_select(input.reshape(1), 0, index.reshape(-1)).reshape(())
    if isinstance(index, Tensor) and isinstance(input, Tensor) and input.ndim:
        d = normalize_dim(dim, input.ndim)
        refuse_negative("index_select", index, d, input._shape[d])
    return _index_select(input, dim, index)


def _index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """index_select with negative indices wrapped once (the kernel's rule; x[index] reads through it)."""
    if (
        dim == 0 and type(input) is Tensor and type(index) is Tensor and index.dtype is int64
        and len(index._shape) == 1 and index._contig and input._contig and input._shape
        and not (input._requires_grad and _grad_mode.enabled)
    ):  # fmt: skip
        # rows of a contiguous tensor: one allocation, one C call, no descriptors
        shape = input._shape
        n = index._shape[0]
        out = empty_tensor((n,) + shape[1:], input.dtype)
        width = math.prod(shape[1:])
        rc = lib.pf_index_select_rows(input.dtype.code, input._ptr, shape[0], width, index._ptr, n, out._ptr)
        if rc:
            check(rc)
        return out
    index = _as_index(index)
    if index.ndim > 1:
        raise ShapeError(f"index_select: index must be 0-d or 1-d, got shape {list(index._shape)}")
    if input.ndim == 0:
        raise IndexError("index_select() cannot be applied to a 0-dim tensor")
    d = normalize_dim(dim, input.ndim)
    idx = index if index.ndim == 1 else index.reshape(-1)
    out = empty_tensor(input._shape[:d] + (idx._numel,) + input._shape[d + 1 :], input.dtype)
    check(lib.pf_index_select(input._d(), d, idx._d(), out._d()))
    if input.requires_grad and _grad_mode.enabled:
        record(
            "IndexSelectBackward0", lambda g: (_index_add(zeros_of(input._shape, g.dtype), d, idx, g),), (input,), out
        )
    return out


def _record_accumulate(name: str, x: Tensor, src: Tensor, src_grad) -> None:
    """After ``x += scatter(src)`` in place: x's gradient passes through, src's is gathered."""
    if _grad_mode.enabled and (x.requires_grad or src.requires_grad):
        ew._view_base_check(x, name)
        record(name.capitalize() + "Backward0", lambda g: (g, src_grad(g) if src.requires_grad else None), (x, src), x)


def index_add_(x: Tensor, dim: int, index: Tensor, source: Tensor, alpha=1) -> Tensor:
    """Same as torch.Tensor.index_add_; repeated indices accumulate; negative indices refused (as torch)."""
    d = normalize_dim(dim, x.ndim)
    refuse_negative("index_add_", _as_index(index), d, x._shape[d] if x.ndim else 1)
    return _index_add(x, dim, index, source, alpha)


def _index_add(x: Tensor, dim: int, index: Tensor, source: Tensor, alpha=1) -> Tensor:
    x._write_check()
    d = normalize_dim(dim, x.ndim)
    if isinstance(alpha, float) and not x.dtype.is_floating_point:
        alpha = int(alpha)  # torch converts alpha to an integer destination's dtype first: 2.5 scales by 2
    src = source if alpha == 1 else ew.mul(source, alpha)
    if src.dtype is not x.dtype:
        src = src.to(x.dtype)
    idx = unaliased(x, _as_index(index).reshape(-1))
    src = unaliased(x, src)
    check(lib.pf_index_add(x._d(), d, idx._d(), src._d()))
    x._bump()
    if x.ndim:
        _record_accumulate("index_add_", x, src, lambda g: _index_select(g, d, idx))
    else:  # a 0-d tensor is one slice
        _record_accumulate("index_add_", x, src, lambda g: _index_select(g.reshape(1), 0, idx).reshape(src._shape))
    return x


def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """Same as torch.gather."""
    index = _as_index(index)
    d = normalize_dim(dim, input.ndim)
    out = empty_tensor(index._shape, input.dtype)
    check(lib.pf_gather(input._d(), d, index._d(), out._d()))
    if input.requires_grad and _grad_mode.enabled:
        record(
            "GatherBackward0", lambda g: (scatter_add_(zeros_of(input._shape, g.dtype), d, index, g),), (input,), out
        )
    return out


def scatter_add_(x: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Same as torch.Tensor.scatter_add_."""
    x._write_check()
    d = normalize_dim(dim, x.ndim)
    same_dtype("scatter_add_", x, src)
    index = unaliased(x, _as_index(index))
    src = unaliased(x, src)
    check(lib.pf_scatter_add(x._d(), d, index._d(), src._d()))
    x._bump()
    _record_accumulate("scatter_add_", x, src, lambda g: gather(g, d, index))
    return x


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """Same as torch.scatter_add (out of place)."""
    return scatter_add_(input.clone(), dim, index, src)


def nonzero(input: Tensor, as_tuple: bool = False):
    """Same as torch.nonzero: int64 coordinates [count, ndim] in row-major order."""
    count = lib.pf_count_nonzero(input._d())
    if count < 0:
        check(lib.PF_ERR_VALUE)
    out = empty_tensor((count, input.ndim), int64)
    check(lib.pf_nonzero(input._d(), out._d()))
    if as_tuple:
        return tuple(out[:, k] for k in range(input.ndim))
    return out


def _as_index(index) -> Tensor:
    if not isinstance(index, Tensor):
        index = _index_tensor(index)
    if index.dtype is int32 or (index._numel == 0 and not index.dtype.is_floating_point):
        return cast(index, int64)  # an empty index of any integer dtype selects nothing, as torch's
    if index.dtype is not int64:
        raise IndexError(f"tensors used as indices must be long, int, byte or bool tensors, got {index.dtype.name}")
    return index


def _index_tensor(obj) -> Tensor:
    if isinstance(obj, list) and any(isinstance(k, Tensor) for k in obj):
        obj = [k.item() if isinstance(k, Tensor) and k._numel == 1 else k for k in obj]
    try:
        arr = np.asarray(obj)
    except ValueError:
        raise IndexError(f"an index sequence has an irregular shape: {obj!r}") from None
    if arr.dtype == np.bool_:
        return from_numpy(arr.copy())
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise IndexError(
            f"only integers, slices, None, Ellipsis, and integer or bool tensors are valid indices, got {obj!r}"
        )
    return from_numpy(arr.astype(np.int64))


# ---- __getitem__ / __setitem__ ---------------------------------------------------------


def _sequence_as_tuple(key: list) -> bool:
    """torch's rule for a list key: one holding a tensor, a sequence, a slice, ``...`` or None is read as a
    tuple of indices (``x[[[0, 1], [1, 2]]]`` is ``x[[0, 1], [1, 2]]``), as torch still does with a warning."""
    return len(key) < 32 and any(
        isinstance(k, (Tensor, list, tuple, range, slice)) or k is None or k is Ellipsis for k in key
    )


def _expand_index(x: Tensor, key) -> list:
    """Key as a list with Ellipsis replaced by full slices and sequences (lists, ranges, nested
    lists, tuples inside lists, NumPy arrays) turned into index tensors."""
    if isinstance(key, list) and _sequence_as_tuple(key):
        warnings.warn(
            "Using a non-tuple sequence for multidimensional indexing is deprecated (as in torch); use "
            "x[tuple(seq)] instead of x[seq]",
            UserWarning,
            stacklevel=3,
        )
        key = tuple(key)
    if not isinstance(key, tuple):
        key = (key,)
    items = []
    for k in key:
        if isinstance(k, (list, tuple, np.ndarray, range)):
            k = _index_tensor(k)
        elif isinstance(k, Tensor) and k.dtype is _dtype.uint8:
            warnings.warn(
                "indexing with dtype uint8 is deprecated (as in torch), please use a dtype bool instead",
                UserWarning,
                stacklevel=3,
            )
            k = ew.ne(k, 0)  # a uint8 key is a mask, as torch reads it
        items.append(k)
    scalar_bools = [i for i, k in enumerate(items) if _is_scalar_bool(k)]
    index_tensors = bool(scalar_bools) and any(isinstance(k, Tensor) and not _is_scalar_bool(k) for k in items)
    if len(scalar_bools) > 1:
        # NumPy and torch: all 0-d masks together add one dim, of size 1 only if every one is True
        # (torch: where the first one stood when they are adjacent, else as the result's first dim)
        first = scalar_bools[0]
        merged = all(bool(items[i]) for i in scalar_bools)
        apart = scalar_bools[-1] - first >= len(scalar_bools)
        items = [merged if i == first else k for i, k in enumerate(items) if i == first or i not in scalar_bools]
        if apart and not index_tensors:
            items.insert(0, items.pop(first))
    if index_tensors:
        # beside index tensors a 0-d mask is an index tensor too, [0] or [], into a new unit dim,
        # broadcast with the others (torch and NumPy): ``x[[], False]`` is empty, not ``[0, 0, ...]``
        i = next(i for i, k in enumerate(items) if _is_scalar_bool(k))
        items[i] = _UnitIndex(bool(items[i]))
    consumed = sum(
        (k.ndim if isinstance(k, Tensor) and k.dtype is bool_ else 0 if isinstance(k, (bool, np.bool_)) else 1)
        for k in items if k is not None and k is not Ellipsis and not isinstance(k, _UnitIndex)
    )  # fmt: skip
    if sum(k is Ellipsis for k in items) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    ell = [i for i, k in enumerate(items) if k is Ellipsis]
    if ell:
        i = ell[0]
        items[i : i + 1] = [slice(None)] * (x.ndim - consumed)
    return items


class _UnitIndex:
    """An index tensor into a new dim of size 1: [0] for True, [] for False."""

    __slots__ = ("index",)

    def __init__(self, keep: bool):
        self.index = _index_tensor([0] if keep else [])


def _is_scalar_bool(k) -> bool:
    return isinstance(k, (bool, np.bool_)) or (isinstance(k, Tensor) and k.dtype is bool_ and k.ndim == 0)


def _basic(x: Tensor, items: list, one_slice: bool = False):
    """Apply ints, slices and None; tensors stay for the advanced step as (view dim, tensor). The view's node is
    named as torch's: after the last step that changes something (an int selects, a slice that is not the whole
    dim slices, None unsqueezes), an alias when none does, a slice for a key that is one slice (``x[:]``)."""
    shape, strides, offset = [], [], x._offset
    advanced = []
    basic_key = []  # the key without its tensors: the view's gradient is written back through it
    d = 0
    last = "slice_back" if one_slice else "alias_back"
    for k in items:
        if k is None:
            shape.append(1)
            strides.append(0)
            basic_key.append(None)
            last = "unsqueeze_back"
        elif isinstance(k, _UnitIndex):
            advanced.append((len(shape), k.index))
            shape.append(1)
            strides.append(0)
            basic_key.append(None)
        elif _is_scalar_bool(k):
            # a 0-d mask, as NumPy and torch: a new dim of size 1 (True) or 0 (False)
            shape.append(1 if bool(k) else 0)
            strides.append(0)
            basic_key.append(bool(k))
        elif isinstance(k, Tensor):
            basic_key.extend([slice(None)] * (k.ndim if k.dtype is bool_ else 1))
            if k.dtype is bool_:
                if k._shape != x._shape[d : d + k.ndim]:
                    raise IndexError(
                        f"the shape of the mask {list(k._shape)} does not match the shape of the indexed tensor "
                        f"{list(x._shape)} starting at dim {d}"
                    )
                coords = nonzero(k)
                for j in range(k.ndim):
                    advanced.append((len(shape), coords[:, j]))
                    shape.append(x._shape[d + j])
                    strides.append(x._strides[d + j])
                d += k.ndim
            else:
                advanced.append((len(shape), _as_index(k)))
                shape.append(x._shape[d])
                strides.append(x._strides[d])
                d += 1
        elif isinstance(k, slice):
            size = x._shape[d]
            start, stop, step = k.indices(size)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            n = max(0, -(-(stop - start) // step))
            offset += start * x._strides[d] if n else 0
            if one_slice or (start, n, step) != (0, size, 1):
                last = "slice_back"
            shape.append(n)
            strides.append(x._strides[d] * step)
            basic_key.append(k)
            d += 1
        elif isinstance(k, (int, np.integer)) or (isinstance(k, Tensor) and k._numel == 1):
            k = int(k)
            size = x._shape[d]
            if not -size <= k < size:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {size}")
            offset += (k % size) * x._strides[d]
            basic_key.append(k)
            d += 1
            last = "select_back"
        else:
            raise IndexError(
                f"only integers, slices (`:`), ellipsis (`...`), None and long or bool tensors are valid indices "
                f"(got {type(k).__name__})"
            )
    shape += x._shape[d:]
    strides += x._strides[d:]
    old = x._shape

    def slice_back(g):  # the shape, not x: the node must not keep x alive
        return embed(g, old, tuple(basic_key))

    slice_back.__name__ = last  # view_op names the node after it
    return view_op(x, tuple(shape), tuple(strides), offset, slice_back), advanced


def _int_back(x: Tensor, key: int):
    old = x._shape

    def select_back(g):
        return embed(g, old, (key,))

    return select_back


def _wrapped(ix: Tensor, size: int, d: int) -> Tensor:
    """An index into a dim of ``size`` with every entry checked to be in [-size, size) and the negative ones
    wrapped (``ix`` itself when none is negative)."""
    if not ix._numel:
        return ix
    lo, hi = int(ix.min()), int(ix.max())
    if lo < -size or hi >= size:
        bad = lo if lo < -size else hi
        raise IndexError(f"index {bad} is out of bounds for dimension {d} with size {size}")
    return ew.where(ew.lt(ix, 0), ew.add(ix, size), ix) if lo < 0 else ix


def _linear_index(view: Tensor, advanced: list):
    """Broadcast the index tensors, check bounds and fold them into one flat index over
    the indexed dims, which are moved to the front of the returned view."""
    dims = [d for d, _ in advanced]
    bshape = broadcast_shapes(*(ix._shape for _, ix in advanced))
    lin = None
    for d, ix in advanced:
        size = view._shape[d]
        ix = _wrapped(ix, size, d)
        lin = ix if lin is None else ew.add(ew.mul(lin, size), ix)
    rest = [i for i in range(view.ndim) if i not in dims]
    moved = permute(view, *dims, *rest)
    flat = moved.reshape((math.prod(view._shape[d] for d in dims),) + tuple(view._shape[i] for i in rest))
    lin = expand(lin, *bshape) if lin._shape != bshape else lin
    return moved, flat, lin, bshape, dims, rest


def getitem(x: Tensor, key) -> Tensor:
    # fast paths for the two commonest keys: one int, one 1-d integer tensor
    if type(key) is int and x._shape:
        size = x._shape[0]
        if -size <= key < size:
            return view_op(x, x._shape[1:], x._strides[1:], x._offset + (key % size) * x._strides[0], _int_back(x, key))
    elif type(key) is Tensor and key.ndim == 1 and (key.dtype is int64 or key.dtype is int32) and x._shape:
        return _index_select(x, 0, key)
    view, advanced = _basic(x, _expand_index(x, key), type(key) is slice)
    if not advanced:
        return view
    if len(advanced) == 1 and advanced[0][1].ndim == 1 and not (_grad_mode.enabled and x.requires_grad):
        # one 1-d index among slices, ints and None (``x[:, [-1], :]``, a 1-d mask) outside autograd: the
        # indexed dim stays in place, so it is one index_select along it (the kernel checks and wraps the index)
        return _index_select(view, *advanced[0])
    _, flat, lin, bshape, dims, rest = _linear_index(view, advanced)
    out = _index_select(flat, 0, contiguous(lin).reshape(-1))
    out = out.reshape(bshape + tuple(view._shape[i] for i in rest))
    # PyTorch keeps the result dims in place when the indexed dims are adjacent
    if dims == list(range(dims[0], dims[-1] + 1)) and dims[0] > 0:
        nb = len(bshape)
        order = list(range(nb, nb + dims[0])) + list(range(nb)) + list(range(nb + dims[0], out.ndim))
        out = contiguous(permute(out, *order))
    return out


def setitem(x: Tensor, key, value) -> None:
    """``x[key] = value``, writing through; with autograd, x's gradient is zero where it was
    overwritten and ``value`` gets the gradient of ``x[key]``."""
    x._write_check(same_value=True)  # the overlap check is on the part written, below
    if any(isinstance(k, Tensor) and k.dtype is _dtype.uint8 for k in (key if isinstance(key, tuple) else (key,))):
        raise RuntimeError("x[mask] = value only supports bool masks (as torch), got a uint8 mask; use mask.bool()")
    value = _setitem_value(value)
    value_grad = isinstance(value, Tensor) and value.requires_grad
    if not (_grad_mode.enabled and (x.requires_grad or value_grad)):
        _setitem(x, key, value)
        return
    ew._view_base_check(x, "__setitem__")
    with _grad_mode.no_grad():
        _setitem(x, key, value)

    def backward(g):
        gx = None
        if x_grad:
            gx = g.clone()
            with _grad_mode.no_grad():
                _setitem(gx, key, 0)
        return gx, ew._grad_to(getitem(g, key), value) if value_grad else None

    x_grad = x.requires_grad
    record("IndexPutBackward0", backward, (x, value), x)


def setitem_accumulate(x: Tensor, key, value) -> None:
    """``x[key] += value`` with repeated positions adding up (``index_put_(..., accumulate=True)``); with
    autograd, x's gradient passes through and ``value`` gets the gradient of ``x[key]``."""
    x._write_check(same_value=True)
    value = _setitem_value(value)
    value_grad = isinstance(value, Tensor) and value.requires_grad
    if not (_grad_mode.enabled and (x.requires_grad or value_grad)):
        _setitem(x, key, value, accumulate=True)
        return
    ew._view_base_check(x, "index_put_")
    with _grad_mode.no_grad():
        _setitem(x, key, value, accumulate=True)
    x_grad = x.requires_grad
    record("IndexPutBackward0", lambda g: (g if x_grad else None, ew._grad_to(getitem(g, key), value)
                                           if value_grad else None), (x, value), x)  # fmt: skip


def _setitem_value(value):
    """The one place an assigned value is shaped (torch's): leading size-1 dims of a tensor are dropped
    (``out[i] = net(x[i:i+1])``), broadcasting to the indexed part does the rest; the value's gradient comes
    back in its own shape through the reshape. Lists and NumPy arrays are refused, as torch refuses them."""
    if isinstance(value, Tensor) and value.ndim and value._shape[0] == 1:
        n = 0
        while n < value.ndim and value._shape[n] == 1:
            n += 1
        value = value.reshape(value._shape[n:])
    return value


def _setitem(x: Tensor, key, value, accumulate: bool = False) -> None:
    value = _setitem_value(value)
    if (
        not accumulate and type(key) is Tensor and key.dtype is bool_ and key._shape == x._shape and x._numel
        and (type(value) in (int, float, bool) or (type(value) is Tensor and not value._shape))
    ):  # fmt: skip
        # x[mask] = scalar with a mask of x's shape (top-k filtering of logits): one where() written into x
        x._write_check()
        fill = ew.scalar_tensor(value, x.dtype, "value", True) if type(value) is not Tensor else value
        if fill.dtype is not x.dtype:
            fill = cast(fill, x.dtype)
        check(lib.pf_where(unaliased(x, key)._d(), unaliased(x, fill)._d(), x._d(), x._d()))
        x._bump()
        return
    view, advanced = _basic(x, _expand_index(x, key))
    if not advanced:
        if accumulate:
            ew.copy_(view, ew.add(view, value))
        else:
            ew.copy_(view, value)
        return
    view._write_check()
    moved, flat, lin, bshape, dims, rest = _linear_index(view, advanced)
    rest_shape = tuple(view._shape[i] for i in rest)
    if not isinstance(value, Tensor):
        value = ew.scalar_tensor(value, x.dtype, "value", True)
    adjacent = dims == list(range(dims[0], dims[-1] + 1)) and dims[0] > 0
    if adjacent:
        # the value broadcasts against the result of getitem: expand it to that layout, then
        # move the index dims to the front
        nb, lead = len(bshape), dims[0]
        full = (*view._shape[:lead], *bshape, *view._shape[dims[-1] + 1 :])
        value = expand(value, *full) if value._shape != full else value
        value = permute(value, *range(lead, lead + nb), *range(lead), *range(lead + nb, value.ndim))
    src = contiguous(expand(value, *(bshape + rest_shape))).reshape((-1,) + rest_shape)
    if src.dtype is not x.dtype:
        src = cast(src, x.dtype)
    idx = unaliased(x, contiguous(lin).reshape(-1))
    src = unaliased(x, src)
    check((lib.pf_index_add if accumulate else lib.pf_index_copy)(flat._d(), 0, idx._d(), src._d()))
    if flat._storage is not x._storage:  # reshape had to copy: write the result back
        ew.copy_(moved, flat.reshape(moved._shape))
    x._bump()


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """Same as torch.take_along_dim: ``gather`` with broadcasting (flattened when ``dim`` is None); an index
    in [-size, 0) wraps once, as torch's."""
    if dim is None:
        return take_along_dim(input.reshape(-1), indices.reshape(-1), 0)
    d = normalize_dim(dim, input.ndim)
    indices = _as_index(indices)
    if indices._numel and int(indices.min()) < 0:
        size = input._shape[d]
        if int(indices.min()) < -size:
            raise IndexError(f"take_along_dim(): index {int(indices.min())} is out of bounds for dimension {d} "
                             f"with size {size}")  # fmt: skip
        indices = ew.where(ew.lt(indices, 0), ew.add(indices, size), indices)
    if input.ndim != indices.ndim:
        raise RuntimeError(
            f"take_along_dim(): input and indices should have the same number of dimensions, "
            f"got {input.ndim} and {indices.ndim}"
        )
    shape_x = list(input.shape)
    shape_i = list(indices.shape)
    shape_x[d] = shape_i[d] = 1
    common = list(broadcast_shapes(shape_x, shape_i))
    sx, si = list(common), list(common)
    sx[d], si[d] = input.shape[d], indices.shape[d]
    return gather(sh.expand(input, *sx), d, sh.expand(indices, *si).contiguous())


def masked_select(input: Tensor, mask: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.masked_select: the elements where ``mask`` (broadcast) is True, as 1-D."""
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool_:
        raise TypeError(f"masked_select(): mask must be a bool tensor, got {getattr(mask, 'dtype', type(mask))}")
    x, m = broadcast_tensors(input, mask)
    return getitem(x, m.contiguous())


def _scatter_key(x: Tensor, dim: int, index: Tensor) -> tuple:
    """The advanced-index key that writes ``x[..., index[i, j, ...], ...]`` along ``dim``."""
    if index.ndim != x.ndim:
        raise RuntimeError(
            f"scatter(): index must have as many dims as self ({x.ndim}), got shape {tuple(index.shape)}"
        )
    for k in range(x.ndim):
        if k != dim and index.shape[k] > x.shape[k]:
            raise RuntimeError(
                f"scatter(): index {tuple(index.shape)} is larger than self {tuple(x.shape)} outside dim {dim}"
            )
    key = []
    for k in range(x.ndim):
        if k == dim:
            key.append(index)
        else:
            shape = [1] * x.ndim
            shape[k] = index.shape[k]
            key.append(arange(index.shape[k]).reshape(*shape))
    return tuple(key)


def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:  # noqa: A002
    """Same as torch.scatter: a copy of ``input`` with ``src`` (a tensor, or a number as
    ``value``) written at ``index`` along ``dim``; ``reduce`` "add"/"multiply" as torch's."""
    return scatter_(input.clone(), dim, index, src, value=value, reduce=reduce)


def scatter_(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.scatter_."""
    if src is None and value is None:
        raise TypeError("scatter_(): expected src (a tensor) or value (a number)")
    if src is None:
        src = value
    if isinstance(src, Tensor):
        same_dtype("scatter_", input, src)
    d = normalize_dim(dim, input.ndim)
    index = _as_index(index)
    if index.numel() == 0:
        return input
    refuse_negative("scatter_", index, d, input._shape[d] if input.ndim else 1)
    if reduce == "add":
        if not isinstance(src, Tensor):
            src = ew.as_tensor_of(src, input.dtype).expand(*index.shape)
        return scatter_add_(input, d, index, _crop(src, index.shape))
    if reduce not in (None, "multiply"):
        raise ValueError(f"scatter_(): reduce must be 'add' or 'multiply', got {reduce!r}")
    key = _scatter_key(input, d, index)
    values = _crop(src, index.shape) if isinstance(src, Tensor) else src
    if reduce == "multiply":
        values = ew.mul(getitem(input, key), values)
    setitem(input, key, values)
    return input


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:  # noqa: A002
    """Same as torch.index_fill: a copy with the slices at ``index`` along ``dim`` set to ``value`` (indices in
    [-size, 0) wrap once). A ``value`` tensor gets the gradient of every filled element once, however often
    ``index`` repeats a slice."""
    if isinstance(value, Tensor) and value.ndim:
        raise ValueError(f"index_fill(): only supports a 0-dimensional value tensor, but got tensor with "
                         f"{value.ndim} dimension(s)")  # fmt: skip
    index = _as_index(index)
    if index.ndim > 1:
        raise IndexError(f"index_fill(): index has to be a vector (0-d or 1-d), got shape {list(index._shape)}")
    d = normalize_dim(dim, input.ndim) if input.ndim else normalize_dim(dim, 1)
    n = input._shape[d] if input.ndim else 1
    mask = zeros_of((n,), bool_)
    setitem(mask, index.reshape(-1), True)  # bounds and wrapping: x[index]'s rule
    mask = mask.reshape((n,) + (1,) * (input.ndim - d - 1)) if input.ndim else mask.reshape(())
    if isinstance(value, Tensor):
        value = value if value.dtype is input.dtype else value.to(input.dtype)
    else:
        value = scalar_tensor(value, input.dtype, "index_fill value", True)
    return ew.where(mask, value, input)


def index_fill_(input: Tensor, dim: int, index: Tensor, value) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.index_fill_ (a 0-d tensor is one slice, filled when ``index`` is non-empty)."""
    return ew.write_back(input, index_fill, dim, index, value)


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.index_copy: a copy with ``source``'s slices written at ``index`` along ``dim``."""
    return index_copy_(input.clone(), dim, index, source)


def index_copy_(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.index_copy_ (a 0-d tensor is one slice, copied when ``index`` is non-empty)."""
    if input.ndim == 0:
        index = _as_index(index).reshape(-1)
        refuse_negative("index_copy_", index, 0, 1)
        return input.copy_(source.reshape(())) if index.numel() else input
    d = normalize_dim(dim, input.ndim) if input.ndim else 0
    index = _as_index(index).reshape(-1)
    refuse_negative("index_copy_", index, d, input._shape[d] if input.ndim else 1)
    if source.ndim and source.shape[d] != index.shape[0]:
        raise ShapeError(
            f"index_copy_(): source has {source.shape[d]} slices along dim {dim}, index has {index.shape[0]}"
        )
    setitem(input, (slice(None),) * d + (index,), source)
    return input


def _tri_indices(row: int, col: int, offset: int, upper: bool, dtype) -> Tensor:
    r = sh.expand(arange(row).reshape(row, 1), row, col)
    c = sh.expand(arange(col).reshape(1, col), row, col)
    gap = ew.plain_sub(c, r)
    keep = ew.ge(gap, offset) if upper else ew.le(gap, offset)
    return jn.stack([getitem(r, keep), getitem(c, keep)], 0).to(_dtype.as_dtype(dtype))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=_dtype.int64, device=None) -> Tensor:
    """Same as torch.tril_indices: the (2, N) coordinates of the lower triangle."""
    return _tri_indices(row, col, offset, False, dtype)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=_dtype.int64, device=None) -> Tensor:
    """Same as torch.triu_indices: the (2, N) coordinates of the upper triangle."""
    return _tri_indices(row, col, offset, True, dtype)


def _crop(src: Tensor, shape) -> Tensor:
    """torch reads ``src`` over the index's extent only."""
    if src.ndim != len(shape) or any(s < n for s, n in zip(src.shape, shape, strict=True)):
        raise RuntimeError(f"scatter(): src {tuple(src.shape)} must be at least as large as index {tuple(shape)}")
    return src[tuple(slice(0, n) for n in shape)]


def _tri(x: Tensor, diagonal: int, upper: bool) -> Tensor:
    if x.ndim < 2:
        raise ValueError(f"{'triu' if upper else 'tril'}: input must have at least 2 dims, got {x.ndim}")
    rows, cols = x._shape[-2:]
    r = arange(rows).reshape(rows, 1)
    c = arange(cols).reshape(1, cols)
    offset = ew.sub(c, r)
    mask = ew.ge(offset, diagonal) if upper else ew.le(offset, diagonal)
    return ew.where(mask, x, scalar_tensor(0, x.dtype))


def triu(input: Tensor, diagonal: int = 0) -> Tensor:
    """Same as torch.triu."""
    return _tri(input, diagonal, True)


def tril(input: Tensor, diagonal: int = 0) -> Tensor:
    """Same as torch.tril."""
    return _tri(input, diagonal, False)


def argwhere(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.argwhere: ``nonzero(input)``, the [count, ndim] coordinates of the nonzero elements."""
    return nonzero(input)


def nonzero_static(input: Tensor, *, size: int, fill_value: int = -1) -> Tensor:  # noqa: A002
    """Same as torch.nonzero_static: ``nonzero``'s coordinates in a result of exactly ``size`` rows, cut short or
    padded with ``fill_value``."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise RuntimeError(f"nonzero_static(): size must be a non-negative int, got {size!r}")
    found = nonzero(input)
    if found._shape[0] >= size:
        return found[:size].contiguous()
    pad = ew.add(zeros_of((size - found._shape[0], input.ndim), int64), fill_value)
    return jn.cat([found, pad], 0)


def unravel_index(indices, shape) -> tuple:
    """Same as torch.unravel_index: the coordinates in a tensor of ``shape`` of flat ``indices`` (an int or an
    integer tensor; negative ones count from the end), one int64 tensor per dim."""
    if isinstance(indices, bool) or (isinstance(indices, Tensor) and indices.dtype is bool_):
        raise TypeError("unravel_index(): expected 'indices' to be an integer tensor, got bool")
    if isinstance(indices, Tensor) and indices.dtype.is_floating_point:
        raise TypeError(f"unravel_index(): expected 'indices' to be an integer tensor, got {indices.dtype.name}")
    idx = indices.to(int64) if isinstance(indices, Tensor) else ew.as_tensor_of(int(indices), int64)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if any(not isinstance(s, int) or isinstance(s, bool) for s in shape):
        raise TypeError(f"unravel_index(): expected 'shape' to be ints, got {shape!r}")
    if any(s < 0 for s in shape):
        raise ValueError(f"unravel_index(): 'shape' cannot have negative values, but got {shape!r}")
    total = math.prod(shape)
    if idx._numel and (int(idx.min()) < -total or int(idx.max()) >= total):
        raise ValueError(f"unravel_index(): 'indices' must be in range [{-total}, {total - 1}] for shape "
                         f"{list(shape)}")  # fmt: skip
    idx = ew.where(ew.lt(idx, 0), ew.add(idx, total), idx)
    out, stride = [], total
    for s in shape:
        stride //= s if s else 1
        out.append(ew.remainder(ew.floor_divide(idx, stride), s) if s else idx)
    return tuple(out)
