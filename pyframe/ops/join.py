"""Arranging and selecting, composed from views, ``cat``, ``gather`` and indexing: ``hstack``,
``vstack``, ``column_stack``, ``dstack``, ``movedim``, ``atleast_*d``, ``broadcast_tensors``,
``tensor_split``, ``rot90``, ``diff``, ``meshgrid``, ``take_along_dim``, ``masked_select``,
``scatter``, ``index_fill``, ``index_copy``, ``tril_indices``/``triu_indices``, ``block_diag``.
Gradients follow from the ops they are built on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyframe import _dtype, _grad_mode
from pyframe._backend import SMALL_BYTES, ShapeError, alloc_large, alloc_small, check, desc, lib
from pyframe._dtype import as_number
from pyframe.autograd.graph import record
from pyframe.ops import elementwise as ew
from pyframe.ops import view as sh
from pyframe.ops._common import _seq, _unpack, result_type, zeros_of
from pyframe.ops.view import _needs_dims, atleast_1d, atleast_2d, atleast_3d, narrow, select, to, unsqueeze
from pyframe.tensor import Tensor, empty_tensor, fresh, normalize_dim

__all__ = [
    "hstack", "vstack", "row_stack", "column_stack", "dstack", "tensor_split", "hsplit", "vsplit", "meshgrid",
    "block_diag", "cartesian_prod", "cat", "stack", "split", "chunk", "unbind", "concat", "concatenate",
]  # fmt: skip


def hstack(tensors) -> Tensor:
    """Same as torch.hstack: along dim 1, or dim 0 for 1-D tensors."""
    ts = [atleast_1d(t) for t in _seq(tensors, "hstack")]
    return cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """Same as torch.vstack: 1-D tensors become rows, then along dim 0."""
    return cat([atleast_2d(t) for t in _seq(tensors, "vstack")], 0)


row_stack = vstack


def dstack(tensors) -> Tensor:
    """Same as torch.dstack: along dim 2 after atleast_3d."""
    return cat([atleast_3d(t) for t in _seq(tensors, "dstack")], 2)


def column_stack(tensors) -> Tensor:
    """Same as torch.column_stack: 0-d and 1-d tensors become columns, then along dim 1."""
    ts = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in _seq(tensors, "column_stack")]
    return cat(ts, 1)


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    """Same as torch.tensor_split: ``n`` nearly equal parts (the first ``size % n`` one longer),
    or parts between the given indices. Views."""
    d = normalize_dim(dim, input.ndim)
    size = input.shape[d]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"tensor_split(): number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        bounds, start = [], 0
        for i in range(n):
            start += q + (1 if i < r else 0)
            bounds.append(start)
        bounds = bounds[:-1]
    else:
        bounds = [int(i) for i in indices_or_sections]
    parts, start = [], 0
    for end in [*bounds, size]:
        lo, hi = min(max(start, 0), size), min(max(end, 0), size)
        parts.append(sh.narrow(input, d, lo, max(hi - lo, 0)))
        start = end
    return tuple(parts)


def hsplit(input: Tensor, sections) -> tuple[Tensor, ...]:  # noqa: A002
    """Same as torch.hsplit."""
    return tensor_split(input, sections, 0 if input.ndim == 1 else 1)


def vsplit(input: Tensor, sections) -> tuple[Tensor, ...]:  # noqa: A002
    """Same as torch.vsplit."""
    return tensor_split(input, sections, 0)


def meshgrid(*tensors, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Same as torch.meshgrid (``indexing="ij"`` or ``"xy"``): expanded views."""
    ts = _unpack(tensors)
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid(): indexing must be 'ij' or 'xy', got {indexing!r}")
    if any(t.ndim > 1 for t in ts):
        raise RuntimeError("meshgrid(): expects all tensors to be 0-D or 1-D")
    ts = [t.reshape(-1) for t in ts]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.shape[0] for t in ts]
    grids = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        grids.append(sh.expand(t.reshape(*view), *shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors) -> Tensor:
    """Same as torch.cartesian_prod: every combination, as rows."""
    ts = _unpack(tensors)
    if len(ts) == 1:
        return ts[0]
    return stack([g.reshape(-1) for g in meshgrid(*ts, indexing="ij")], 1)


def block_diag(*tensors) -> Tensor:
    """Same as torch.block_diag: the tensors (0-d, 1-d rows or matrices) on a block diagonal."""
    ts = [t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t for t in tensors]
    if any(t.ndim != 2 for t in ts):
        raise RuntimeError("block_diag(): input tensors must have 2 or fewer dimensions")
    rows = sum(t.shape[0] for t in ts)
    out_rows, c0 = [], 0
    cols = sum(t.shape[1] for t in ts)
    for t in ts:
        left = t.new_zeros((t.shape[0], c0))
        right = t.new_zeros((t.shape[0], cols - c0 - t.shape[1]))
        out_rows.append(cat([left, t, right], 1))
        c0 += t.shape[1]
    return cat(out_rows, 0) if out_rows else ew.as_tensor_of(0.0, _dtype.float32).new_zeros((rows, cols))


def cat(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Same as torch.cat: joins along an existing dim, promoting dtypes."""
    if type(dim) is int and dim == 0 and (type(tensors) is list or type(tensors) is tuple) and len(tensors) == 2:
        # cat([a, b]) of rows, the commonest form: checked inline, one C call without arrays
        a, b = tensors
        if type(a) is Tensor and type(b) is Tensor and a.dtype is b.dtype and a._contig and b._contig:
            sa, sb = a._shape, b._shape
            if (
                sa and len(sa) == len(sb) and sa[1:] == sb[1:]
                and not ((a._requires_grad or b._requires_grad) and _grad_mode.enabled)
            ):  # fmt: skip
                dt = a.dtype
                if a._numel > 1:  # a's strides are the canonical ones, which do not depend on dim 0's size
                    numel = a._numel + b._numel
                    nbytes = numel * dt.itemsize
                    data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes)
                    rc = _cat2(dt.code, a._ptr, a._numel, b._ptr, b._numel, data)
                    if rc:
                        check(rc)
                    return fresh(data, nbytes, (sa[0] + sb[0],) + sa[1:], a._strides, numel, dt)
                out = empty_tensor((sa[0] + sb[0],) + sa[1:], dt)
                rc = _cat2(dt.code, a._ptr, a._numel, b._ptr, b._numel, out._ptr)
                if rc:
                    check(rc)
                return out
    if (type(tensors) is list or type(tensors) is tuple) and tensors and type(dim) is int:
        out = _cat_lean(tensors, dim)
        if out is not None:
            return out
    tensors = list(tensors)
    if not tensors:
        raise ValueError("cat: expected a non-empty list of tensors")
    for i, x in enumerate(tensors):
        if not isinstance(x, Tensor):
            raise TypeError(f"cat: expected Tensors, got {type(x).__name__} at position {i}")
    # PyTorch skips legacy 1-d empty tensors
    parts = [x for x in tensors if x._numel or len(x._shape) != 1] or tensors[:1]
    ref = parts[0]
    if ref.ndim == 0:
        raise ShapeError("cat: zero-dimensional tensor cannot be concatenated")
    nd = ref.ndim
    d = normalize_dim(dim, nd)
    head, tail = ref._shape[:d], ref._shape[d + 1 :]
    total, one_dtype, contig = 0, True, True
    for i, x in enumerate(parts):
        xs = x._shape
        if len(xs) != nd or xs[:d] != head or xs[d + 1 :] != tail:
            raise ShapeError(
                f"cat: sizes of tensors must match except in dimension {d}: expected {list(ref._shape)} "
                f"(any size at dim {d}), got {list(xs)} for tensor {i}"
            )
        total += xs[d]
        one_dtype = one_dtype and x.dtype is ref.dtype
        contig = contig and x._contig
    dt = ref.dtype if one_dtype else result_type(*parts)
    out = empty_tensor(head + (total,) + tail, dt)
    if one_dtype and contig:  # every input is rows of its memory: one C call, no descriptors
        inner = math.prod(tail)
        rc = lib.pf_cat_rows(
            dt.code,
            len(parts),
            [x._ptr for x in parts],
            [x._shape[d] * inner for x in parts],
            math.prod(head),
            out._ptr,
        )
        if rc:
            check(rc)
    else:
        start, step = 0, out._strides[d] * dt.itemsize
        for x in parts:
            n = x._shape[d]
            if n:  # a descriptor of out's slab, no view object
                check(lib.pf_copy(x._d(), desc(out._ptr + start * step, dt.code, x._shape, out._strides)))
            start += n
    if _grad_mode.enabled and any(x.requires_grad for x in parts):
        sizes = [x._shape[d] for x in parts]

        def backward(g):
            return tuple(
                to(gi, x.dtype) if x.requires_grad else None for gi, x in zip(split(g, sizes, d), parts, strict=True)
            )

        record("CatBackward0", backward, parts, out)
    return out


def _cat_lean(tensors, dim: int):
    """cat of contiguous tensors of one dtype and rank, none needing a gradient: one pass of
    checks, one allocation, one C call. None when the general path must decide (or raise)."""
    ref = tensors[0]
    if type(ref) is not Tensor:
        return None
    shape, dt = ref._shape, ref.dtype
    nd = len(shape)
    if not nd or not -nd <= dim < nd or (ref._requires_grad and _grad_mode.enabled):
        return None
    d = dim % nd
    head, tail = shape[:d], shape[d + 1 :]
    outer = math.prod(head) if d else 1
    total, ptrs, widths = 0, [], []
    for x in tensors:
        if type(x) is not Tensor or x.dtype is not dt or not x._contig or x._requires_grad:
            return None
        xs = x._shape
        if len(xs) != nd or (d and xs[:d] != head) or xs[d + 1 :] != tail:
            return None
        total += xs[d]
        ptrs.append(x._ptr)
        widths.append(x._numel // outer if outer else 0)
    out = empty_tensor(head + (total,) + tail, dt)
    rc = lib.pf_cat_rows(dt.code, len(ptrs), ptrs, widths, outer, out._ptr)
    if rc:
        check(rc)
    return out


def stack(tensors: Sequence[Tensor], dim: int = 0) -> Tensor:
    """Same as torch.stack: tensors of equal shape joined along a new dim ``dim``.

    Args:
        tensors: a non-empty sequence of tensors of the same shape (ShapeError otherwise).
        dim: where the new dim goes, in ``[-(ndim + 1), ndim]``.

    Returns:
        A new tensor (dtypes promoted as ``cat`` does).
    """
    tensors = list(tensors)
    if not tensors:
        raise ValueError("stack: expected a non-empty list of tensors")
    first = tensors[0]._shape
    for i, x in enumerate(tensors):
        if x._shape != first:
            raise ShapeError(
                f"stack expects each tensor to be equal size, but got {list(first)} at entry 0 and "
                f"{list(x._shape)} at entry {i}"
            )
    d = normalize_dim(dim, len(first) + 1)
    return cat([unsqueeze(x, d) for x in tensors], d)


def split(tensor: Tensor, split_size_or_sections, dim: int = 0) -> tuple:
    """Same as torch.split: views of size ``split_size`` (last may be smaller) or given sections."""
    _needs_dims(tensor, "split")
    d = normalize_dim(dim, tensor.ndim)
    size = tensor._shape[d]
    split_size_or_sections = as_number(split_size_or_sections)
    if isinstance(split_size_or_sections, (list, tuple)):
        split_size_or_sections = [as_number(n) for n in split_size_or_sections]
    if isinstance(split_size_or_sections, int) and not isinstance(split_size_or_sections, bool):
        step = split_size_or_sections
        if step <= 0:
            raise ValueError(f"split: split_size must be positive, got {step}")
        sections = [min(step, size - s) for s in range(0, size, step)] or [0]
    else:
        if not isinstance(split_size_or_sections, (list, tuple)) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in split_size_or_sections
        ):
            raise TypeError(
                f"split: split_size_or_sections must be an int or a list of ints, got {split_size_or_sections!r}"
            )
        sections = list(split_size_or_sections)
        if sum(sections) != size or any(s < 0 for s in sections):
            raise ShapeError(f"split: sections {sections} don't sum to the size {size} of dimension {d}")
    return _split_views(tensor, d, sections)


def _split_views(tensor: Tensor, d: int, sections: list) -> tuple:
    """The views of ``sections`` along ``d`` as one node, as torch's SplitBackward0: its
    backward is one cat of the pieces' gradients (zeros where none flowed), where a node
    per view would add a zero-padded full-size gradient per piece."""
    record_split = tensor.requires_grad and _grad_mode.enabled
    out, start = [], 0
    with _grad_mode.set_grad_enabled(not record_split):
        for n in sections:
            out.append(narrow(tensor, d, start, n))
            start += n
    if record_split and len(out) > 1:
        shapes, dt = [o._shape for o in out], tensor.dtype  # not the views: out -> node -> out would be a cycle

        def backward(*grads):
            parts = [g if g is not None else zeros_of(sh, dt) for g, sh in zip(grads, shapes, strict=False)]
            parts += [zeros_of(sh, dt) for sh in shapes[len(parts) :]]
            return (cat(parts, d),)

        record("SplitBackward0", backward, (tensor,), out)
    elif record_split:  # one piece: the view itself
        out = [narrow(tensor, d, 0, sections[0])]
    return tuple(out)


def chunk(input: Tensor, chunks: int, dim: int = 0) -> tuple:
    """Same as torch.chunk: ``input`` split along ``dim`` into at most ``chunks`` views of equal size (the last may be
    smaller).
    """
    _needs_dims(input, "chunk")
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    size = input._shape[normalize_dim(dim, input.ndim)]
    return split(input, max(-(-size // chunks), 1), dim)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    """Same as torch.unbind: the tuple of views ``input.select(dim, i)`` for every ``i``."""
    _needs_dims(input, "unbind")
    d = normalize_dim(dim, input.ndim)
    return tuple(select(input, d, i) for i in range(input._shape[d]))


concat = concatenate = cat


_cat_rows = lib.pf_cat_rows


_cat2 = lib.pf_cat2
