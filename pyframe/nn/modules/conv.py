"""``Conv2d``. Same as torch.nn.Conv2d (padding_mode "zeros" only)."""

from __future__ import annotations

from pyframe import factory
from pyframe.nn import functional as F
from pyframe.nn.modules.linear import init_weight_and_bias
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.tensor import Tensor

__all__ = ["Conv2d"]


def _pair(x) -> tuple:
    if isinstance(x, (tuple, list)):
        if len(x) != 2:
            raise ValueError(f"expected an int or a pair of ints, got {x!r}")
        return tuple(x)
    return (x, x)


class Conv2d(Module):
    """Same as torch.nn.Conv2d: weight ``(out_channels, in_channels // groups, kh, kw)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:  # fmt: skip
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size, stride, dilation = _pair(kernel_size), _pair(stride), _pair(dilation)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _pair(padding)
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(
                f"padding_mode must be one of ['zeros', 'reflect', 'replicate', 'circular'], but got "
                f"padding_mode='{padding_mode}'"
            )
        if padding_mode != "zeros":
            raise NotImplementedError(f"Conv2d: padding_mode={padding_mode!r} is not supported yet; use 'zeros'")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = False
        self.output_padding = (0, 0)
        self.groups = groups
        self.padding_mode = padding_mode
        weight = factory.empty(out_channels, in_channels // groups, *kernel_size, dtype=dtype, device=device)
        b = factory.empty(out_channels, dtype=dtype, device=device) if bias else None
        init_weight_and_bias(weight, b, self._fan_in())
        self.weight = Parameter(weight)
        if b is not None:
            self.bias = Parameter(b)
        else:
            self.register_parameter("bias", None)

    def _fan_in(self) -> int:
        return self.in_channels // self.groups * self.kernel_size[0] * self.kernel_size[1]

    def reset_parameters(self) -> None:
        init_weight_and_bias(self.weight, self.bias, self._fan_in())

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s
