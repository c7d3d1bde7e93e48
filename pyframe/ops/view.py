"""Views, copies, joins and splits. Views share storage; only contiguous(), clone(), to()
and the joins copy, each with one C call per input."""

from __future__ import annotations

import math
import operator
from functools import partial

from pyframe import _device, _grad_mode
from pyframe._backend import ShapeError, check, lib
from pyframe._dtype import as_dtype, dtype
from pyframe.autograd.graph import record
from pyframe.ops._common import _unpack, size_args, zeros_of
from pyframe.ops._common import broadcast_shapes as _broadcast_shapes
from pyframe.ops.elementwise import unbroadcast
from pyframe.tensor import (
    _INT_TYPES,
    _LAYOUTS,
    MAX_DIMS,
    Size,
    Tensor,
    _int_args,
    _new,
    channels_last_dense,
    check_ndim,
    contiguous_strides,
    empty_tensor,
    meta_tensor,
    normalize_dim,
)

__all__ = [
    "reshape",
    "transpose", "swapaxes", "swapdims", "permute", "t", "unsqueeze", "squeeze", "expand", "broadcast_to", "narrow",
    "select", "contiguous", "clone", "detach", "movedim", "atleast_1d", "atleast_2d", "atleast_3d",
    "broadcast_tensors", "broadcast_shapes", "moveaxis",
]  # fmt: skip


def view_op(x: Tensor, shape: tuple, strides: tuple, offset: int, backward=None, saved=None) -> Tensor:
    """Every view goes through here. ``backward(g)`` maps the view's gradient to ``x``'s
    (default: a reshape, right for views that keep the element order); ``saved`` is what the node shows as
    torch's ``_saved_*`` attributes (``{"_saved_dim": 0}``)."""
    if type(shape) is not tuple:
        shape = tuple(shape)
    if len(shape) > MAX_DIMS:
        check_ndim(shape)
    out = _new(x._storage, shape, strides if type(strides) is tuple else tuple(strides), offset, x.dtype)
    out._base = x if x._base is None else x._base
    if x.requires_grad and _grad_mode.enabled:
        # backward closures keep shapes, never the input: a view's node must not keep alive a tensor that
        # nothing else needs (the 2-d result of a Linear on 3-d input, reshaped, would outlive its use)
        fn = backward or partial(_reshape_back, x._shape)
        node = record(_VIEW_NAMES.get(getattr(backward, "__name__", ""), "ViewBackward0"), lambda g: (fn(g),), (x,),
                      out)  # fmt: skip
        if saved:
            node.__dict__.update(saved)
    return out


def _reshape_back(shape: tuple, g: Tensor) -> Tensor:
    return g.reshape(shape)


def _view(self: Tensor, *shape, size=None) -> Tensor:
    """``Tensor.view``: the same storage under a new shape, or an error when the strides do not allow it."""
    if self._contig and size is None and shape:
        s = shape[0] if len(shape) == 1 and isinstance(shape[0], tuple) else shape
        if all(type(n) is int and n >= 0 for n in s) and math.prod(s) == self._numel:
            # the common call: explicit sizes over a dense tensor, whose strides are the dense ones
            return view_op(self, s, contiguous_strides(s), self._offset)
    shape = size_args("view", shape, size, "size")
    if len(shape) == 1 and isinstance(shape[0], (dtype, str)):
        return _view_dtype(self, as_dtype(shape[0]))
    shape = self._infer_shape(_int_args(shape))
    strides = self._view_strides(shape)
    if strides is None:
        raise ShapeError(
            f"view size {list(shape)} is not compatible with input tensor's size {list(self._shape)} and "
            f"stride {list(self._strides)}; use .reshape(...) instead"
        )
    return view_op(self, shape, strides, self._offset)


def _view_dtype(x: Tensor, dt: dtype) -> Tensor:
    """``Tensor.view(dtype)``: the same bytes read as ``dt`` (torch's rules: a wider or narrower element scales
    the last dim, which must then be contiguous, and the other strides and the offset must divide evenly). Not
    differentiable: the result is a plain tensor over the same storage (in-place writes show through)."""
    old, new = x.dtype.itemsize, dt.itemsize
    shape, strides, offset = list(x._shape), list(x._strides), x._offset
    if old != new:
        if not shape or (strides[-1] != 1 and shape[-1] != 1):
            raise RuntimeError(
                f"view(dtype): viewing {x.dtype.name} as {dt.name} needs a last dim of stride 1 (and at least 1 dim)"
            )
        if (shape[-1] * old) % new or any((s * old) % new for s in strides[:-1]) or (offset * old) % new:
            raise RuntimeError(
                f"view(dtype): the last dim's {shape[-1] * old} bytes, the other strides and the offset must be "
                f"multiples of {new} bytes to view {x.dtype.name} as {dt.name}"
            )
        shape[-1] = shape[-1] * old // new
        strides = [s * old // new for s in strides[:-1]] + [1]
        offset = offset * old // new
    out = _new(x._storage, tuple(shape), tuple(strides), offset, dt)
    out._base = x if x._base is None else x._base
    return out


def reshape(self: Tensor, *sizes, shape=None) -> Tensor:
    """Same as torch.reshape (and ``Tensor.reshape``): a view when the strides allow it, else a copy."""
    shape = size_args("reshape", sizes, shape, "shape")
    sh = shape[0] if len(shape) == 1 and type(shape[0]) is tuple else shape
    # the common case: a contiguous tensor and a shape seen before (so its sizes are valid) of plain ints
    try:
        lay = _LAYOUTS.get(sh) if self._contig else None
    except TypeError:  # reshape([2, 3]): a list inside, not a key
        lay = None
    if lay is not None and lay[1] == self._numel and tuple(map(type, sh)) == _INT_TYPES[len(sh)]:
        return view_op(self, sh, lay[0], self._offset)
    shape = self._infer_shape(_int_args(shape))
    strides = self._view_strides(shape)
    if strides is None:
        return self.contiguous().view(shape)
    return view_op(self, shape, strides, self._offset)


_VIEW_NAMES = {"transpose_back": "TransposeBackward0", "permute_back": "PermuteBackward0",
               "expand_back": "ExpandBackward0", "slice_back": "SliceBackward0", "unsqueeze_back": "UnsqueezeBackward0",
               "squeeze_back": "SqueezeBackward0", "t_back": "TBackward0", "select_back": "SelectBackward0",
               "alias_back": "AliasBackward0", "diagonal_back": "DiagonalBackward0", "unfold_back": "UnfoldBackward0",
               "as_strided_back": "AsStridedBackward0"}  # fmt: skip


def embed(g: Tensor, shape: tuple, key) -> Tensor:
    """A zero tensor of ``shape`` with ``g`` written at ``key``: the gradient of ``x[key]``."""
    z = zeros_of(shape, g.dtype)
    # Tensor.__setitem__ is index.setitem (index.py builds on views, so not imported here); it records only under
    # create_graph (g requires grad): double backward through views
    z[key] = g
    return z


def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Same as torch.transpose: a view with two dims swapped."""
    n = input.ndim
    d0, d1 = normalize_dim(dim0, n), normalize_dim(dim1, n)
    if n == 0:
        return view_op(input, (), (), input._offset)
    shape, strides = list(input._shape), list(input._strides)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    strides[d0], strides[d1] = strides[d1], strides[d0]

    def transpose_back(g):
        return transpose(g, d0, d1)

    return view_op(input, tuple(shape), tuple(strides), input._offset, transpose_back,
                   {"_saved_dim0": dim0, "_saved_dim1": dim1})  # fmt: skip


swapaxes = swapdims = transpose


def permute(input: Tensor, *args, dims=None) -> Tensor:  # noqa: A002
    """Same as torch.permute."""
    dims = _int_args(size_args("permute", args, dims, "dims"))
    n = input.ndim
    if len(dims) != n:
        raise ShapeError(f"permute: number of dims {len(dims)} doesn't match the tensor's {n} dims")
    norm = [normalize_dim(d, n) for d in dims]
    if len(set(norm)) != n:
        raise ShapeError(f"permute: repeated dim in {list(dims)}")
    inverse = [norm.index(i) for i in range(n)]

    def permute_back(g):
        return permute(g, *inverse)

    return view_op(
        input, tuple(input._shape[d] for d in norm), tuple(input._strides[d] for d in norm), input._offset, permute_back
    )


def t(input: Tensor) -> Tensor:
    """Same as torch.t: a 2-d tensor transposed (a view); tensors of 0 or 1 dims are returned as views unchanged."""
    if input.ndim > 2:
        raise ShapeError(f"t() expects a tensor with <= 2 dims, got {input.ndim}")
    two = input.ndim == 2

    def t_back(g):
        return transpose(g, 0, 1) if two else g

    return view_op(input, input._shape[::-1] if two else input._shape, input._strides[::-1] if two else input._strides,
                   input._offset, t_back)  # fmt: skip


def reverse_dims(x: Tensor) -> Tensor:
    """``.T``: all dims reversed."""
    return permute(x, *reversed(range(x.ndim)))


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """Same as torch.unsqueeze: a view with a dim of size 1 inserted at ``dim`` (``-1`` appends one)."""
    d = normalize_dim(dim, input.ndim + 1)
    inner = input._strides[d] * input._shape[d] if d < input.ndim else 1
    shape = input._shape

    def unsqueeze_back(g):
        return g.reshape(shape)

    return view_op(
        input, shape[:d] + (1,) + shape[d:], input._strides[:d] + (inner,) + input._strides[d:], input._offset,
        unsqueeze_back, {"_saved_dim": d},
    )  # fmt: skip


def squeeze(input: Tensor, dim=None) -> Tensor:
    """Same as torch.squeeze: a view without the dims of size 1 (only among ``dim``, an int or a tuple, if given)."""
    if dim is None:
        dims = {i for i, n in enumerate(input._shape) if n == 1}
    else:
        dims = {normalize_dim(d, input.ndim) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))}
        dims = {d for d in dims if input.ndim and input._shape[d] == 1}
    keep = [i for i in range(input.ndim) if i not in dims]
    shape = input._shape

    def squeeze_back(g):
        return g.reshape(shape)

    return view_op(input, tuple(shape[i] for i in keep), tuple(input._strides[i] for i in keep), input._offset,
                   squeeze_back)  # fmt: skip


def expand(input: Tensor, *sizes, size=None) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.expand: size-1 dims grow with stride 0; -1 keeps a dim."""
    sizes = _int_args(size_args("expand", sizes, size, "size"))
    if len(sizes) < input.ndim:
        raise ShapeError(f"expand: the number of sizes {len(sizes)} must be >= the tensor's dims {input.ndim}")
    lead = len(sizes) - input.ndim
    shape, strides = [], []
    for i, n in enumerate(sizes):
        j = i - lead
        if j < 0:
            if n < 0:
                raise ShapeError(f"expand: -1 is not allowed for a new leading dim, got sizes {list(sizes)}")
            shape.append(n)
            strides.append(0)
            continue
        old = input._shape[j]
        if n == -1 or n == old:
            shape.append(old)
            strides.append(input._strides[j])
        elif old == 1 and n >= 0:
            shape.append(n)
            strides.append(0)
        else:
            raise ShapeError(
                f"expand: the expanded size {n} must match the existing size {old} at dim {i} "
                f"(tensor shape {list(input._shape)}, sizes {list(sizes)})"
            )

    old = input._shape

    def expand_back(g):
        return unbroadcast(g, old)

    return view_op(input, tuple(shape), tuple(strides), input._offset, expand_back)


def broadcast_to(input: Tensor, shape) -> Tensor:
    """Same as torch.broadcast_to: a view of ``input`` expanded to ``shape`` (no copy; -1 keeps a size)."""
    return expand(input, *shape)


def expand_as(x: Tensor, other: Tensor) -> Tensor:
    """Same as torch.Tensor.expand_as: ``x.expand(*other.shape)``, a view."""
    return expand(x, *other._shape)


def _needs_dims(x: Tensor, fn: str) -> None:
    if not x._shape:
        raise RuntimeError(f"{fn}() cannot be applied to a 0-dim tensor; it needs at least 1 dim")


def _int_arg(v, fn: str, name: str) -> int:
    """An int argument (a NumPy int or a 1-element int tensor too); bools and floats are refused."""
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise TypeError(f"{fn}(): {name} must be an int, got {type(v).__name__} {v!r}")
    return operator.index(v)


def narrow(input: Tensor, dim: int, start: int, length: int) -> Tensor:
    """Same as torch.narrow: the view of ``length`` elements of ``dim`` starting at ``start`` (negative counts from
    the end).
    """
    _needs_dims(input, "narrow")
    start, length = _int_arg(start, "narrow", "start"), _int_arg(length, "narrow", "length")
    d = normalize_dim(dim, input.ndim)
    size = input._shape[d]
    if start < 0:
        start += size
    if not (0 <= start <= size and length >= 0 and start + length <= size):
        raise IndexError(f"narrow: start {start} + length {length} exceeds dimension {d} of size {size}")
    old = input._shape
    shape = old[:d] + (length,) + old[d + 1 :]

    def slice_back(g):
        return embed(g, old, (slice(None),) * d + (slice(start, start + length),))

    return view_op(input, shape, input._strides, input._offset + start * input._strides[d], slice_back)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    """Same as torch.select: the view at ``index`` of ``dim``, with that dim removed (``x.select(0, i)`` is
    ``x[i]``).
    """
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor")
    d = normalize_dim(dim, input.ndim)
    size = input._shape[d]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
    index %= size
    old = input._shape

    def select_back(g):
        return embed(g, old, (slice(None),) * d + (index,))

    return view_op(
        input, input._shape[:d] + input._shape[d + 1 :], input._strides[:d] + input._strides[d + 1 :],
        input._offset + index * input._strides[d], select_back,
    )  # fmt: skip


_CHANNELS_LAST = {"channels_last": 4, "channels_last_3d": 5}


def _format(memory_format) -> str:
    name = "preserve_format" if memory_format is None else str(memory_format).rpartition(".")[2]
    if name not in ("contiguous_format", "preserve_format", *_CHANNELS_LAST):
        raise ValueError(
            f"memory_format must be pyframe.contiguous_format, preserve_format, channels_last or channels_last_3d, "
            f"got {memory_format!r}"
        )
    return name


def _check_rank(x: Tensor, name: str) -> None:
    if x.ndim != _CHANNELS_LAST[name]:
        raise RuntimeError(f"required rank {_CHANNELS_LAST[name]} tensor to use {name} format, got rank {x.ndim}")


def channels_last_copy(x: Tensor) -> Tensor:
    """A copy of 4-d (5-d) ``x`` laid out channels last: its channel dim densest, same shape and values
    (autograd: through the permutes and the copy)."""
    n = x.ndim
    order = (0, *range(2, n), 1)
    back = (0, n - 1, *range(1, n - 1))
    return permute(clone(permute(x, order)), back)


def _channels_last_strides(shape: tuple) -> tuple:
    n = len(shape)
    strides = [0] * n
    step = 1
    for d in (1, *range(n - 1, 1, -1), 0):
        strides[d] = step
        step *= shape[d]
    return tuple(strides)


def is_channels_last(x: Tensor, name: str = "channels_last") -> bool:
    """torch's is_contiguous(memory_format=channels_last[_3d])."""
    return channels_last_dense(x._shape, x._strides, _CHANNELS_LAST[name])


def contiguous(input: Tensor, memory_format=None) -> Tensor:
    """Same as torch.Tensor.contiguous: ``input`` itself if it is contiguous in ``memory_format`` (default
    ``contiguous_format``), else a copy that is; ``channels_last`` (4-d) and ``channels_last_3d`` (5-d) put the
    channel dim innermost."""
    name = "contiguous_format" if memory_format is None else _format(memory_format)
    if name in _CHANNELS_LAST:
        _check_rank(input, name)
        return input if is_channels_last(input, name) else channels_last_copy(input)
    if name == "preserve_format":
        raise RuntimeError("preserve memory format is unsupported by the contiguous operator")
    return input if input._contig or input.is_contiguous() else clone(input)


def clone(input: Tensor, memory_format=None) -> Tensor:
    """Same as torch.clone: a copy (autograd: gradient passes through). ``memory_format=preserve_format`` keeps a
    channels-last input channels last and ``channels_last`` makes one; **pyframe**: without ``memory_format`` the
    copy is contiguous (torch's default preserves the layout; the values are the same)."""
    name = "contiguous_format" if memory_format is None else _format(memory_format)
    if name in _CHANNELS_LAST:
        _check_rank(input, name)
        return channels_last_copy(input)
    if name == "preserve_format" and input.ndim in (4, 5) and not input.is_contiguous():
        cl = "channels_last" if input.ndim == 4 else "channels_last_3d"
        if is_channels_last(input, cl):
            return channels_last_copy(input)
    out = empty_tensor(input._shape, input.dtype)
    check(lib.pf_copy(input._d(), out._d()))
    if input.requires_grad and _grad_mode.enabled:
        record("CloneBackward0", lambda g: (g,), (input,), out)
    return out


def to(x: Tensor, *args, dtype=None, copy: bool = False, **kwargs) -> Tensor:
    """Same as torch.Tensor.to: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``.
    The device must be the CPU; an accelerator raises pyframe's one device error."""
    target = dtype
    device = kwargs.pop("device", None)
    for a in args:
        if isinstance(a, (str, _device.device)) and not _is_dtype_name(a):
            device = a
            continue
        if isinstance(a, bool):  # to(dtype, non_blocking, copy) positional flags
            continue
        if a is None:
            continue
        if target is not None:  # torch: one dtype (or tensor) only
            raise TypeError(f"to() received two target dtypes: {target!r} and {a!r}; give one")
        target = a.dtype if isinstance(a, Tensor) else a
    kwargs.pop("non_blocking", None)
    fmt = kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    if fmt is not None and _format(fmt) != "preserve_format":
        name = _format(fmt)
        x = to(x, *args, dtype=dtype, copy=copy, device=device) if (args or dtype or device or copy) else x
        if name in _CHANNELS_LAST:
            _check_rank(x, name)
            return x if x._strides == _channels_last_strides(x._shape) else channels_last_copy(x)
        return contiguous(x)
    if device is not None and _device.wants_meta(device) and not x.is_meta:  # a shape without memory
        out = meta_tensor(x._shape, as_dtype(target) if target is not None else x.dtype)
        out.requires_grad = x.requires_grad and out.dtype.is_floating_point
        return out
    if x.is_meta and device is not None and not _device.wants_meta(device):
        raise NotImplementedError(
            "Cannot copy out of meta tensor; no data! Give a module memory with to_empty(device='cpu')"
        )
    if not x.is_meta:
        _device.check_device(device)
    if target is None:
        return clone(x) if copy else x
    dt = as_dtype(target)
    if dt is x.dtype and not copy:
        return x
    out = empty_tensor(x._shape, dt)
    check(lib.pf_copy(x._d(), out._d()))
    if x.requires_grad and dt.is_floating_point and _grad_mode.enabled:
        record("ToCopyBackward0", lambda g: (to(g, x.dtype),), (x,), out)
    return out


def _is_dtype_name(a) -> bool:
    if not isinstance(a, str):
        return False
    try:
        as_dtype(a)
    except (TypeError, ValueError):
        return False
    return True


def detach(input: Tensor) -> Tensor:
    """Same as torch.detach: a view sharing ``input``'s memory that is cut from the autograd graph."""
    return input._view(input._shape, input._strides)


# ---- joins and splits ------------------------------------------------------------------


_ = (Size, dtype)


def atleast_1d(*tensors):
    """Same as torch.atleast_1d."""
    out = [t.reshape(1) if t.ndim == 0 else t for t in _unpack(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*tensors):
    """Same as torch.atleast_2d."""
    out = [t.reshape(1, -1) if t.ndim < 2 else t for t in _unpack(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*tensors):
    """Same as torch.atleast_3d: 0-d -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    out = []
    for t in _unpack(tensors):
        if t.ndim == 0:
            t = t.reshape(1, 1, 1)
        elif t.ndim == 1:
            t = t.reshape(1, -1, 1)
        elif t.ndim == 2:
            t = unsqueeze(t, 2)
        out.append(t)
    return out[0] if len(out) == 1 else tuple(out)


def movedim(input: Tensor, source, destination) -> Tensor:  # noqa: A002
    """Same as torch.movedim: the ``source`` dims moved to ``destination``, others in order."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim(): invalid source or destination dims: source ({src}) and destination ({dst}) differ in length"
        )
    n = input.ndim
    src = [normalize_dim(d, n) for d in src]
    dst = [normalize_dim(d, n) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim(): repeated dim in source ({src}) or destination ({dst})")
    order = [None] * n
    for s, d in zip(src, dst, strict=True):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [next(rest) if o is None else o for o in order]
    return permute(input, *order)


def broadcast_shapes(*shapes):
    """Same as torch.broadcast_shapes."""
    out: tuple = ()
    for s in shapes:
        out = _broadcast_shapes(out, (s,) if isinstance(s, int) else tuple(s))
    return Size(out)


def broadcast_tensors(*tensors) -> tuple[Tensor, ...]:
    """Same as torch.broadcast_tensors: views expanded to one shape."""
    ts = _unpack(tensors)
    shape = broadcast_shapes(*(t.shape for t in ts))
    return tuple(expand(t, *shape) for t in ts)


moveaxis = movedim
