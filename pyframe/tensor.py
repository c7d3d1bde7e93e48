"""The Tensor type: metadata over C-owned storage, views, indexing, conversions and repr.

Math lives in ``pyframe.ops``; its functions are bound here as methods at the bottom,
so ``x.exp()`` and ``pyframe.exp(x)`` are the same function.
"""

from __future__ import annotations

import copy
import math
import mmap
import operator
import os
import sys
import tempfile
import warnings
import weakref
from collections.abc import Iterator, Sequence

import numpy as np

from pyframe import _device, _dtype, _grad_mode
from pyframe._backend import SMALL_BYTES, ShapeError, alloc, alloc_small, check, desc, ffi, lib
from pyframe._dtype import dtype
from pyframe._format import format_tensor

MAX_DIMS = 8


class Size(tuple):
    """A tensor's shape: a tuple of ints, printed like PyTorch's."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"pyframe.Size({list(self)})"

    def numel(self) -> int:
        """Same as torch.Size.numel: the number of elements of a tensor of this shape (1 for ``()``)."""
        return math.prod(self)

    # torch.Size stays a Size through slicing, concatenation and repetition (``x.shape[1:]``, ``(n,) + x.shape``)
    def __getitem__(self, key):
        got = tuple.__getitem__(self, key)
        return Size(got) if isinstance(key, slice) else got

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__


class Storage:
    """A block of tensor memory: C-allocated, or a NumPy array's buffer kept alive by ``owner``."""

    __slots__ = ("data", "nbytes", "owner", "version")

    def __init__(self, data, nbytes: int, owner=None):
        self.data = data
        self.nbytes = nbytes
        self.owner = owner
        self.version = 0


class MetaStorage(Storage):
    """The storage of a meta tensor: a size and no memory (``data`` is NULL)."""

    __slots__ = ()

    @staticmethod
    def view_class(cls: type) -> type:
        """A view of a meta tensor is a meta tensor (of the class asked for)."""
        return meta_class(cls)


class _Export:
    """An exported view's NumPy base: it holds the Storage (and so whatever owns the memory:
    the C block or the wrapped array) for as long as any array made from it exists."""

    __slots__ = ("storage", "__array_interface__")

    def __init__(self, t: Tensor):
        self.storage = t._storage
        isz = t.dtype.itemsize
        self.__array_interface__ = {
            "version": 3,
            "shape": t._shape,
            "typestr": t.dtype.np.str,
            "data": (int(ffi.cast("uintptr_t", t._ptr)), False),
            "strides": tuple(s * isz for s in t._strides),
        }


def channels_last_dense(shape: Sequence[int], strides: Sequence[int], rank: int) -> bool:
    """torch's channels-last contiguity of a ``rank``-d (4 or 5) layout: dense with the channel dim innermost,
    then the spatial dims from the last, then the batch dim; dims of size 1 may have any stride."""
    if len(shape) != rank:
        return False
    expected = 1
    for d in (1, *range(rank - 1, 1, -1), 0):
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def contiguous_strides(shape: Sequence[int]) -> tuple:
    strides, s = [], 1
    for n in reversed(shape):
        strides.append(s)
        s *= max(n, 1)
    return tuple(reversed(strides))


def check_ndim(shape: Sequence[int]) -> None:
    if len(shape) > MAX_DIMS:
        raise ValueError(f"tensors have at most {MAX_DIMS} dims, got {len(shape)} (shape {list(shape)})")


def normalize_dim(dim: int, ndim: int) -> int:
    """A dim in [-ndim, ndim) as a non-negative index; 0-d tensors accept -1 and 0 like PyTorch."""
    n = max(ndim, 1)
    if type(dim) is not int:
        if isinstance(dim, bool) or not hasattr(type(dim), "__index__"):
            raise TypeError(f"dim must be an int, got {type(dim).__name__}")
        dim = operator.index(dim)  # numpy's integers, as torch takes them
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def _new(storage: Storage, shape: tuple, strides: tuple, offset: int, dt: dtype, cls: type | None = None) -> Tensor:
    """A tensor (or ``cls``, a Tensor subclass) over ``storage``: a leaf outside autograd."""
    if storage.__class__ is not Storage:  # no memory (meta, sparse): the storage says what a view of it is
        cls = storage.view_class(cls or Tensor)
    t = object.__new__(cls or Tensor)
    t._storage = storage
    t._shape = shape
    t._strides = strides
    t._offset = offset
    t.dtype = dt
    t._ptr = storage.data + offset * dt.itemsize if offset else storage.data
    lay = _LAYOUTS.get(shape) or layout(shape, False)
    t._numel = lay[1]
    t._contig = strides == lay[0] if lay[1] > 1 else True
    # no descriptor yet, and the autograd fields empty (inline: these two constructors are every op's hot path)
    t._desc = t._grad = t.grad_fn = t._base = t._grad_edge = None
    t._requires_grad = t._retains_grad = False
    t._output_nr = t._grad_version = 0
    return t


_object_new = object.__new__


def fresh(data, nbytes: int, shape: tuple, strides: tuple, numel: int, dt: dtype) -> Tensor:
    """A tensor over newly allocated contiguous memory, for the ops' fast paths: the
    caller already knows every field, so nothing is recomputed."""
    st = _object_new(Storage)
    st.data = data
    st.nbytes = nbytes
    st.owner = None
    st.version = 0
    t = _object_new(Tensor)
    t._storage = st
    t._shape = shape
    t._strides = strides
    t._offset = 0
    t.dtype = dt
    t._ptr = data
    t._numel = numel
    t._contig = True
    # no descriptor yet, and the autograd fields empty (inline: these two constructors are every op's hot path)
    t._desc = t._grad = t.grad_fn = t._base = t._grad_edge = None
    t._requires_grad = t._retains_grad = False
    t._output_nr = t._grad_version = 0
    return t


_MEMORY_SLOTS = ("_storage", "_shape", "_strides", "_offset", "dtype", "_ptr", "_numel", "_contig", "_desc")


def set_data(t: Tensor, new: Tensor) -> None:
    """Rebinds ``t`` to ``new``'s memory, shape and dtype, keeping the ``t`` object (and so its
    identity in optimizers and hooks): what ``t.data = new`` does. A meta tensor given memory
    (``Module.to_empty``) becomes an ordinary one of its class, and the other way round."""
    if t.is_meta is not new.is_meta:
        t.__class__ = meta_class(type(t)) if new.is_meta else type(t).__mro__[1]
    for name in _MEMORY_SLOTS:
        if name == "_ptr" and new.is_meta:
            continue
        object.__setattr__(t, name, getattr(new, name))


def layout(shape: tuple, strict: bool = True) -> tuple:
    """(contiguous strides, element count) of ``shape``, validated and cached: every op's
    output and every view needs them, and a training loop sees the same few shapes.
    ``strict=False`` (views, which may be expanded past what memory could hold): a shape
    whose contiguous strides overflow int64 is answered but not cached, unless its element count
    itself overflows int64, which no tensor may have (refused, naming the shape)."""
    lay = _LAYOUTS.get(shape)
    if lay is not None:
        return lay
    if len(shape) > MAX_DIMS:
        check_ndim(shape)
    lay = (contiguous_strides(shape), math.prod(shape))
    if math.prod(max(k, 1) for k in shape) > _INT64_MAX:  # strides, even of a 0-element tensor, are int64 in C
        if not strict and lay[1] <= _INT64_MAX:
            return lay
        if not strict:  # every tensor and view is made through here: an element count past int64 never exists
            raise ValueError(f"shape {list(shape)} has {lay[1]} elements, more than int64 can count "
                             f"({_INT64_MAX})")  # fmt: skip
        raise ValueError(
            f"shape {list(shape)} is too large: its strides would exceed {_INT64_MAX} elements (the core's int64 limit)"
        )
    if len(_LAYOUTS) >= _LAYOUTS_MAX:  # a program of ever-new shapes: start over rather than grow
        _LAYOUTS.clear()
    _LAYOUTS[shape] = lay
    return lay


_LAYOUTS: dict[tuple, tuple] = {}
_LAYOUTS_MAX = 4096
_INT_TYPES = [(int,) * k for k in range(MAX_DIMS + 1)]  # what tuple(map(type, shape)) is for a shape of plain ints


def empty_tensor(shape: tuple, dt: dtype) -> Tensor:
    """A new contiguous tensor with uninitialised C memory."""
    if type(shape) is not tuple:
        shape = tuple(shape)
    strides, n = _LAYOUTS.get(shape) or layout(shape)
    nbytes = n * dt.itemsize
    if nbytes < SMALL_BYTES:
        data = alloc_small("char[]", nbytes or 1)
    else:
        if nbytes >= 1 << 62:
            raise MemoryError(f"a tensor of shape {list(shape)} and dtype {dt.name} would need {nbytes} bytes")
        data = alloc(nbytes)
    return fresh(data, nbytes, shape, strides, n, dt)


_INT64_MAX = 2**63 - 1


def as_shape(size) -> tuple:
    """Shape from ``f(2, 3)``, ``f((2, 3))`` or ``f([2, 3])`` style arguments."""
    shape = _int_args(size, "sizes")
    for n in shape:
        if n < 0:
            raise ValueError(f"negative dimension {n} in size {list(shape)}")
    return shape


class Tensor:
    """A strided N-d array in C memory. Same as torch.Tensor, CPU only, at most 8 dims."""

    # a dict: its values are the docstrings of the public slots (what help() and the API reference show)
    __slots__ = dict.fromkeys((
        "_storage", "_shape", "_strides", "_offset", "dtype", "_ptr", "_numel", "_contig", "_desc",
        "_requires_grad", "_grad", "grad_fn", "_output_nr", "_retains_grad", "_base", "_grad_version", "__weakref__",
        "_grad_edge",  # a leaf's (AccumulateGrad, 0), set by autograd at its first recorded use
        "__dict__",  # attributes programs set on a tensor or parameter (``p.no_decay = True``), as torch allows
    )) | {
        "dtype": "Same as torch.Tensor.dtype: the element type (a ``pyframe.dtype``, e.g. ``pyframe.float32``).",
        "grad_fn": "Same as torch.Tensor.grad_fn: the autograd node that made this tensor (None for a leaf).",
    }  # fmt: skip

    is_meta = False  # Same as torch.Tensor.is_meta: True for a tensor with a shape and no memory (device "meta")
    is_sparse = False  # Same as torch.Tensor.is_sparse: True for a sparse COO tensor (pyframe.ops.sparse)
    is_sparse_csr = False  # True for a sparse CSR matrix (pyframe.ops.sparse_csr)

    def __new__(cls, *args, **kwargs):
        raise TypeError("create tensors with pyframe.tensor(), pyframe.zeros() and the other factories")

    # ---- metadata -------------------------------------------------------------------

    def _set_requires_grad(self, value: bool) -> None:
        if value and not self.dtype.is_floating_point:
            raise RuntimeError(f"only Tensors of floating point dtype can require gradients, got {self.dtype.name}")
        self._requires_grad = bool(value)

    # a C getter keeps the read as cheap as a slot's; only assignment is checked
    requires_grad = property(operator.attrgetter("_requires_grad"), _set_requires_grad)

    @property
    def shape(self) -> Size:
        """Same as torch.Tensor.shape: the sizes of the dims, as a ``pyframe.Size`` (a tuple)."""
        return Size(self._shape)

    def size(self, dim: int | None = None):
        """Same as torch.Tensor.size: the shape as a ``Size``, or the size of one dim (negative counts from the end)."""
        if dim is None:
            return Size(self._shape)
        return self._shape[normalize_dim(dim, len(self._shape))]

    @property
    def ndim(self) -> int:
        """Same as torch.Tensor.ndim: the number of dims (0 for a scalar tensor; at most 8 in pyframe)."""
        return len(self._shape)

    def dim(self) -> int:
        """Same as torch.Tensor.dim: the number of dims."""
        return len(self._shape)

    def numel(self) -> int:
        """Same as torch.Tensor.numel: the number of elements (``nelement`` is the same method)."""
        return self._numel

    nelement = numel  # torch's older name, used by its pruning tutorial

    def stride(self, dim: int | None = None):
        """Same as torch.Tensor.stride: the strides in elements (a tuple), or the stride of one dim."""
        if dim is None:
            return self._strides
        return self._strides[normalize_dim(dim, len(self._shape))]

    def storage_offset(self) -> int:
        """Same as torch.Tensor.storage_offset: where the first element is in the storage, in elements."""
        return self._offset

    def element_size(self) -> int:
        """Same as torch.Tensor.element_size: the size of one element in bytes."""
        return self.dtype.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        """Same as torch.Tensor.is_contiguous: dense in ``memory_format`` (default ``contiguous_format``: row-major;
        ``channels_last``/``channels_last_3d``: the channel dim innermost); dims of size 1 may have any stride."""
        name = "contiguous_format" if memory_format is None else str(memory_format).rpartition(".")[2]
        if name != "contiguous_format":
            if name not in ("channels_last", "channels_last_3d"):
                raise RuntimeError(f"is_contiguous: memory_format {memory_format!r} is not a layout to check")
            return channels_last_dense(self._shape, self._strides, 4 if name == "channels_last" else 5)
        if self._contig:
            return True
        expected = 1
        for n, s in zip(reversed(self._shape), reversed(self._strides), strict=True):
            if n != 1:
                if s != expected:
                    return False
                expected *= n
        return True

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient. Assigning is checked as torch does: a Tensor of this tensor's
        shape and dtype, or None (``t.grad = 0.`` is a TypeError, a wrong shape or dtype a RuntimeError)."""
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type {type(value).__name__}"
                )
            if value._shape != self._shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size {list(value._shape)} to a tensor of size "
                    f"{list(self._shape)}. Please ensure that the gradient and the tensor are the same size"
                )
            if value.dtype is not self.dtype:
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype {value.dtype.name} to a tensor of dtype "
                    f"{self.dtype.name}; the gradient must have the tensor's dtype"
                )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def is_leaf(self) -> bool:
        """Same as torch.Tensor.is_leaf: True for a tensor no recorded operation made (``grad_fn`` is None)."""
        return self.grad_fn is None

    @property
    def device(self) -> _device.device:
        """Same as torch.Tensor.device: always ``device("cpu")``."""
        return _device.CPU

    def data_ptr(self) -> int:
        """Same as torch.Tensor.data_ptr: the address of the first element, as an int."""
        return int(ffi.cast("uintptr_t", self._ptr))

    def _d(self):
        """This tensor's C descriptor, built once: shape, strides and data never change."""
        d = self._desc
        if d is None:
            d = self._desc = desc(self._ptr, self.dtype.code, self._shape, self._strides)
        return d

    def _write_check(self, same_value: bool = False) -> None:
        """Every in-place write starts here. PyTorch's rule: a leaf that requires grad may be
        written in place only under no_grad. And an expanded (stride-0) view would have each of
        its shared elements written several times from different sources: refused unless every
        element gets the same value (``same_value``: fill_, zero_)."""
        if self.requires_grad and self.grad_fn is None and _grad_mode.enabled:
            raise RuntimeError(
                "a leaf Variable that requires grad is being used in an in-place operation; "
                "wrap the write in `with pyframe.no_grad():`"
            )
        if not self._contig and not same_value and 0 in self._strides:
            for n, s in zip(self._shape, self._strides, strict=True):
                if s == 0 and n > 1:
                    raise RuntimeError(
                        "unsupported operation: more than one element of the written-to tensor refers to a single "
                        f"memory location (shape {list(self._shape)}, strides {list(self._strides)}, e.g. from "
                        "expand()). Please clone() the tensor before performing the operation."
                    )

    def _bump(self) -> None:
        """Record an in-place write (autograd's saved-tensor check reads the version)."""
        self._storage.version += 1

    @property
    def _version(self) -> int:
        return self._storage.version

    @property
    def data(self) -> Tensor:
        """A tensor sharing this one's memory, outside autograd. Assigning a tensor rebinds this
        one to the other's memory, shape and dtype, keeping its identity (same as torch)."""
        return _new(self._storage, self._shape, self._strides, self._offset, self.dtype)

    @data.setter
    def data(self, new: Tensor) -> None:
        if not isinstance(new, Tensor):
            raise TypeError(f"data must be a Tensor, got {type(new).__name__}")
        set_data(self, new)

    # ---- views ----------------------------------------------------------------------

    def _view(self, shape: tuple, strides: tuple, offset: int | None = None) -> Tensor:
        check_ndim(shape)
        return _new(self._storage, tuple(shape), tuple(strides), self._offset if offset is None else offset, self.dtype)

    def _infer_shape(self, shape: tuple) -> tuple:
        shape = list(shape)
        unknown = [i for i, n in enumerate(shape) if n == -1]
        if len(unknown) > 1:
            raise ShapeError(f"only one dimension can be inferred, got shape {shape}")
        for n in shape:
            if n < -1:
                raise ShapeError(f"invalid shape dimension {n} in {shape}")
        known = math.prod(n for n in shape if n != -1)
        if unknown:
            if known == 0 or self._numel % known:
                raise ShapeError(f"shape {shape} is invalid for input of size {self._numel}")
            shape[unknown[0]] = self._numel // known
        elif known != self._numel:
            raise ShapeError(f"shape {shape} is invalid for input of size {self._numel}")
        return tuple(shape)

    def _view_strides(self, shape: tuple) -> tuple | None:
        """Strides that express ``shape`` over this tensor's memory without a copy, or None.

        PyTorch's computeStride: walk the old dims from the back in chunks that are
        contiguous among themselves; each chunk must be split exactly by new dims."""
        if self._contig or not self._shape:
            return contiguous_strides(shape)
        old_shape, old_strides = self._shape, self._strides
        new_strides = [0] * len(shape)
        view_d = len(shape) - 1
        chunk_base = old_strides[-1]
        tensor_numel = view_numel = 1
        for d in range(len(old_shape) - 1, -1, -1):
            tensor_numel *= old_shape[d]
            if d == 0 or (old_shape[d - 1] != 1 and old_strides[d - 1] != tensor_numel * chunk_base):
                while view_d >= 0 and (view_numel < tensor_numel or shape[view_d] == 1):
                    new_strides[view_d] = view_numel * chunk_base
                    view_numel *= shape[view_d]
                    view_d -= 1
                if view_numel != tensor_numel:
                    return None
                if d > 0:
                    chunk_base = old_strides[d - 1]
                    tensor_numel = view_numel = 1
        return tuple(new_strides) if view_d == -1 else None

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Tensor:
        """Same as torch.Tensor.flatten: dims ``start_dim`` to ``end_dim`` merged into one (a view when the strides
        allow
        it, as ``reshape``); a 0-d tensor becomes 1-d.
        """
        if self.ndim == 0:
            return self.reshape(1)
        s, e = normalize_dim(start_dim, self.ndim), normalize_dim(end_dim, self.ndim)
        if s > e:
            raise ValueError(f"flatten() has invalid args: start_dim {start_dim} cannot come after end_dim {end_dim}")
        return self.reshape(self._shape[:s] + (-1,) + self._shape[e + 1 :])

    def view_as(self, other: Tensor) -> Tensor:
        """Same as torch.Tensor.view_as: ``self.view(other.shape)``."""
        return self.view(other._shape)

    def reshape_as(self, other: Tensor) -> Tensor:
        """Same as torch.Tensor.reshape_as: ``self.reshape(other.shape)``."""
        return self.reshape(other._shape)

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._shape[0]))

    # ---- conversions ----------------------------------------------------------------

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A NumPy array sharing this tensor's memory (any strides). Same as torch.Tensor.numpy: NumPy has no
        bfloat16, so a bfloat16 tensor raises (convert it with ``.float()`` first). ``force=True`` is
        ``detach().resolve_conj().resolve_neg().numpy()``: it works on a tensor that requires grad."""
        if force:
            return self.detach().resolve_conj().resolve_neg().numpy()
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if self.dtype is _dtype.bfloat16:
            raise TypeError("Got unsupported ScalarType BFloat16: NumPy has no bfloat16; use .float().numpy()")
        return self._elements()

    def _elements(self) -> np.ndarray:
        """The elements as a NumPy array sharing this tensor's memory, a bfloat16 tensor's as their uint16 bit
        patterns: for code that moves bytes (serialization, pickling), never for arithmetic."""
        st = self._storage
        if not st.nbytes:
            return np.ndarray(self._shape, dtype=self.dtype.np, buffer=bytearray(1), strides=(0,) * len(self._shape))
        if st.owner is None:  # C memory: cffi's buffer keeps the owning cdata (and so the block) alive
            isz = self.dtype.itemsize
            return np.ndarray(
                self._shape, dtype=self.dtype.np, buffer=ffi.buffer(st.data, st.nbytes), offset=self._offset * isz,
                strides=tuple(s * isz for s in self._strides),
            )  # fmt: skip
        # memory someone else owns (a NumPy array): the array's base is an _Export holding the Storage,
        # which holds the owner, so the memory outlives every view
        return np.asarray(_Export(self))

    def item(self):
        """Same as torch.Tensor.item: the value of a one-element tensor as a Python number (RuntimeError otherwise)."""
        if self._numel != 1:
            raise RuntimeError(f"a Tensor with {self._numel} elements cannot be converted to Scalar")
        code = self.dtype.code
        ctype = _ITEM_CTYPES[code]
        if ctype is None:  # float16, bfloat16: widened to float32 (exactly) first
            return self.detach().to(_dtype.float32).numpy().reshape(()).item()
        v = ffi.cast(ctype, self._ptr)[0]  # already a Python float or int
        return v != 0 if code == _BOOL_CODE else v

    def tolist(self):
        """Same as torch.Tensor.tolist: the elements as (nested) Python lists of numbers; a 0-d tensor gives a
        number.
        """
        if self.dtype is _dtype.bfloat16:  # every bfloat16 is a float32 exactly
            return self.detach().to(_dtype.float32).numpy().tolist()
        return self.detach().numpy().tolist()

    def _python_scalar(self):
        # float(), int(), complex(): torch raises ValueError here (item() raises RuntimeError)
        if self._numel != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self) -> float:
        return float(self._python_scalar())

    def __int__(self) -> int:
        return int(self._python_scalar())

    def __complex__(self) -> complex:
        return complex(self._python_scalar())

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.dtype is _dtype.bool_ or self._numel != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __bool__(self) -> bool:
        if self._numel != 1:
            many = "no values" if self._numel == 0 else "more than one value"
            raise RuntimeError(f"Boolean value of Tensor with {many} is ambiguous")
        return bool(self.item())

    # numpy's operators defer to ours (np.float64(0.9) * t is a Tensor, as in torch, not an ndarray)
    __array_priority__ = 1000

    def __array__(self, dtype=None, copy=None):
        arr = self.detach().numpy()
        return arr.astype(dtype) if dtype is not None else arr

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """numpy's functions on a tensor give a tensor (``np.exp(t)``), as in torch; a bool result comes back as
        uint8, as torch's does."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        return from_numpy(np.ascontiguousarray(array) if array.ndim else array.reshape(()))

    __hash__ = object.__hash__

    def __reduce_ex__(self, protocol):
        # the attributes a program set travel as the pickle's state (applied to the rebuilt tensor's __dict__)
        return (
            _rebuild,
            (self.detach()._elements().copy(), self.requires_grad, self.dtype.name),
            self.__dict__ or None,
        )

    # ---- shared memory (torch.multiprocessing) ------------------------------------------

    def is_shared(self) -> bool:
        """Same as torch.Tensor.is_shared: whether this tensor's storage is in shared memory."""
        return isinstance(self._storage.owner, SharedBlock)

    def share_memory_(self) -> Tensor:
        """Same as torch.Tensor.share_memory_: move the storage into shared memory (an mmap'd shared-memory
        file), so processes this tensor is sent to (``pyframe.multiprocessing``) or forked into write the same
        memory. A no-op when already shared. pyframe moves a storage only when this tensor alone
        uses it: other views hold the old memory's address (share the base tensor instead)."""
        if self.is_shared():
            return self
        st = self._storage
        if st.owner is not None or sys.getrefcount(st) > 3:  # the slot, ``st`` and getrefcount's argument
            raise RuntimeError(
                f"share_memory_: the storage of this tensor ({st.nbytes} bytes) is also used by other tensors "
                "(views) or a NumPy array, whose memory cannot follow it; call share_memory_() on the base tensor "
                "before taking views, or share a clone()"
            )
        self._storage = shared_copy(st, self.dtype)
        self._ptr = self._storage.data + self._offset * self.dtype.itemsize
        self._desc = None
        return self

    def __deepcopy__(self, memo):
        out = self.detach().clone()
        out.requires_grad = self.requires_grad
        memo[id(self)] = out
        if self.__dict__:
            out.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return out

    def __repr__(self) -> str:
        return format_tensor(self)

    def __format__(self, spec: str) -> str:
        # as torch: a 0-d tensor formats as its number ("{} %".format(acc) prints 4.6875, not tensor(4.6875)),
        # any other prints as its repr and refuses a format spec
        if self.ndim == 0:
            return format(self.item(), spec)
        if spec:
            raise TypeError("unsupported format string passed to Tensor.__format__")
        return repr(self)


def _no_data(self, *args):
    raise NotImplementedError(
        f"a meta tensor (shape {list(self._shape)}, {self.dtype.name}) has no memory: pyframe computes nothing on "
        "meta tensors; give a module memory with to_empty(device='cpu') or load_state_dict(..., assign=True)"
    )


class MetaTensor(Tensor):
    """A tensor on the ``meta`` device: shape, strides and dtype without memory. Views and in-place
    initialisers (``uniform_``, ``fill_``, ``copy_`` into it, ``nn.init``) work and change nothing; any op that
    would read or write elements raises NotImplementedError (torch computes meta shapes; pyframe does not)."""

    __slots__ = ()
    is_meta = True
    _ptr = property(_no_data, lambda self, value: None)
    _d = _no_data
    numpy = _no_data
    item = _no_data
    tolist = _no_data

    @property
    def device(self) -> _device.device:
        """``device("meta")``."""
        return _device.META

    def data_ptr(self) -> int:
        """0: a meta tensor has no memory."""
        return 0

    def __repr__(self) -> str:
        extra = ", requires_grad=True" if self.requires_grad else ""
        dt = "" if self.dtype is _dtype.get_default_dtype() else f", dtype=pyframe.{self.dtype.name}"
        return f"tensor(..., device='meta', size={tuple(self._shape)}{dt}{extra})"


_META_CLASSES: dict = {}
_NULL = ffi.cast("char *", 0)


def meta_class(cls: type) -> type:
    """The meta variant of a Tensor class (``MetaTensor`` for Tensor; for a subclass such as Parameter, one
    deriving from both, so ``isinstance(p, Parameter)`` holds)."""
    if cls is Tensor or cls is MetaTensor or issubclass(cls, MetaTensor):
        return MetaTensor if cls is Tensor else cls
    meta = _META_CLASSES.get(cls)
    if meta is None:
        meta = _META_CLASSES[cls] = type(cls.__name__, (cls, MetaTensor), {"__slots__": (), "__doc__": cls.__doc__,
                                                                          "__module__": cls.__module__})  # fmt: skip
    return meta


def meta_tensor(shape: tuple, dt: dtype) -> Tensor:
    """A new contiguous meta tensor."""
    strides, n = layout(shape)
    return _new(MetaStorage(_NULL, n * dt.itemsize), shape, strides, 0, dt)


# item() reads the element through cffi (a NumPy round trip costs five times as much), the pointer type by dtype
# code; float16 and bfloat16 have none (widened first)
_ITEM_CTYPES = ("float *", "double *", None, "int64_t *", "int32_t *", "uint8_t *", "uint8_t *", "int8_t *",
                "int16_t *", None)  # fmt: skip
_BOOL_CODE = _dtype.bool_.code


def _int_args(shape, what: str = "shape entries") -> tuple:
    """Ints from ``f(2, 3)``, ``f((2, 3))`` or ``f([2, 3])`` style arguments (-1 allowed: views infer it)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list, Size)):
        shape = shape[0]
    out = []
    for n in shape:
        if isinstance(n, Tensor):
            n = n.item()
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"{what} must be ints, got {type(n).__name__} in {list(shape)}")
        out.append(int(n))
    check_ndim(out)
    return tuple(out)


class SharedBlock:
    """The memory of a shared storage: an anonymous shared-memory file (``memfd_create``; elsewhere a file in
    ``/dev/shm`` unlinked at once) mapped read-write (``MAP_SHARED``), so every process holding its file
    descriptor (forked, or handed a duplicate through multiprocessing, torch's ``file_descriptor`` strategy)
    reads and writes the same pages. The descriptor closes when the block is collected; the memory goes when
    the last process lets go of it, and nothing is left behind in the file system."""

    __slots__ = ("fd", "map", "nbytes", "__weakref__")

    def __init__(self, nbytes: int, fd: int | None = None):
        if fd is None:
            fd = _anonymous_file()
            try:
                os.ftruncate(fd, max(nbytes, 1))
            except OSError:
                os.close(fd)
                raise
        self.fd, self.nbytes = fd, nbytes
        self.map = mmap.mmap(fd, max(nbytes, 1))
        weakref.finalize(self, os.close, fd)


def _anonymous_file() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("pyframe", os.MFD_CLOEXEC)
    fd, path = tempfile.mkstemp(prefix="pyframe_", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    os.unlink(path)
    return fd


def shared_copy(st: Storage, dt: dtype) -> Storage:
    """A new Storage in shared memory holding ``st``'s bytes (copied by the core, as ``dt`` elements)."""
    block = SharedBlock(st.nbytes)
    new = Storage(ffi.from_buffer("char[]", block.map), st.nbytes, owner=block)
    if st.nbytes:
        count = (st.nbytes // dt.itemsize,)
        check(lib.pf_copy(desc(st.data, dt.code, count, (1,)), desc(new.data, dt.code, count, (1,))))
    new.version = st.version
    return new


def shared_handle(t: Tensor) -> tuple:
    """``t``'s shared storage as (file descriptor, bytes) and its view (shape, strides, offset, dtype code): what
    ``rebuild_shared`` needs once the descriptor has been duplicated into another process."""
    return (t._storage.owner.fd, t._storage.nbytes, t._shape, t._strides, t._offset, t.dtype.code)


def rebuild_shared(fd: int, nbytes: int, shape: tuple, strides: tuple, offset: int, code: int) -> Tensor:
    """A tensor over the shared memory behind ``fd`` (a descriptor this process now owns)."""
    block = SharedBlock(nbytes, fd)
    st = Storage(ffi.from_buffer("char[]", block.map), nbytes, owner=block)
    return _new(st, tuple(shape), tuple(strides), offset, _dtype.BY_CODE[code])


def _rebuild(arr: np.ndarray, requires_grad: bool, dtype_name: str | None = None) -> Tensor:
    # bfloat16 travels as its uint16 bit patterns
    t = (share_numpy(arr, _dtype.bfloat16) if dtype_name == "bfloat16" else from_numpy(arr)).clone()
    t.requires_grad = requires_grad
    return t


def from_numpy(arr: np.ndarray) -> Tensor:
    """A tensor sharing ``arr``'s memory; the array is kept alive, not copied.
    A read-only array is copied (with a warning) so that no write can reach read-only memory."""
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray, got {type(arr).__name__}")
    dt = _dtype.from_numpy_dtype(arr.dtype)
    check_ndim(arr.shape)
    isz = dt.itemsize
    if any(s < 0 for s in arr.strides):
        raise ValueError(
            f"the given NumPy array has negative strides {arr.strides}; they are not supported, "
            "copy the array first (np.ascontiguousarray)"
        )
    if any(s % isz for s in arr.strides):
        raise ValueError(f"the given NumPy array has strides {arr.strides} that are not multiples of {isz} bytes")
    if not arr.flags.writeable:
        # every in-place op and optimizer step writes through a tensor's memory, and writing to a
        # read-only mapping is a segfault: such an array is copied, never shared
        warnings.warn(
            "The given NumPy array is not writable; pyframe copies it (writes to the tensor do not reach the array)",
            UserWarning,
            stacklevel=2,
        )
        arr = arr.copy()
    return share_numpy(arr, dt)


def share_numpy(arr: np.ndarray, dt: dtype) -> Tensor:
    """A tensor over ``arr``'s memory, for a caller that only reads it (read-only arrays too)."""
    isz = dt.itemsize
    strides = tuple(s // isz for s in arr.strides)
    if arr.size:
        addr = arr.__array_interface__["data"][0]
        span = sum((n - 1) * s for n, s in zip(arr.shape, strides, strict=True)) + 1
        storage = Storage(ffi.cast("char *", addr), span * isz, owner=arr)
    else:
        storage = Storage(alloc(0), 0)
    return _new(storage, tuple(arr.shape), strides, 0, dt)


_ = (check, lib)  # re-exported helpers used by pyframe.ops
