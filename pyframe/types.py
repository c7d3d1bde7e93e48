"""torch.types: the type aliases annotations in torch programs import (``from torch.types import Number``)."""

from __future__ import annotations

import os
from typing import IO, Union

from pyframe._device import device as _device_cls
from pyframe._dtype import dtype as _dtype_cls
from pyframe.tensor import Size, Tensor

__all__ = ["Number", "Device", "FileLike", "_int", "_float", "_bool", "_complex", "_dtype", "_device", "_size",
           "_TensorOrTensors"]  # fmt: skip

_int = int
_float = float
_bool = bool
_complex = complex
_dtype = _dtype_cls
_device = _device_cls
_size = Union[Size, list[int], tuple[int, ...]]  # noqa: UP007 - a runtime alias, as torch's
Number = Union[int, float, bool]  # noqa: UP007
Device = Union[_device_cls, str, int, None]  # noqa: UP007
FileLike = Union[str, os.PathLike, IO[bytes]]  # noqa: UP007
_TensorOrTensors = Union[Tensor, tuple[Tensor, ...], list[Tensor]]  # noqa: UP007
