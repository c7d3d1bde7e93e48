"""Activation modules. Same as torch.nn's."""

from __future__ import annotations

from pyframe import _grad_mode
from pyframe.nn import functional as F
from pyframe.nn.functional.activation import _softmax2d
from pyframe.nn.modules._utils import _ArgsModule, _Layer
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.ops import creation
from pyframe.tensor import Tensor

__all__ = [
    "ELU", "GELU", "Hardtanh", "LeakyReLU", "LogSigmoid", "LogSoftmax", "ReLU", "ReLU6", "SiLU", "Sigmoid", "Softmax",
    "Softmin", "Softplus", "Tanh", "CELU", "GLU", "Hardshrink", "Hardsigmoid", "Hardswish", "Mish", "PReLU", "RReLU",
    "SELU", "Softmax2d", "Softshrink", "Softsign", "Tanhshrink", "Threshold",
]  # fmt: skip


class _NoArgs(_Layer):
    """The activations without arguments: ``forward`` is ``_fn(input)``."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return self._fn(input)


class Tanh(_NoArgs, fn=F.tanh):
    """Same as torch.nn.Tanh."""


class Sigmoid(_NoArgs, fn=F.sigmoid):
    """Same as torch.nn.Sigmoid."""


class LogSigmoid(_NoArgs, fn=F.logsigmoid):
    """Same as torch.nn.LogSigmoid."""


class Softsign(_NoArgs, fn=F.softsign):
    """Same as torch.nn.Softsign."""


class Tanhshrink(_NoArgs, fn=F.tanhshrink):
    """Same as torch.nn.Tanhshrink."""


class Softmax2d(_NoArgs, fn=_softmax2d):
    """Same as torch.nn.Softmax2d: softmax over the channels of (N, C, H, W) or (C, H, W)."""


class _Inplace(_ArgsModule):
    """The activations whose one argument is ``inplace``: ``forward`` is ``_fn(input, inplace=...)``."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(inplace=inplace)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return self._fn(input, inplace=self.inplace)


class ReLU(_Inplace, fn=F.relu):
    """Same as torch.nn.ReLU."""


class SiLU(_Inplace, fn=F.silu):
    """Same as torch.nn.SiLU: ``x * sigmoid(x)``."""


class Mish(_Inplace, fn=F.mish):
    """Same as torch.nn.Mish."""


class SELU(_Inplace, fn=F.selu):
    """Same as torch.nn.SELU."""


class Hardswish(_Inplace, fn=F.hardswish):
    """Same as torch.nn.Hardswish."""

    def extra_repr(self) -> str:  # torch shows no inplace flag here
        return ""


class Hardsigmoid(_Inplace, fn=F.hardsigmoid):
    """Same as torch.nn.Hardsigmoid."""

    def extra_repr(self) -> str:  # torch shows no inplace flag here
        return ""


class GELU(_ArgsModule):
    """Same as torch.nn.GELU; ``approximate`` is "none" or "tanh"."""

    _shown = ("approximate",)

    def __init__(self, approximate: str = "none") -> None:
        super().__init__(approximate=approximate)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.gelu(input, approximate=self.approximate)


class Softmax(_ArgsModule, fn=F.softmax):
    """Same as torch.nn.Softmax; without ``dim``, torch's legacy choice (0 for 0-, 1- and 3-d
    inputs, else 1) with its deprecation warning, made by ``F.softmax``. LogSoftmax and Softmin
    are this class with another ``fn``."""

    _shown = ("dim",)

    def __init__(self, dim: int | None = None) -> None:
        super().__init__(dim=dim)

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._fn(input, self.dim, _stacklevel=5)


class LogSoftmax(Softmax, fn=F.log_softmax):
    """Same as torch.nn.LogSoftmax."""


class Softmin(Softmax, fn=F.softmin):
    """Same as torch.nn.Softmin."""


class Hardtanh(_ArgsModule):
    """Same as torch.nn.Hardtanh: clamps to ``[min_val, max_val]``."""

    _shown = ("min_val", "max_val")

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        if max_val <= min_val:
            raise ValueError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        super().__init__(min_val=min_val, max_val=max_val, inplace=inplace)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)


class ReLU6(Hardtanh):
    """Same as torch.nn.ReLU6: ``min(max(0, x), 6)``."""

    _shown = ()

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)


class LeakyReLU(_ArgsModule):
    """Same as torch.nn.LeakyReLU."""

    _shown = ("negative_slope",)

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__(negative_slope=negative_slope, inplace=inplace)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.leaky_relu(input, self.negative_slope, self.inplace)


class _AlphaInplace(_ArgsModule):
    """ELU's and CELU's arguments: ``forward`` is ``_fn(input, alpha, inplace)``."""

    _shown = ("alpha",)

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__(alpha=alpha, inplace=inplace)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._fn(input, self.alpha, self.inplace)


class ELU(_AlphaInplace, fn=F.elu):
    """Same as torch.nn.ELU."""


class CELU(_AlphaInplace, fn=F.celu):
    """Same as torch.nn.CELU."""


class Softplus(_ArgsModule):
    """Same as torch.nn.Softplus."""

    _shown = ("beta", "threshold")

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__(beta=beta, threshold=threshold)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.softplus(input, self.beta, self.threshold)


class _Shrink(_ArgsModule):
    """Softshrink's and Hardshrink's argument, shown as torch does (the bare number):
    ``forward`` is ``_fn(input, lambd)``."""

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__(lambd=lambd)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return self._fn(input, self.lambd)

    def extra_repr(self) -> str:
        return str(self.lambd)


class Softshrink(_Shrink, fn=F.softshrink):
    """Same as torch.nn.Softshrink."""


class Hardshrink(_Shrink, fn=F.hardshrink):
    """Same as torch.nn.Hardshrink."""


class Threshold(_ArgsModule):
    """Same as torch.nn.Threshold."""

    _shown = ("threshold", "value")

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__(threshold=threshold, value=value, inplace=inplace)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.threshold(input, self.threshold, self.value, self.inplace)


class GLU(_ArgsModule):
    """Same as torch.nn.GLU."""

    _shown = ("dim",)

    def __init__(self, dim: int = -1) -> None:
        super().__init__(dim=dim)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.glu(input, self.dim)


class PReLU(Module):
    """Same as torch.nn.PReLU: a learnable ``weight`` of ``num_parameters`` slopes, all ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        super().__init__()
        if not isinstance(num_parameters, int) or num_parameters < 1:
            raise ValueError(f"PReLU: num_parameters must be a positive int, got {num_parameters!r}")
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(creation.full((num_parameters,), init, dtype=dtype))

    def reset_parameters(self) -> None:
        """Same as torch.nn.PReLU.reset_parameters: every slope set back to ``init``."""
        with _grad_mode.no_grad():
            self.weight.fill_(self.init)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(_ArgsModule):
    """Same as torch.nn.RReLU (random slopes from pyframe's stream in training)."""

    _shown = ("lower", "upper")

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__(lower=lower, upper=upper, inplace=inplace)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)
