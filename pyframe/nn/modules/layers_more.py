"""``Bilinear``, ``Unfold``, ``Fold``, ``InstanceNorm1d/2d/3d``, ``RMSNorm``,
``AdaptiveMaxPool1d/2d`` and ``AlphaDropout``. Same as torch.nn's."""

from __future__ import annotations

import math

from pyframe import _dtype, _grad_mode, factory
from pyframe.nn import functional as F
from pyframe.nn import init
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.tensor import Tensor

__all__ = [
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AlphaDropout", "Bilinear", "Fold", "InstanceNorm1d", "InstanceNorm2d",
    "InstanceNorm3d", "RMSNorm", "Unfold",
]  # fmt: skip


class Bilinear(Module):
    """Same as torch.nn.Bilinear: ``weight`` (out, in1, in2) and ``bias`` uniform(+-1/sqrt(in1))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:  # fmt: skip
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        bound = 1 / math.sqrt(in1_features)
        with _grad_mode.no_grad():
            w = init.uniform_(factory.empty(out_features, in1_features, in2_features, dtype=dtype), -bound, bound)
            b = init.uniform_(factory.empty(out_features, dtype=dtype), -bound, bound) if bias else None
        self.weight = Parameter(w)
        if b is not None:
            self.bias = Parameter(b)
        else:
            self.register_parameter("bias", None)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")  # fmt: skip


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


class _InstanceNorm(Module):
    _dims = 1

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device=None, dtype=None, bias: bool = True) -> None:  # fmt: skip
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = Parameter(factory.ones(num_features, dtype=dtype))
            if bias:
                self.bias = Parameter(factory.zeros(num_features, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", factory.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", factory.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", factory.tensor(0, dtype=_dtype.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        d = self._dims
        if input.ndim not in (d + 1, d + 2):
            raise ValueError(f"expected {d + 1}D or {d + 2}D input (got {input.ndim}D input)")
        batched = input.ndim == d + 2
        x = input if batched else input.unsqueeze(0)
        use_input_stats = self.training or not self.track_running_stats
        out = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias, use_input_stats,
                              self.momentum if self.momentum is not None else 0.1, self.eps)  # fmt: skip
        return out if batched else out.squeeze(0)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")  # fmt: skip


class InstanceNorm1d(_InstanceNorm):
    """Same as torch.nn.InstanceNorm1d: (N, C, L) or (C, L)."""

    _dims = 1


class InstanceNorm2d(_InstanceNorm):
    """Same as torch.nn.InstanceNorm2d: (N, C, H, W) or (C, H, W)."""

    _dims = 2


class InstanceNorm3d(_InstanceNorm):
    """Same as torch.nn.InstanceNorm3d: (N, C, D, H, W) or (C, D, H, W)."""

    _dims = 3


class RMSNorm(Module):
    """Same as torch.nn.RMSNorm: ``weight`` of ones over ``normalized_shape``."""

    def __init__(self, normalized_shape, eps: float | None = None, elementwise_affine: bool = True, device=None,
                 dtype=None) -> None:  # fmt: skip
        super().__init__()
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(factory.ones(*self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            with _grad_mode.no_grad():
                self.weight.fill_(1.0)

    def forward(self, x: Tensor) -> Tensor:
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class AdaptiveMaxPool1d(Module):
    """Same as torch.nn.AdaptiveMaxPool1d."""

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def forward(self, input: Tensor):  # noqa: A002
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(AdaptiveMaxPool1d):
    """Same as torch.nn.AdaptiveMaxPool2d."""

    def forward(self, input: Tensor):  # noqa: A002
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class AlphaDropout(Module):
    """Same as torch.nn.AlphaDropout (for SELU networks)."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.alpha_dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
