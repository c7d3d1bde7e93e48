"""More activation modules: Mish, SELU, CELU, Hardswish, Hardsigmoid, Softsign, Tanhshrink,
Softshrink, Hardshrink, Threshold, GLU, PReLU, RReLU, Softmax2d. Same as torch.nn's."""

from __future__ import annotations

from pyframe import _grad_mode, factory
from pyframe.nn import functional as F
from pyframe.nn.functional.activation import _softmax2d
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.tensor import Tensor

__all__ = [
    "CELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Mish", "PReLU", "RReLU", "SELU", "Softmax2d",
    "Softshrink", "Softsign", "Tanhshrink", "Threshold",
]  # fmt: skip


class _Inplace(Module):
    _fn = None

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Mish(_Inplace):
    """Same as torch.nn.Mish."""

    _fn = staticmethod(F.mish)


class SELU(_Inplace):
    """Same as torch.nn.SELU."""

    _fn = staticmethod(F.selu)


class Hardswish(_Inplace):
    """Same as torch.nn.Hardswish."""

    _fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:  # torch shows no inplace flag here
        return ""


class Hardsigmoid(_Inplace):
    """Same as torch.nn.Hardsigmoid."""

    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:  # torch shows no inplace flag here
        return ""


class CELU(Module):
    """Same as torch.nn.CELU."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softsign(Module):
    """Same as torch.nn.Softsign."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softsign(input)


class Tanhshrink(Module):
    """Same as torch.nn.Tanhshrink."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.tanhshrink(input)


class Softshrink(Module):
    """Same as torch.nn.Softshrink."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Hardshrink(Softshrink):
    """Same as torch.nn.Hardshrink."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.hardshrink(input, self.lambd)


class Threshold(Module):
    """Same as torch.nn.Threshold."""

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class GLU(Module):
    """Same as torch.nn.GLU."""

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """Same as torch.nn.PReLU: a learnable ``weight`` of ``num_parameters`` slopes, all ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        super().__init__()
        if not isinstance(num_parameters, int) or num_parameters < 1:
            raise ValueError(f"PReLU: num_parameters must be a positive int, got {num_parameters!r}")
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(factory.full((num_parameters,), init, dtype=dtype))

    def reset_parameters(self) -> None:
        with _grad_mode.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Same as torch.nn.RReLU (random slopes from pyframe's stream in training)."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")


class Softmax2d(Module):
    """Same as torch.nn.Softmax2d: softmax over the channels of (N, C, H, W) or (C, H, W)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return _softmax2d(input)
