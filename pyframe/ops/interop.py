"""Tensors over memory other code owns: torch's ``asarray`` (an array, a buffer, a tensor, sharing when it can)
and ``frombuffer`` (the bytes of any Python buffer, shared). NumPy is only the bridge to the memory here; the
tensor's ops compute in the C core as always."""

from __future__ import annotations

import numpy as np

from pyframe import _dtype
from pyframe._device import check_device
from pyframe.ops.creation import _finish, tensor
from pyframe.tensor import Tensor, from_numpy

__all__ = ["asarray", "frombuffer"]


def asarray(obj, *, dtype=None, device=None, copy: bool | None = None, requires_grad: bool = False) -> Tensor:
    """Same as torch.asarray: ``obj`` (a tensor, a NumPy array, an object with the buffer protocol, a number or a
    nested sequence) as a tensor. It shares ``obj``'s memory when the dtype allows and ``copy`` is not True;
    ``copy=False`` raises where it cannot share (a sequence, a dtype change)."""
    check_device(device)
    dt = None if dtype is None else _dtype.as_dtype(dtype)
    if isinstance(obj, Tensor):
        if dt is None or dt is obj.dtype:
            out = obj.clone() if copy else obj
        else:
            _no_copy_check(copy, "a dtype change")
            out = obj.to(dt)
    else:
        arr = obj if isinstance(obj, np.ndarray) else None
        if arr is None and not isinstance(obj, (list, tuple, int, float, bool)):
            try:
                arr = np.asarray(memoryview(obj))  # the buffer protocol: bytes, bytearray, array.array, mmap...
            except TypeError:
                arr = None
        if arr is not None and (dt is None or dt.np == arr.dtype) and arr.dtype != np.uint16 and not copy:
            out = from_numpy(arr)
        elif arr is not None:
            _no_copy_check(copy, "a dtype change")
            out = tensor(arr.copy(), dtype=dt)
        else:
            _no_copy_check(copy, "a Python sequence or number")
            out = tensor(obj, dtype=dt)
    return _finish(out, requires_grad) if requires_grad else out


def _no_copy_check(copy, what: str) -> None:
    if copy is False:
        raise ValueError(f"asarray(copy=False): {what} needs a copy")


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """Same as torch.frombuffer: a 1-d tensor over ``count`` elements of ``dtype`` in ``buffer``'s bytes from byte
    ``offset`` (-1: all that fit), sharing the memory: writes show on both sides. A read-only buffer (``bytes``)
    is copied, with ``from_numpy``'s warning (torch shares it and warns that writes are undefined)."""
    dt = _dtype.as_dtype(dtype)
    if dt is _dtype.bfloat16:
        raise TypeError("frombuffer: bfloat16 has no NumPy dtype to read a buffer as; read uint16 and view it")
    view = memoryview(buffer).cast("B")
    if offset < 0 or offset > len(view):
        raise ValueError(f"frombuffer: offset must be in [0, {len(view)}] (the buffer's bytes), got {offset}")
    avail = (len(view) - offset) // dt.itemsize
    if count == 0 or (count < 0 and avail == 0):
        raise ValueError(f"frombuffer: both buffer length ({len(view)}) and count ({count}) must not be 0")
    if count > avail:
        raise ValueError(f"frombuffer: requested {count} elements of {dt.name} from byte {offset}, but the "
                         f"buffer holds only {avail}")  # fmt: skip
    arr = np.frombuffer(view, dtype=dt.np, count=avail if count < 0 else count, offset=offset)
    return _finish(from_numpy(arr), requires_grad)
