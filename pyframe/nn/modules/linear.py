"""``Identity``, ``Linear``, ``Bilinear`` and ``LazyLinear``. Same as torch.nn's."""

from __future__ import annotations

import math
from typing import Any

from pyframe import _grad_mode
from pyframe.nn import functional as F
from pyframe.nn import init
from pyframe.nn.modules.lazy import LazyModuleMixin
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter, UninitializedParameter
from pyframe.ops import creation
from pyframe.tensor import Tensor

__all__ = [
    "Identity", "Linear", "Bilinear", "LazyLinear", "NonDynamicallyQuantizableLinear",
]  # fmt: skip


class Identity(Module):
    """Same as torch.nn.Identity: returns its input; ignores constructor arguments."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return input


def init_weight_and_bias(weight: Tensor, bias: Tensor | None, fan_in: int) -> None:
    """PyTorch's default for Linear and Conv: kaiming-uniform with a = sqrt(5) (bound
    1/sqrt(fan_in)) for the weight, uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)) for the bias."""
    with _grad_mode.no_grad():
        init.kaiming_uniform_(weight, a=math.sqrt(5))
        if bias is not None:
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(bias, -bound, bound)


class Linear(Module):
    """Same as torch.nn.Linear: ``y = x @ weight.T + bias``. The parameters are created and
    initialised before they are registered (API.md), so a registration hook has the last word."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        weight = creation.empty(out_features, in_features, dtype=dtype, device=device)
        b = creation.empty(out_features, dtype=dtype, device=device) if bias else None
        init_weight_and_bias(weight, b, in_features)
        self.weight = Parameter(weight)
        self.register_parameter("bias", None if b is None else Parameter(b))

    def reset_parameters(self) -> None:
        """Same as torch.nn.Linear.reset_parameters: torch's default initialisation, kaiming-uniform weight
        (``a=sqrt(5)``)
        and a uniform bias in ``(-1/sqrt(in_features), 1/sqrt(in_features))``, drawn from pyframe's generator.
        """
        init_weight_and_bias(self.weight, self.bias, self.in_features)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class NonDynamicallyQuantizableLinear(Linear):
    """Same as torch.nn.modules.linear.NonDynamicallyQuantizableLinear: a Linear under another name (torch's
    MultiheadAttention output projection uses it to opt out of dynamic quantization, which pyframe does not have)."""


class LazyLinear(LazyModuleMixin, Linear):
    """Same as torch.nn.LazyLinear: a Linear whose ``in_features`` is the last dim of its first input; its weight
    and bias are UninitializedParameters until then, when they get torch's default initialization and the module
    becomes a Linear."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        Module.__init__(self)  # no zero-size weight to initialize first
        self.in_features = 0
        self.out_features = out_features
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.register_parameter("bias", UninitializedParameter(device=device, dtype=dtype) if bias else None)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input: Tensor) -> None:  # noqa: A002 - torch's name
        """Take ``in_features`` from the last dim of ``input`` and materialize and initialize the parameters."""
        if not self.has_uninitialized_params():
            return
        if input.ndim == 0:
            raise ValueError("LazyLinear: the input must have at least one dim (its last is in_features)")
        self.in_features = input.shape[-1]
        self.weight.materialize((self.out_features, self.in_features))
        if self.bias is not None:
            self.bias.materialize((self.out_features,))
        self.reset_parameters()

    def _infer_from_loaded(self) -> None:
        self.in_features = self.weight.shape[1]


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
            w = init.uniform_(creation.empty(out_features, in1_features, in2_features, dtype=dtype, device=device),
                              -bound, bound)  # fmt: skip
            b = init.uniform_(creation.empty(out_features, dtype=dtype, device=device), -bound, bound) if bias else None
        self.weight = Parameter(w)
        self.register_parameter("bias", None if b is None else Parameter(b))

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")  # fmt: skip
