"""Helpers every op module uses: promotion, broadcasting, scalar wrapping, output checks."""

from __future__ import annotations

from functools import reduce

from pyframe import _dtype
from pyframe._backend import ShapeError, check, ffi, lib
from pyframe._dtype import category, dtype, promote_types, scalar_dtype, scalar_value
from pyframe.tensor import Tensor, empty_tensor

_DEFAULT_FOR_CATEGORY = _dtype.DEFAULT_FOR_CATEGORY  # the float entry follows set_default_dtype


def size_args(fn: str, args: tuple, keyword, name: str) -> tuple:
    """A ``*size`` argument that torch also takes by its keyword (``zeros(size=(2, 3))``, ``x.view(size=...)``,
    ``x.permute(dims=...)``): the positional form, or the keyword's value as one sequence."""
    if keyword is None:
        return args
    if args:
        raise TypeError(f"{fn}() got multiple values for argument '{name}'")
    return (keyword,)


def result_type(*operands) -> dtype:
    """PyTorch's promotion: dimensioned tensors outrank 0-d tensors, which outrank Python
    numbers; a lower-ranked group only matters when it lifts the category (bool < int < float)."""
    dims, zero_d, scalars = [], [], []
    for x in operands:
        if isinstance(x, Tensor):
            (dims if x._shape else zero_d).append(x.dtype)
        else:
            scalars.append(scalar_dtype(x))
    result = None
    for group in (dims, zero_d, scalars):
        if not group:
            continue
        g = reduce(promote_types, group)
        if group is scalars:
            g = _DEFAULT_FOR_CATEGORY[category(g)]
        if result is None or category(g) > category(result):
            result = g
    return result


def broadcast_shapes(*shapes: tuple) -> tuple:
    ndim = max(len(s) for s in shapes)
    out = []
    for i in range(ndim):
        size = 1
        for s in shapes:
            j = i - (ndim - len(s))
            if j < 0 or s[j] == 1:
                continue
            if size != 1 and s[j] != size:
                shown = " and ".join(str(list(s)) for s in shapes)
                raise ShapeError(f"shapes {shown} cannot be broadcast together (dim {i - ndim}: {size} vs {s[j]})")
            size = s[j]
        out.append(size)
    return tuple(out)


def scalar_tensor(value, dt: dtype, what: str = "value", fill: bool = False) -> Tensor:
    """A 0-d tensor holding a Python number in dtype ``dt``; refuses a number ``dt`` cannot hold."""
    fvalue, ivalue = scalar_value(value, dt, what, fill)
    t = empty_tensor((), dt)
    check(lib.pf_fill(t._d(), fvalue, ivalue))
    return t


def zeros_of(shape: tuple, dt: dtype) -> Tensor:
    t = empty_tensor(shape, dt)
    check(lib.pf_fill(t._d(), 0.0, 0))
    return t


def as_tensor_of(x, dt: dtype) -> Tensor:
    """``x`` (tensor or number) as a tensor of dtype ``dt``, converting only when needed."""
    if isinstance(x, Tensor):
        return x if x.dtype is dt else cast(x, dt)
    return scalar_tensor(x, dt)


def cast(x: Tensor, dt: dtype) -> Tensor:
    out = empty_tensor(x._shape, dt)
    check(lib.pf_copy(x._d(), out._d()))
    return out


def shares_memory(a: Tensor, b: Tensor) -> bool:
    """Whether ``a`` and ``b`` may use the same bytes: one storage, or two storages over
    memory we do not own (two from_numpy views of one array) whose byte ranges intersect."""
    sa, sb = a._storage, b._storage
    if sa is sb:
        return True
    if sa.owner is None or sb.owner is None or not sa.nbytes or not sb.nbytes:
        return False
    pa, pb = int(ffi.cast("uintptr_t", sa.data)), int(ffi.cast("uintptr_t", sb.data))
    return pa < pb + sb.nbytes and pb < pa + sa.nbytes


def overlaps(a: Tensor, b: Tensor) -> bool:
    """Whether writing ``b`` could change what ``a`` reads, other than element-for-element."""
    if not shares_memory(a, b):
        return False
    return not (a._offset == b._offset and a._strides == b._strides and a._shape == b._shape)


def unaliased(dst: Tensor, src: Tensor) -> Tensor:
    """``src``, copied first when it shares memory with ``dst``: a scatter into ``dst`` must
    read every source element before any write lands (``x[i] = x``, ``x.index_add_(0, i, x)``)."""
    return src.clone() if shares_memory(dst, src) else src


def check_inplace_shape(target: Tensor, shape: tuple, op: str) -> None:
    if shape != target._shape:
        raise ShapeError(
            f"{op}: output with shape {list(target._shape)} doesn't match the broadcast shape {list(shape)}"
        )


def check_inplace_dtype(target: Tensor, dt: dtype, op: str) -> None:
    if category(dt) > category(target.dtype):
        raise TypeError(f"{op}: result type {dt.name} can't be cast to the desired output type {target.dtype.name}")


def _seq(tensors, name: str) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"{name}(): expected a sequence of Tensors")
    if not tensors:
        raise ValueError(f"{name}(): expected a non-empty sequence of tensors")
    return list(tensors)


def _unpack(tensors) -> list[Tensor]:
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tensors[0]
    return _seq(tensors, "atleast")


def _tensor_arg(x, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, got {type(x).__name__}")
    return x


def check_operands(name: str, input, other, numbers: str = "either") -> None:  # noqa: A002
    """torch's signature rule for a binary function, one check for every such op: ``numbers`` says which operands
    may be Python numbers instead of tensors: "both" (``add(2, 3)`` is ``tensor(5)``: torch's arithmetic takes two
    numbers), "either" (one of them: ``add(2, x)``), "other" (``input`` must be a tensor: ``eq(x, 2)`` but not
    ``eq(2, x)``) or "none" (both tensors: ``maximum``, ``atan2``)."""
    a, b = isinstance(input, Tensor), isinstance(other, Tensor)
    if a and (b or numbers != "none"):
        return
    if b and numbers in ("either", "both"):
        return
    if numbers == "both" and all(isinstance(v, (int, float)) for v in (input, other)):
        return
    allowed = {"either": "at least one of them a Tensor", "other": "input a Tensor (other may be a number)",
               "none": "both Tensors", "both": "Tensors or Python numbers"}[numbers]  # fmt: skip
    raise TypeError(f"{name}(): expected {allowed}, got input={type(input).__name__}, other={type(other).__name__}")
