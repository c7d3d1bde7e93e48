"""Padding modules: Zero, Constant, Reflection, Replication and Circular padding in 1-3 dims.
Same as torch.nn's, all computed by ``F.pad``."""

from __future__ import annotations

from pyframe.nn import functional as F
from pyframe.nn.modules.module import Module
from pyframe.tensor import Tensor

__all__ = [
    "CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
    "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
    "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
]  # fmt: skip


def _padding(padding, dims: int, cls: str) -> tuple:
    if isinstance(padding, int) and not isinstance(padding, bool):
        return (padding,) * (2 * dims)
    if isinstance(padding, (tuple, list)) and len(padding) == 2 * dims and all(isinstance(p, int) for p in padding):
        return tuple(padding)
    raise ValueError(f"{cls}: padding must be an int or a tuple of {2 * dims} ints, got {padding!r}")


class _PadNd(Module):
    _mode = "constant"
    _dims = 1

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _padding(padding, self._dims, type(self).__name__)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ReflectionPadNd(_PadNd):
    _mode = "reflect"


class _ReplicationPadNd(_PadNd):
    _mode = "replicate"


class _CircularPadNd(_PadNd):
    _mode = "circular"


def _make(name: str, base: type, mode: str | None, dims: int) -> type:
    attrs = {"_dims": dims, "__doc__": f"Same as torch.nn.{name}.", "__module__": __name__}
    if mode is not None:
        attrs["_mode"] = mode
    return type(name, (base,), attrs)


ZeroPad1d = _make("ZeroPad1d", _ZeroPadNd, None, 1)
ZeroPad2d = _make("ZeroPad2d", _ZeroPadNd, None, 2)
ZeroPad3d = _make("ZeroPad3d", _ZeroPadNd, None, 3)
ConstantPad1d = _make("ConstantPad1d", _ConstantPadNd, None, 1)
ConstantPad2d = _make("ConstantPad2d", _ConstantPadNd, None, 2)
ConstantPad3d = _make("ConstantPad3d", _ConstantPadNd, None, 3)
ReflectionPad1d = _make("ReflectionPad1d", _ReflectionPadNd, None, 1)
ReflectionPad2d = _make("ReflectionPad2d", _ReflectionPadNd, None, 2)
ReflectionPad3d = _make("ReflectionPad3d", _ReflectionPadNd, None, 3)
ReplicationPad1d = _make("ReplicationPad1d", _ReplicationPadNd, None, 1)
ReplicationPad2d = _make("ReplicationPad2d", _ReplicationPadNd, None, 2)
ReplicationPad3d = _make("ReplicationPad3d", _ReplicationPadNd, None, 3)
CircularPad1d = _make("CircularPad1d", _CircularPadNd, None, 1)
CircularPad2d = _make("CircularPad2d", _CircularPadNd, None, 2)
CircularPad3d = _make("CircularPad3d", _CircularPadNd, None, 3)
