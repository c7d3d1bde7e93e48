"""Tensor factories and the seeded random generator."""

from __future__ import annotations

import math
from functools import reduce

import numpy as np

from pyframe import _dtype
from pyframe._backend import check, lib
from pyframe._device import check_device, check_layout, wants_meta
from pyframe._dtype import as_dtype, as_number, dtype
from pyframe.ops import elementwise as ew
from pyframe.ops._common import size_args
from pyframe.tensor import Tensor, as_shape, empty_tensor, from_numpy, meta_tensor, share_numpy
from pyframe.tensor import _new as _over_storage

__all__ = [
    "tensor", "as_tensor", "from_numpy", "empty", "zeros", "ones", "full", "arange", "linspace", "eye", "empty_like",
    "zeros_like", "ones_like", "full_like", "empty_strided", "empty_permuted",
]  # fmt: skip


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"only tensors of floating point dtype can require gradients, got {t.dtype.name}")
        t.requires_grad = True
    return t


def _infer_dtype(arr: np.ndarray) -> dtype:
    if arr.dtype == np.bool_:
        return _dtype.bool_
    if arr.dtype.kind in "iu":
        return _dtype.int64
    if arr.dtype.kind == "f":
        return _dtype.get_default_dtype()
    raise TypeError(f"can't build a tensor from data of NumPy kind {arr.dtype!s}")


def tensor(data, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Same as torch.tensor: always copies; floats default to float32, ints to int64.
    A NumPy array keeps its own dtype."""
    check_device(device)
    if isinstance(data, Tensor):
        out = data.detach().to(dtype or data.dtype, copy=True)
        return _finish(out, requires_grad)
    if isinstance(data, (np.ndarray, np.generic)):  # NumPy arrays and scalars keep their dtype, as torch
        arr = np.asarray(data)
        dt = as_dtype(dtype) if dtype is not None else _dtype.from_numpy_dtype(arr.dtype)
    else:
        kinds: set = set()
        try:
            arr = np.array(_unwrap(data, kinds))
        except ValueError as e:
            raise ValueError(f"tensor(): data has an irregular shape: {e}") from None
        if arr.dtype == object:
            _refuse_objects(arr, data)
        if dtype is not None:
            dt = as_dtype(dtype)
        elif kinds and arr.dtype.kind in "biuf":  # torch's inference: the elements' dtypes promoted
            dt = reduce(_dtype.promote_types, kinds)
        else:
            dt = _infer_dtype(arr)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"tensor(): data must be numbers or bools, got NumPy kind {arr.dtype!s} (strings are refused)")
    if not dt.is_floating_point and arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"tensor(): cannot convert non-finite values to {dt.name}")
    if dt is not _dtype.bool_ and not dt.is_floating_point and arr.dtype.kind in "iuf" and arr.size:
        lo, hi = _dtype.accepted_range(dt)
        for v in (arr.min(), arr.max()):  # astype would wrap around silently (uint8 takes -255..-1 wrapped)
            if not lo <= v <= hi:
                raise _dtype.OutOfRangeError(
                    f"tensor(): value {v} is out of range for {dt.name} (allowed: {lo} to {hi})"
                )
    # NumPy has no bfloat16: its values come as float32, which the C cast rounds to nearest even
    via = _dtype.float32 if dt is _dtype.bfloat16 else dt
    with np.errstate(over="ignore"):  # float16 overflows to inf, as torch
        arr = np.asarray(arr.astype(via.np, copy=False), order="C")  # ascontiguousarray makes 0-d 1-d
    src = share_numpy(arr, via)  # only read, so a read-only array needs no copy here
    out = empty_tensor(src._shape, dt)
    check(lib.pf_copy(src._d(), out._d()))
    return _finish(out, requires_grad)


def _refuse_objects(arr: np.ndarray, data) -> None:
    """NumPy falls back to object arrays for ints past 64 bits and for mixed element types."""
    for v in arr.reshape(-1):
        if isinstance(v, int) and not isinstance(v, bool):
            lo, hi = _dtype.int_range(_dtype.int64)
            if not lo <= v <= hi:
                raise _dtype.OutOfRangeError(f"tensor(): value {v} is out of range for int64 (allowed: {lo} to {hi})")
    kinds = sorted({type(v).__name__ for v in arr.reshape(-1)})
    raise TypeError(
        f"tensor(): can't convert data of type {type(data).__name__} with mixed elements ({', '.join(kinds)})"
    )


def _unwrap(data, kinds: set):
    """Nested lists may hold 0-d/1-element tensors: take their values. ``kinds`` collects each element's dtype
    as torch infers it: a Python float the default dtype, an int int64, a bool bool, a NumPy scalar or array
    and a tensor their own."""
    if isinstance(data, Tensor):
        kinds.add(data.dtype)
        return (data.detach().to(_dtype.float32) if data.dtype is _dtype.bfloat16 else data.detach()).numpy()
    if isinstance(data, (list, tuple)):
        return [_unwrap(x, kinds) for x in data]
    if isinstance(data, (np.generic, np.ndarray)):
        if data.dtype.kind in "biuf":
            try:
                kinds.add(_dtype.from_numpy_dtype(data.dtype))
            except TypeError:  # a NumPy dtype pyframe has not (uint16 ...): its kind's dtype
                kinds.add(_infer_dtype(np.empty(0, data.dtype)))
    elif isinstance(data, (bool, int, float)):
        kinds.add(_dtype.scalar_dtype(data))
    return data


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Same as torch.as_tensor: the data as a tensor, sharing memory where it can.

    A tensor of the right dtype is returned as is (another dtype: a converted copy); a NumPy array of the
    matching dtype shares its memory (``from_numpy``); anything else is copied as ``tensor(data, dtype)`` does.

    Args:
        data: a tensor, a NumPy array, a number or a (nested) sequence of numbers.
        dtype: the result's dtype; None keeps the data's.
        device: only the CPU (``None``, ``"cpu"``); anything else raises pyframe's device error.

    Returns:
        ``data`` itself, a view of its memory, or a copy.
    """
    check_device(device)
    if isinstance(data, Tensor):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, np.ndarray) and (dtype is None or as_dtype(dtype).np == data.dtype != np.uint16):
        return from_numpy(data)
    return tensor(data, dtype)


def _make(size, dtype, requires_grad, fill=None, device=None) -> Tensor:
    if wants_meta(device):  # a shape without memory: nothing to fill
        dt = as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
        return _finish(meta_tensor(as_shape(size), dt), requires_grad)
    t = empty_tensor(as_shape(size), as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype())
    if fill is not None:
        ew.fill_(t, fill)
    return _finish(t, requires_grad)


def empty(
    *sizes, size=None, dtype=None, requires_grad: bool = False, device=None, memory_format=None, **kwargs
) -> Tensor:
    """Same as torch.empty: a tensor of the given shape whose memory is not initialised.

    Args:
        *sizes: the shape, as ints or one sequence (``empty(2, 3)`` or ``empty((2, 3))``); or ``size=(2, 3)``.
        dtype: default ``get_default_dtype()`` (float32).
        requires_grad: record operations on it for autograd (floating dtypes only).
        device: only the CPU (``None``, ``"cpu"``); anything else raises pyframe's device error.
        memory_format: ``contiguous_format`` (default), or ``channels_last`` (4-d) / ``channels_last_3d`` (5-d)
            for a layout with the channel dim innermost.
        **kwargs: torch's ``layout`` and ``pin_memory``: accepted (every pyframe tensor is strided CPU memory).

    Returns:
        A new tensor with arbitrary contents.
    """
    _like_kwargs(kwargs)
    size = size_args("empty", sizes, size, "size")
    name = "contiguous_format" if memory_format is None else str(memory_format).rpartition(".")[2]
    if name in ("contiguous_format", "preserve_format"):
        return _make(size, dtype, requires_grad, device=device)
    from pyframe.ops.view import _CHANNELS_LAST, _format, permute

    _format(memory_format)  # raises for an unknown format
    shape = as_shape(size)
    rank = _CHANNELS_LAST[name]
    if len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {name} format, got rank {len(shape)}")
    phys = _make((shape[0], *shape[2:], shape[1]), dtype, False, device=device)
    out = permute(phys, (0, rank - 1, *range(1, rank - 1))).detach()
    return out.requires_grad_() if requires_grad else out


def zeros(*sizes, size=None, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Same as torch.zeros: a tensor of the given shape filled with 0.

    Args:
        *sizes: the shape, as ints or one sequence (``zeros(2, 3)`` or ``zeros((2, 3))``); or ``size=(2, 3)``.
        dtype: default ``get_default_dtype()`` (float32).
        requires_grad: record operations on it for autograd (floating dtypes only).
        device: only the CPU (``None``, ``"cpu"``); anything else raises pyframe's device error.

    Returns:
        A new contiguous tensor of zeros.
    """
    return _make(size_args("zeros", sizes, size, "size"), dtype, requires_grad, 0, device)


def ones(*sizes, size=None, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Same as torch.ones: a tensor of the given shape filled with 1.

    Args:
        *sizes: the shape, as ints or one sequence (``ones(2, 3)`` or ``ones((2, 3))``); or ``size=(2, 3)``.
        dtype: default ``get_default_dtype()`` (float32).
        requires_grad: record operations on it for autograd (floating dtypes only).
        device: only the CPU (``None``, ``"cpu"``); anything else raises pyframe's device error.

    Returns:
        A new contiguous tensor of ones.
    """
    return _make(size_args("ones", sizes, size, "size"), dtype, requires_grad, 1, device)


def full(size, fill_value, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Same as torch.full; the dtype follows ``fill_value`` when not given."""
    if dtype is None:
        dtype = _dtype.scalar_dtype(fill_value)
    return _make((size,) if isinstance(size, int) else tuple(size), dtype, requires_grad, fill_value, device)


def _on(x: Tensor, device):
    """The device of a ``_like``/``new_`` factory: the one given, else ``x``'s (never the default device: a meta
    tensor makes meta ones, a CPU tensor CPU ones, inside ``with device("meta")`` too)."""
    return device if device is not None else x.device


def _like(x: Tensor, dtype) -> dtype:
    return as_dtype(dtype) if dtype is not None else x.dtype


def empty_like(input: Tensor, dtype=None, requires_grad: bool = False, device=None, **kwargs) -> Tensor:
    """Same as torch.empty_like: an uninitialised tensor of ``input``'s shape.

    Args:
        input: the tensor whose shape (and, by default, dtype) is taken.
        dtype: default ``input.dtype``.
        requires_grad: record operations on the result for autograd.
        device: only the CPU.
        **kwargs: torch's ``layout``, ``memory_format`` and ``pin_memory`` are accepted and ignored (every
            pyframe tensor is strided CPU memory); other names raise TypeError.

    Returns:
        A new contiguous tensor with arbitrary contents.
    """
    _like_kwargs(kwargs)
    return _make(input._shape, _like(input, dtype), requires_grad, None, _on(input, device))


def zeros_like(input: Tensor, dtype=None, requires_grad: bool = False, device=None, **kwargs) -> Tensor:
    """Same as torch.zeros_like: a tensor of zeros of ``input``'s shape and (by default) dtype.

    Args:
        input: the tensor whose shape (and, by default, dtype) is taken.
        dtype: default ``input.dtype``.
        requires_grad: record operations on the result for autograd.
        device: only the CPU.
        **kwargs: torch's ``layout``, ``memory_format``, ``pin_memory``: accepted and ignored.

    Returns:
        A new contiguous tensor.
    """
    _like_kwargs(kwargs)
    return _make(input._shape, _like(input, dtype), requires_grad, 0, _on(input, device))


def ones_like(input: Tensor, dtype=None, requires_grad: bool = False, device=None, **kwargs) -> Tensor:
    """Same as torch.ones_like: a tensor of ones of ``input``'s shape and (by default) dtype.

    Args:
        input: the tensor whose shape (and, by default, dtype) is taken.
        dtype: default ``input.dtype``.
        requires_grad: record operations on the result for autograd.
        device: only the CPU.
        **kwargs: torch's ``layout``, ``memory_format``, ``pin_memory``: accepted and ignored.

    Returns:
        A new contiguous tensor.
    """
    _like_kwargs(kwargs)
    return _make(input._shape, _like(input, dtype), requires_grad, 1, _on(input, device))


def full_like(input: Tensor, fill_value, dtype=None, requires_grad: bool = False, device=None, **kwargs) -> Tensor:
    """Same as torch.full_like: a tensor of ``input``'s shape filled with ``fill_value``.

    Args:
        input: the tensor whose shape (and, by default, dtype) is taken.
        fill_value: the value of every element (converted to the dtype).
        dtype: default ``input.dtype`` (not ``fill_value``'s type, as in torch).
        requires_grad: record operations on the result for autograd.
        device: only the CPU.
        **kwargs: torch's ``layout``, ``memory_format``, ``pin_memory``: accepted and ignored.

    Returns:
        A new contiguous tensor.
    """
    _like_kwargs(kwargs)
    return _make(input._shape, _like(input, dtype), requires_grad, fill_value, _on(input, device))


def _like_kwargs(kwargs: dict) -> None:
    """torch's layout/memory_format/pin_memory: accepted, as every pyframe tensor is strided CPU memory (a layout
    other than strided raises)."""
    unknown = set(kwargs) - {"layout", "memory_format", "pin_memory"}
    if unknown:
        raise TypeError(f"got unexpected keyword arguments {sorted(unknown)}")
    check_layout(kwargs.get("layout"))


def arange(start, end=None, step=1, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Same as torch.arange: int64 when every bound is an int, else the default dtype (float32)."""
    if end is None:
        start, end = 0, start
    start, end, step = as_number(start), as_number(end), as_number(step)
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, Tensor):
            v = v.item()
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"arange: {name} must be a finite number, got {v!r}")
    if step == 0:
        raise ValueError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise ValueError(
            f"arange: upper bound and lower bound inconsistent with step sign (start={start}, end={end}, step={step})"
        )
    if dtype is None:
        dtype = _dtype.int64 if all(isinstance(v, int) for v in (start, end, step)) else _dtype.get_default_dtype()
    n = math.ceil((end - start) / step)
    check_device(device)
    t = empty_tensor((n,), as_dtype(dtype))
    check(lib.pf_arange(t._d(), float(start), float(step)))
    return _finish(t, requires_grad)


def torch_range(start=0, end=None, step=1, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Same as torch.range (deprecated there for ``arange``): ``start`` to ``end`` INCLUDED, in the default dtype
    (float32) unless ``dtype`` says otherwise. ``pyframe.range`` is this function (here under another name, so as
    not to shadow Python's ``range`` in this module)."""
    import warnings

    if end is None:
        start, end = 0, start
    warnings.warn("pyframe.range is deprecated and will be removed in a future release because its behavior is "
                  "inconsistent with Python's range builtin. Instead, use pyframe.arange, which produces values "
                  "in [start, end).", UserWarning, stacklevel=2)  # fmt: skip
    if step == 0 or not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (start, end, step)):
        raise ValueError(f"range: start, end and step must be finite numbers, step nonzero; got {start}, {end}, {step}")
    if (end - start) * step < 0:
        raise ValueError(f"range: upper bound and lower bound inconsistent with step sign ({start}, {end}, {step})")
    n = math.floor((end - start) / step) + 1
    dt = _dtype.get_default_dtype() if dtype is None else as_dtype(dtype)
    check_device(device)
    t = empty_tensor((n,), dt)
    check(lib.pf_arange(t._d(), float(start), float(step)))
    return _finish(t, requires_grad)


def linspace(start, end, steps: int, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Same as torch.linspace: ``steps`` values evenly spaced from ``start`` to ``end``, both included.

    Args:
        start: the first value.
        end: the last value.
        steps: how many values (a non-negative int; 1 gives ``[start]``).
        dtype: default ``get_default_dtype()`` (float32).
        requires_grad: record operations on the result for autograd.
        device: only the CPU.

    Returns:
        A 1-d tensor of ``steps`` elements, computed in the C core.
    """
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"linspace: number of steps must be a non-negative int, got {steps!r}")
    check_device(device)
    t = empty_tensor((steps,), as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype())
    check(lib.pf_linspace(t._d(), float(start), float(end)))
    return _finish(t, requires_grad)


def eye(n: int, m: int | None = None, dtype=None, requires_grad: bool = False, device=None) -> Tensor:
    """Same as torch.eye: a 2-d tensor with ones on the diagonal and zeros elsewhere.

    Args:
        n: the number of rows.
        m: the number of columns; default ``n``.
        dtype: default ``get_default_dtype()`` (float32).
        requires_grad: record operations on the result for autograd.
        device: only the CPU.

    Returns:
        An ``n`` x ``m`` tensor.
    """
    m = n if m is None else m
    t = zeros(n, m, dtype=dtype, device=device)
    k = min(n, m)
    if k:  # the diagonal is a strided view with stride m + 1
        ew.fill_(t._view((k,), (m + 1,)), 1)
    return _finish(t, requires_grad)


def _ints(name: str, what: str, values) -> tuple:
    if not isinstance(values, (tuple, list)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise TypeError(f"{name}(): {what} must be a sequence of ints, got {values!r}")
    if any(v < 0 for v in values):
        raise RuntimeError(f"{name}(): {what} must be non-negative, got {list(values)}")
    return tuple(values)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                  pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.empty_strided: an uninitialised tensor of shape ``size`` with the element strides ``stride``,
    over a new block just large enough for them (``1 + sum((size - 1) * stride)`` elements).

    Args:
        size: the shape.
        stride: one non-negative stride per dim, in elements.
        dtype: default ``get_default_dtype()`` (float32).
        layout: only ``pyframe.strided``.
        device: only the CPU.
        requires_grad: record operations on the result for autograd.
        pin_memory: accepted; pinned memory is a CUDA notion.

    Returns:
        A new tensor with arbitrary contents (a tensor whose strides overlap is as torch's: writes alias).
    """
    size, stride = _ints("empty_strided", "size", size), _ints("empty_strided", "stride", stride)
    if len(size) != len(stride):
        raise RuntimeError(f"empty_strided(): mismatch in length of strides and shape: {len(size)} sizes and "
                           f"{len(stride)} strides")  # fmt: skip
    check_device(device)
    check_layout(layout, "empty_strided")
    dt = as_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    n = 0 if 0 in size else 1 + sum((k - 1) * st for k, st in zip(size, stride, strict=True))
    block = empty_tensor((n,), dt)
    return _finish(_over_storage(block._storage, size, stride, 0, dt), requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad: bool = False,
                   pin_memory: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.empty_permuted: an uninitialised dense tensor of shape ``size`` whose dims lie in memory in the
    order ``physical_layout`` (outermost first): ``t.stride(physical_layout[i])`` is the i-th contiguous stride of
    the permuted shape, so ``(0, 2, 3, 1)`` on an NCHW size is channels-last.

    Args:
        size: the shape.
        physical_layout: a permutation of ``range(len(size))``.
        dtype: default ``get_default_dtype()`` (float32).
        layout: only ``pyframe.strided``.
        device: only the CPU.
        requires_grad: record operations on the result for autograd.
        pin_memory: accepted; pinned memory is a CUDA notion.
    """
    size = _ints("empty_permuted", "size", size)
    order = _ints("empty_permuted", "physical_layout", physical_layout)
    if sorted(order) != list(range(len(size))):
        raise RuntimeError(f"empty_permuted(): physical_layout must be a permutation of the dims 0..{len(size) - 1}, "
                           f"got {list(order)}")  # fmt: skip
    dense = [0] * len(size)
    step = 1
    for d in reversed(order):
        dense[d] = step
        step *= max(size[d], 1)
    return empty_strided(size, dense, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


# ---- random ----------------------------------------------------------------------------


# ---- Tensor.new_*: factories that default to the tensor's dtype ----------------------------


def _new_size(size) -> tuple:
    return as_shape(size if len(size) != 1 or not isinstance(size[0], int) else (size[0],))


def _new(self: Tensor, fn: str, sizes: tuple, size, dtype, device, requires_grad: bool, fill, kwargs) -> Tensor:
    _like_kwargs(kwargs)
    shape = _new_size(size_args(fn, sizes, size, "size"))
    return _make(shape, dtype or self.dtype, requires_grad, fill, _on(self, device))


def new_empty(self: Tensor, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False, **kwargs):
    """Same as torch.Tensor.new_empty: uninitialised, in this tensor's dtype unless ``dtype`` is given."""
    return _new(self, "new_empty", sizes, size, dtype, device, requires_grad, None, kwargs)


def new_zeros(self: Tensor, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False, **kwargs):
    """Same as torch.Tensor.new_zeros."""
    return _new(self, "new_zeros", sizes, size, dtype, device, requires_grad, 0, kwargs)


def new_ones(self: Tensor, *sizes, size=None, dtype=None, device=None, requires_grad: bool = False, **kwargs):
    """Same as torch.Tensor.new_ones."""
    return _new(self, "new_ones", sizes, size, dtype, device, requires_grad, 1, kwargs)


def new_full(self: Tensor, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False, **kwargs):
    """Same as torch.Tensor.new_full."""
    _like_kwargs(kwargs)
    return _make(as_shape((size,) if isinstance(size, int) else tuple(size)), dtype or self.dtype, requires_grad,
                 fill_value, device)  # fmt: skip


def new_empty_strided(self: Tensor, size, stride, *, dtype=None, device=None, requires_grad: bool = False,
                      **kwargs) -> Tensor:  # fmt: skip
    """Same as torch.Tensor.new_empty_strided: ``empty_strided`` in this tensor's dtype unless ``dtype`` is given."""
    _like_kwargs(kwargs)
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device, requires_grad=requires_grad)


def new_tensor(self: Tensor, data, *, dtype=None, device=None, requires_grad: bool = False, **kwargs) -> Tensor:
    """Same as torch.Tensor.new_tensor: a copy of ``data`` in this tensor's dtype unless ``dtype`` is given."""
    _like_kwargs(kwargs)
    return tensor(data, dtype=dtype or self.dtype, requires_grad=requires_grad, device=device)
