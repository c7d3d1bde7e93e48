"""Views, copies, joins and splits. Views share storage; only contiguous(), clone(), to()
and the joins copy, each with one C call per input."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

from pyframe import _device, _grad_mode
from pyframe._backend import SMALL_BYTES, ShapeError, alloc_large, alloc_small, check, desc, lib
from pyframe._dtype import as_dtype, dtype
from pyframe.autograd.graph import record
from pyframe.ops._common import result_type, zeros_of
from pyframe.ops.elementwise import unbroadcast
from pyframe.tensor import MAX_DIMS, Size, Tensor, _int_args, _new, check_ndim, empty_tensor, fresh, normalize_dim

__all__ = [
    "transpose", "swapaxes", "swapdims", "permute", "t", "unsqueeze", "squeeze", "expand", "broadcast_to", "narrow",
    "select", "contiguous", "clone", "detach", "cat", "concat", "concatenate", "stack", "split", "chunk", "unbind",
]  # fmt: skip


def view_op(x: Tensor, shape: tuple, strides: tuple, offset: int, backward=None) -> Tensor:
    """Every view goes through here. ``backward(g)`` maps the view's gradient to ``x``'s
    (default: a reshape, right for views that keep the element order)."""
    if type(shape) is not tuple:
        shape = tuple(shape)
    if len(shape) > MAX_DIMS:
        check_ndim(shape)
    out = _new(x._storage, shape, strides if type(strides) is tuple else tuple(strides), offset, x.dtype)
    out._base = x if x._base is None else x._base
    if x.requires_grad and _grad_mode.enabled:
        fn = backward or (lambda g: g.reshape(x._shape))
        record(_VIEW_NAMES.get(getattr(backward, "__name__", ""), "ViewBackward0"), lambda g: (fn(g),), (x,), out)
    return out


_VIEW_NAMES = {"transpose_back": "TransposeBackward0", "permute_back": "PermuteBackward0",
               "expand_back": "ExpandBackward0", "slice_back": "SliceBackward0"}  # fmt: skip


def embed(g: Tensor, shape: tuple, key) -> Tensor:
    """A zero tensor of ``shape`` with ``g`` written at ``key``: the gradient of ``x[key]``."""
    from pyframe.ops.index import setitem

    z = zeros_of(shape, g.dtype)
    setitem(z, key, g)  # records only under create_graph (g requires grad): double backward through views
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

    return view_op(input, tuple(shape), tuple(strides), input._offset, transpose_back)


swapaxes = swapdims = transpose


def permute(input: Tensor, *dims) -> Tensor:
    """Same as torch.permute."""
    dims = _int_args(dims)
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
    if input.ndim > 2:
        raise ShapeError(f"t() expects a tensor with <= 2 dims, got {input.ndim}")
    return transpose(input, 0, 1) if input.ndim == 2 else view_op(input, input._shape, input._strides, input._offset)


def reverse_dims(x: Tensor) -> Tensor:
    """``.T``: all dims reversed."""
    return permute(x, *reversed(range(x.ndim)))


def unsqueeze(input: Tensor, dim: int) -> Tensor:
    d = normalize_dim(dim, input.ndim + 1)
    inner = input._strides[d] * input._shape[d] if d < input.ndim else 1
    return view_op(
        input,
        input._shape[:d] + (1,) + input._shape[d:],
        input._strides[:d] + (inner,) + input._strides[d:],
        input._offset,
    )


def squeeze(input: Tensor, dim=None) -> Tensor:
    if dim is None:
        dims = {i for i, n in enumerate(input._shape) if n == 1}
    else:
        dims = {normalize_dim(d, input.ndim) for d in (dim if isinstance(dim, (tuple, list)) else (dim,))}
        dims = {d for d in dims if input.ndim and input._shape[d] == 1}
    keep = [i for i in range(input.ndim) if i not in dims]
    return view_op(input, tuple(input._shape[i] for i in keep), tuple(input._strides[i] for i in keep), input._offset)


def expand(input: Tensor, *sizes) -> Tensor:
    """Same as torch.Tensor.expand: size-1 dims grow with stride 0; -1 keeps a dim."""
    sizes = _int_args(sizes)
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

    def expand_back(g):
        return unbroadcast(g, input._shape)

    return view_op(input, tuple(shape), tuple(strides), input._offset, expand_back)


def broadcast_to(input: Tensor, shape) -> Tensor:
    return expand(input, *shape)


def expand_as(x: Tensor, other: Tensor) -> Tensor:
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
    _needs_dims(input, "narrow")
    start, length = _int_arg(start, "narrow", "start"), _int_arg(length, "narrow", "length")
    d = normalize_dim(dim, input.ndim)
    size = input._shape[d]
    if start < 0:
        start += size
    if not (0 <= start <= size and length >= 0 and start + length <= size):
        raise IndexError(f"narrow: start {start} + length {length} exceeds dimension {d} of size {size}")
    shape = input._shape[:d] + (length,) + input._shape[d + 1 :]

    def slice_back(g):
        return embed(g, input._shape, (slice(None),) * d + (slice(start, start + length),))

    return view_op(input, shape, input._strides, input._offset + start * input._strides[d], slice_back)


def select(input: Tensor, dim: int, index: int) -> Tensor:
    if input.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor")
    d = normalize_dim(dim, input.ndim)
    size = input._shape[d]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
    index %= size

    def select_back(g):
        return embed(g, input._shape, (slice(None),) * d + (index,))

    return view_op(
        input, input._shape[:d] + input._shape[d + 1 :], input._strides[:d] + input._strides[d + 1 :],
        input._offset + index * input._strides[d], select_back,
    )  # fmt: skip


def contiguous(input: Tensor) -> Tensor:
    return input if input._contig or input.is_contiguous() else clone(input)


def clone(input: Tensor) -> Tensor:
    """A contiguous copy (autograd: gradient passes through)."""
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
        if isinstance(a, Tensor):
            target = a.dtype
        elif isinstance(a, (str, _device.device)) and not _is_dtype_name(a):
            device = a
        elif isinstance(a, bool):  # to(dtype, non_blocking, copy) positional flags
            continue
        elif a is not None:
            target = a
    _device.check_device(device)
    kwargs.pop("non_blocking", None)
    kwargs.pop("memory_format", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
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
    return input._view(input._shape, input._strides)


# ---- joins and splits ------------------------------------------------------------------


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


concat = concatenate = cat


_cat_rows = lib.pf_cat_rows
_cat2 = lib.pf_cat2


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
    _needs_dims(input, "chunk")
    if chunks <= 0:
        raise ValueError(f"chunk: chunks must be positive, got {chunks}")
    size = input._shape[normalize_dim(dim, input.ndim)]
    return split(input, max(-(-size // chunks), 1), dim)


def unbind(input: Tensor, dim: int = 0) -> tuple:
    _needs_dims(input, "unbind")
    d = normalize_dim(dim, input.ndim)
    return tuple(select(input, d, i) for i in range(input._shape[d]))


_ = (Size, dtype)
