"""``Conv2d``. Same as torch.nn.Conv2d (padding_mode "zeros" only)."""

from __future__ import annotations

import math

from pyframe.nn import functional as F
from pyframe.nn.modules.linear import init_weight_and_bias
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.ops import creation
from pyframe.tensor import Tensor

__all__ = [
    "Conv2d", "Conv1d", "ConvTranspose1d", "ConvTranspose2d", "Fold", "Unfold",
]  # fmt: skip


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
        weight = creation.empty(out_channels, in_channels // groups, *kernel_size, dtype=dtype, device=device)
        b = creation.empty(out_channels, dtype=dtype, device=device) if bias else None
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


def _tuple(v, n: int, what: str) -> tuple:
    if isinstance(v, (tuple, list)):
        if len(v) != n:
            raise ValueError(f"{what} must be an int or a sequence of {n} ints, got {v!r}")
        return tuple(v)
    return (v,) * n


class _ConvNd(Module):
    """Parameters and init shared by the convolutions: torch's weight layout
    ``(out, in/groups, *k)`` (transposed: ``(in, out/groups, *k)``) and kaiming-uniform init."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride, padding, dilation, transposed: bool,
                 output_padding, groups: int, bias: bool, padding_mode: str, n: int, dtype=None) -> None:  # fmt: skip
        super().__init__()
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if padding_mode != "zeros":
            raise NotImplementedError(f"{type(self).__name__}: padding_mode={padding_mode!r} is not supported; "
                                      "use 'zeros'")  # fmt: skip
        if isinstance(padding, str):
            if padding not in ("same", "valid") or transposed:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        else:
            padding = _tuple(padding, n, "padding")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, n, "kernel_size")
        self.stride = _tuple(stride, n, "stride")
        self.padding = padding
        self.dilation = _tuple(dilation, n, "dilation")
        self.transposed = transposed
        self.output_padding = _tuple(output_padding, n, "output_padding")
        self.groups = groups
        self.padding_mode = padding_mode
        shape = (in_channels, out_channels // groups) if transposed else (out_channels, in_channels // groups)
        weight = creation.empty(*shape, *self.kernel_size, dtype=dtype)
        b = creation.empty(out_channels, dtype=dtype) if bias else None
        init_weight_and_bias(weight, b, self._fan_in())
        self.weight = Parameter(weight)
        if b is not None:
            self.bias = Parameter(b)
        else:
            self.register_parameter("bias", None)

    def _fan_in(self) -> int:
        # torch's fan-in is weight.size(1) * prod(kernel): out/groups for a transposed conv
        per = self.out_channels if self.transposed else self.in_channels
        return per // self.groups * math.prod(self.kernel_size)

    def reset_parameters(self) -> None:
        init_weight_and_bias(self.weight, self.bias, self._fan_in())

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """Same as torch.nn.Conv1d (padding_mode "zeros" only)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:  # fmt: skip
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, False, 0, groups, bias,
                         padding_mode, 1, dtype)  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose1d(_ConvNd):
    """Same as torch.nn.ConvTranspose1d (no ``output_size`` argument to forward)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:  # fmt: skip
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, 1, dtype)  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.conv_transpose1d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)  # fmt: skip


class ConvTranspose2d(_ConvNd):
    """Same as torch.nn.ConvTranspose2d (no ``output_size`` argument to forward)."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, output_padding=0,
                 groups: int = 1, bias: bool = True, dilation=1, padding_mode: str = "zeros", device=None,
                 dtype=None) -> None:  # fmt: skip
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, True, output_padding,
                         groups, bias, padding_mode, 2, dtype)  # fmt: skip

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.conv_transpose2d(input, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)  # fmt: skip


class Unfold(Module):
    """Same as torch.nn.Unfold."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")  # fmt: skip


class Fold(Module):
    """Same as torch.nn.Fold."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")  # fmt: skip
