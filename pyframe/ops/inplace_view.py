"""In-place shape ops: ``unsqueeze_``, ``squeeze_``, ``transpose_``, ``t_``, ``swapdims_``, ``resize_``,
``resize_as_``, ``as_strided_``.

A Tensor's metadata (shape, strides, offset) is rebound, never edited field by field: each op builds the
ordinary view (which records its node when autograd is on), then the tensor object takes over the view's
metadata and node, keeping its storage, its ``_base`` and its identity. The version counter is bumped, as
torch does: a node that saved this tensor read it under its old shape, so a later backward through that node
must raise instead of reading the new one.
"""

from __future__ import annotations

from pyframe import _grad_mode
from pyframe._backend import alloc, check, desc, lib
from pyframe.autograd.graph import node_class, record
from pyframe.ops import view
from pyframe.tensor import Storage, Tensor, _int_args, _new, check_ndim, layout, set_data

__all__ = ["resize_as_", "as_strided_"]


def _rebind(self: Tensor, new: Tensor, name: str) -> Tensor:
    """``self`` takes over ``new``'s metadata (same storage) and its autograd node, renamed ``name``."""
    fn = new.grad_fn
    set_data(self, new)
    self._storage.version += 1
    if fn is not None:  # the node the view recorded, under torch's name for the in-place form
        fn.__class__ = node_class(name)
        self.grad_fn = fn
        self._output_nr = 0
        self._grad_version = self._storage.version
    return self


def _shape_op(self: Tensor, out: Tensor, name: str) -> Tensor:
    return _rebind(self, out, name)


def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    """Same as torch.Tensor.unsqueeze_: a dim of size 1 inserted at ``dim``, in place (the storage is kept)."""
    self._write_check(True)
    return _shape_op(self, view.unsqueeze(self, dim), "UnsqueezeBackward1")


def squeeze_(self: Tensor, dim=None) -> Tensor:
    """Same as torch.Tensor.squeeze_: the dims of size 1 (among ``dim`` if given) removed, in place."""
    self._write_check(True)
    name = "SqueezeBackward3" if dim is None else "SqueezeBackward5" if isinstance(dim, (tuple, list)) else (
        "SqueezeBackward4")  # fmt: skip
    return _shape_op(self, view.squeeze(self, dim), name)


def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """Same as torch.Tensor.transpose_ (and ``swapdims_``/``swapaxes_``): two dims swapped, in place."""
    self._write_check(True)
    return _shape_op(self, view.transpose(self, dim0, dim1), "TransposeBackward1")


def swapdims_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """Same as torch.Tensor.swapdims_: ``transpose_``."""
    return transpose_(self, dim0, dim1)


def t_(self: Tensor) -> Tensor:
    """Same as torch.Tensor.t_: a tensor of at most 2 dims transposed in place."""
    self._write_check(True)
    return _shape_op(self, view.t(self), "TBackward1")


def as_strided_(self: Tensor, size, stride, storage_offset: int | None = None) -> Tensor:
    """Same as torch.Tensor.as_strided_: this tensor re-viewed in place with the given sizes, strides and offset
    over its own storage (every element reached must lie inside the storage)."""
    self._write_check(True)
    size, stride = _int_args((size,), "sizes"), _int_args((stride,), "strides")
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided_: mismatch in length of strides ({len(stride)}) and shape ({len(size)})")
    offset = self._offset if storage_offset is None else int(storage_offset)
    if offset < 0 or any(n < 0 for n in size) or any(s < 0 for s in stride):
        raise RuntimeError(
            f"as_strided_: sizes {list(size)}, strides {list(stride)} and storage offset {offset} must be non-negative"
        )
    _check_inside(self, size, stride, offset, "as_strided_")
    base_offset, base_shape, base_strides = self._offset, self._shape, self._strides
    out = _new(self._storage, size, stride, offset, self.dtype)
    out._base = self
    if self.requires_grad and _grad_mode.enabled:
        record("AsStridedBackward1", lambda g: (_strided_back(g, size, stride, offset, base_shape, base_strides,
                                                              base_offset),), (self,), out)  # fmt: skip
    return _rebind(self, out, "AsStridedBackward1")


def _check_inside(t: Tensor, size: tuple, stride: tuple, offset: int, what: str) -> None:
    need = 0 if 0 in size else (offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True)) + 1)
    have = t._storage.nbytes // t.dtype.itemsize
    if need > have:
        raise RuntimeError(
            f"{what}: setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset} and itemsize "
            f"{t.dtype.itemsize} require a storage of {need * t.dtype.itemsize} bytes, but the storage has "
            f"{t._storage.nbytes} bytes"
        )


def _strided_back(g, size, stride, offset, base_shape, base_strides, base_offset):
    """The gradient of an as_strided view back to its input: both laid over a zero buffer the size of the
    storage span they touch; elements reached twice add up (torch's as_strided_backward)."""
    lo = min(offset, base_offset)
    span = max(_span(size, stride, offset), _span(base_shape, base_strides, base_offset)) - lo
    flat = g.new_zeros(max(span, 0))
    flat.index_add_(0, _positions(g, size, stride, offset - lo), g.reshape(-1))
    return flat[_positions(g, base_shape, base_strides, base_offset - lo)].reshape(base_shape)


def _span(shape, strides, offset) -> int:
    if 0 in shape:
        return offset
    return offset + sum((n - 1) * s for n, s in zip(shape, strides, strict=True)) + 1


def _positions(g: Tensor, shape, strides, offset) -> Tensor:
    """The storage position of each element of a (shape, strides, offset) view, flattened in element order."""
    from pyframe.ops.creation import arange  # noqa: PLC0415 - creation is above view in the ops order

    pos = arange(offset, offset + 1, dtype=_int64()).reshape(())
    for n, s in zip(shape, strides, strict=True):
        pos = pos.unsqueeze(-1) + arange(n, dtype=_int64()) * s
    return pos.reshape(-1)


def _int64():
    from pyframe._dtype import int64  # noqa: PLC0415

    return int64


def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """Same as torch.Tensor.resize_: this tensor takes ``sizes`` with contiguous strides over its storage
    from its offset, keeping the elements there; a larger size grows the storage (new elements
    uninitialised). pyframe moves a storage only when this tensor alone uses it: growing one that views or
    NumPy arrays share raises, since their memory could not follow."""
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    if memory_format is not None and str(memory_format) not in ("torch.contiguous_format", "contiguous_format"):
        raise ValueError(f"resize_: memory_format {memory_format} is not supported (only contiguous_format)")
    shape = _int_args(sizes, "sizes")
    for n in shape:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(shape)}")
    check_ndim(shape)
    strides, n = layout(shape)
    isz = self.dtype.itemsize
    need = (self._offset + n) * isz if n else 0
    if need > self._storage.nbytes:
        _grow(self, need)
    out = _new(self._storage, shape, strides, self._offset, self.dtype)
    set_data(self, out)
    self._storage.version += 1
    return self


def _grow(t: Tensor, nbytes: int) -> None:
    """Move ``t`` onto a storage of ``nbytes`` holding the old bytes, when nothing else can see the old one."""
    import sys  # noqa: PLC0415

    st = t._storage
    # the tensor's slot, getrefcount's argument and this frame's name: anything more is another view
    if st.owner is not None or sys.getrefcount(st) > 3:
        raise RuntimeError(
            f"resize_: growing the storage to {nbytes} bytes (it has {st.nbytes}) needs memory that other tensors "
            "(views of it, or a NumPy array) share; pyframe cannot move their memory. Resize a clone() instead"
        )
    new = Storage(alloc(nbytes), nbytes)
    if st.nbytes:  # the old elements, as the tensor's own dtype (a storage holds one dtype)
        count = (st.nbytes // t.dtype.itemsize,)
        check(lib.pf_copy(desc(st.data, t.dtype.code, count, (1,)), desc(new.data, t.dtype.code, count, (1,))))
    new.version = st.version
    t._storage = new


def resize_as_(input: Tensor, the_template: Tensor, memory_format=None) -> Tensor:
    """Same as torch.resize_as_: ``input.resize_(the_template.shape)``."""
    if not isinstance(the_template, Tensor):
        raise TypeError(f"resize_as_(): the template must be a Tensor, got {type(the_template).__name__}")
    return resize_(input, the_template._shape, memory_format=memory_format)
