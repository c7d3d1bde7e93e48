"""Convolutions (``Conv1d``, ``Conv2d``, ``ConvTranspose1d``, ``ConvTranspose2d``) on one
``_ConvNd`` base, and ``Fold``/``Unfold``. Same as torch.nn's (padding_mode "zeros" only)."""

from __future__ import annotations

import math

from pyframe.nn import functional as F
from pyframe.nn.modules._utils import _ArgsModule, _changed, _Layer, _tuple
from pyframe.nn.modules.linear import init_weight_and_bias
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.ops import creation
from pyframe.tensor import Tensor

__all__ = [
    "Conv2d", "Conv1d", "ConvTranspose1d", "ConvTranspose2d", "Fold", "Unfold",
]  # fmt: skip


_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(_Layer):
    """What the convolutions share: torch's checks, weight layout ``(out, in/groups, *k)``
    (transposed: ``(in, out/groups, *k)``), kaiming-uniform init and repr. A class names its
    functional form (``fn=``) and sets ``_dims``, its spatial dims; ``__init__`` here is the
    signature of Conv1d and Conv2d, ``_ConvTransposeNd`` has the transposed one."""

    _dims = 0

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:  # fmt: skip
        super().__init__()
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                    padding_mode, device, dtype)  # fmt: skip

    def _setup(self, in_channels: int, out_channels: int, kernel_size, stride, padding, dilation, transposed: bool,
               output_padding, groups: int, bias: bool, padding_mode: str, device, dtype) -> None:  # fmt: skip
        n, name = self._dims, type(self).__name__
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        stride = _tuple(stride, n, "stride")
        if isinstance(padding, str):
            if padding not in ("same", "valid") or transposed:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _tuple(padding, n, "padding")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")  # fmt: skip
        if padding_mode != "zeros":
            if transposed:  # torch's own limit
                raise ValueError(f'Only "zeros" padding mode is supported for {name}')
            raise NotImplementedError(f"{name}: padding_mode={padding_mode!r} is not supported; use 'zeros'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, n, "kernel_size")
        self.stride = stride
        self.padding = padding
        self.dilation = _tuple(dilation, n, "dilation")
        self.transposed = transposed
        self.output_padding = _tuple(output_padding, n, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        weight = creation.empty(*shape, *self.kernel_size, dtype=dtype, device=device)
        b = creation.empty(out_channels, dtype=dtype, device=device) if bias else None
        init_weight_and_bias(weight, b, self._fan_in())
        self.weight = Parameter(weight)
        self.register_parameter("bias", None if b is None else Parameter(b))

    def _fan_in(self) -> int:
        # torch's fan-in is weight.size(1) * prod(kernel): out/groups for a transposed conv
        per = self.out_channels if self.transposed else self.in_channels
        return per // self.groups * math.prod(self.kernel_size)

    def reset_parameters(self) -> None:
        init_weight_and_bias(self.weight, self.bias, self._fan_in())

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return self._fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        n = self._dims
        head = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        s = _changed(self, head, padding=(0,) * n, dilation=(1,) * n, output_padding=(0,) * n, groups=1)
        return s if self.bias is not None else s + ", bias=False"


class _ConvTransposeNd(_ConvNd):
    """The transposed convolutions: torch's argument order (``output_padding`` before ``groups``,
    ``dilation`` after ``bias``); no ``output_size`` argument to forward."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:  # fmt: skip
        Module.__init__(self)
        self._setup(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding, groups,
                    bias, padding_mode, device, dtype)  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._fn(input, self.weight, self.bias, self.stride, self.padding, self.output_padding, self.groups,
                        self.dilation)  # fmt: skip


class Conv1d(_ConvNd, fn=F.conv1d):
    """Same as torch.nn.Conv1d (padding_mode "zeros" only)."""

    _dims = 1


class Conv2d(_ConvNd, fn=F.conv2d):
    """Same as torch.nn.Conv2d: weight ``(out_channels, in_channels // groups, kh, kw)``
    (padding_mode "zeros" only)."""

    _dims = 2


class ConvTranspose1d(_ConvTransposeNd, fn=F.conv_transpose1d):
    """Same as torch.nn.ConvTranspose1d (no ``output_size`` argument to forward)."""

    _dims = 1


class ConvTranspose2d(_ConvTransposeNd, fn=F.conv_transpose2d):
    """Same as torch.nn.ConvTranspose2d (no ``output_size`` argument to forward)."""

    _dims = 2


class Unfold(_ArgsModule):
    """Same as torch.nn.Unfold."""

    _shown = ("kernel_size", "dilation", "padding", "stride")

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__(kernel_size=kernel_size, dilation=dilation, padding=padding, stride=stride)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)


class Fold(_ArgsModule):
    """Same as torch.nn.Fold."""

    _shown = ("output_size", "kernel_size", "dilation", "padding", "stride")

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__(output_size=output_size, kernel_size=kernel_size, dilation=dilation, padding=padding,
                         stride=stride)  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)
