"""``make_tensor``: random test tensors, as torch.testing.make_tensor."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

from pyframe import _dtype
from pyframe import ops as _ops
from pyframe._device import check_device
from pyframe.tensor import Tensor

__all__ = ["make_tensor"]

_FLOATS = (_dtype.float16, _dtype.bfloat16, _dtype.float32, _dtype.float64)
_INTEGERS = (_dtype.uint8, _dtype.int8, _dtype.int16, _dtype.int32, _dtype.int64)


def _bounds(dtype, low, high) -> tuple:
    """torch's ``low``/``high`` rules: per-dtype defaults, NaN and empty ranges refused, clamped to what the dtype
    represents, rounded up for integers (``high`` stays exclusive)."""
    if dtype is _dtype.bool_:
        lowest, highest, default = 0, 2, (0, 2)
    elif dtype in _INTEGERS:
        info = _dtype.iinfo(dtype)
        lowest, highest = info.min, info.max + 1
        default = (0 if dtype is _dtype.uint8 else -9, 10)
    else:
        info = _dtype.finfo(dtype)
        lowest, highest, default = info.min, info.max, (-9, 9)
    low = default[0] if low is None else low
    high = default[1] if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in _FLOATS:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or complex types is deprecated "
                      "since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.", FutureWarning,
                      stacklevel=3)  # fmt: skip
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), but {dtype} only "
                         f"supports [{lowest}, {highest})")  # fmt: skip
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if dtype not in _FLOATS:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(
    *shape: int | Sequence[int],
    dtype: _dtype.dtype,
    device,
    low: float | None = None,
    high: float | None = None,
    requires_grad: bool = False,
    noncontiguous: bool = False,
    exclude_zero: bool = False,
    memory_format=None,
) -> Tensor:
    """Same as torch.testing.make_tensor: a tensor of ``shape`` filled with values drawn uniformly from
    ``[low, high)`` by pyframe's generator.

    Defaults for ``low``/``high``: bool [0, 2), uint8 [0, 10), the signed integers [-9, 10), floating
    dtypes [-9, 9); bounds outside the dtype's finite range are clamped to it, and integer bounds are
    rounded up. ``noncontiguous`` gives a view with a stride of 2 in the last dim (for two or more
    elements); ``exclude_zero`` replaces zeros by 1 (integers, bool) or the dtype's smallest normal
    number (``finfo(dtype).tiny``). ``device`` must be the CPU.

    Raises:
        ValueError: ``low >= high``, a NaN bound, an interval outside the dtype, ``requires_grad`` for an
            integer or bool dtype, or both ``noncontiguous`` and ``memory_format``.
        TypeError: ``dtype`` is not a pyframe dtype.
    """
    check_device(device)
    if not isinstance(dtype, _dtype.dtype):
        raise TypeError(f"make_tensor(): dtype must be a pyframe dtype, got {dtype!r}")
    if len(shape) == 1 and isinstance(shape[0], Sequence):
        shape = shape[0]
    shape = tuple(int(s) for s in shape)
    if noncontiguous and memory_format is not None:
        raise ValueError(f"The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
                         f"noncontiguous={noncontiguous} and memory_format={memory_format}")  # fmt: skip
    if requires_grad and dtype not in _FLOATS:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral dtypes, but got "
                         f"dtype={dtype}")  # fmt: skip
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = (*shape[:-1], 2 * shape[-1])  # every other element of the last dim: distinct values, stride 2
    low, high = _bounds(dtype, low, high)
    if dtype in _FLOATS:
        result = _ops.empty(shape, dtype=dtype).uniform_(low, high)
    else:
        result = _ops.randint(low, high, shape, dtype=dtype)
    if noncontiguous:
        result = result[..., ::2]
    if exclude_zero:
        fill = _dtype.finfo(dtype).tiny if dtype in _FLOATS else 1
        result = _ops.where(_ops.eq(result, 0), _ops.full_like(result, fill), result)
        if noncontiguous:
            result = _ops.empty(shape, dtype=dtype)[..., ::2].copy_(result)
    if requires_grad:
        result.requires_grad_(True)
    return result
