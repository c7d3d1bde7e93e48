"""Activations and softmax."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

from pyframe._grad_mode import is_grad_enabled
from pyframe.nn.functional._utils import _float_arg
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.tensor import Tensor


def _activate(input: Tensor, inplace: bool, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """``fn(input)``, written into ``input`` when ``inplace``.

    In place under autograd, ``fn`` reads a copy: its graph saves that copy, which the write does
    not touch, so backward stays legal (torch keeps the original ``self`` the same way). Without
    a graph there is nothing to save and no copy is made.
    """
    if not inplace:
        return fn(input)
    source = input.clone() if input.requires_grad and is_grad_enabled() else input
    return ew.copy_(input, fn(source))


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.relu."""
    return ew.copy_(input, ew.relu(input)) if inplace else ew.relu(input)


def relu_(input: Tensor) -> Tensor:
    return relu(input, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.relu6."""
    return _activate(input, inplace, lambda x: ew.clamp(x, 0.0, 6.0))


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.hardtanh."""
    if min_val > max_val:
        raise ValueError(f"hardtanh(): min_val {min_val} cannot be greater than max_val {max_val}")
    return _activate(input, inplace, lambda x: ew.clamp(x, min_val, max_val))


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.leaky_relu."""
    _float_arg(input, "leaky_relu")
    return _activate(input, inplace, lambda x: ew.where(ew.gt(x, 0.0), x, ew.mul(x, negative_slope)))


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.elu."""
    _float_arg(input, "elu")

    def fn(x: Tensor) -> Tensor:
        return ew.where(ew.gt(x, 0.0), x, ew.mul(ew.expm1(ew.clamp(x, max=0.0)), alpha))

    return _activate(input, inplace, fn)


_SQRT1_2 = 1.0 / math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """Same as torch.nn.functional.gelu: exact (erf) or ``approximate="tanh"``."""
    _float_arg(input, "gelu")
    if approximate == "none":
        inner = ew.add(ew.erf(ew.mul(input, _SQRT1_2)), 1.0)
    elif approximate == "tanh":
        cube = ew.mul(ew.mul(input, input), input)
        inner = ew.add(ew.tanh(ew.mul(ew.add(input, ew.mul(cube, 0.044715)), _SQRT_2_PI)), 1.0)
    else:
        raise ValueError(f"gelu(): approximate must be 'none' or 'tanh', got {approximate!r}")
    return ew.mul(ew.mul(input, 0.5), inner)


def tanh(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.tanh."""
    return ew.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.sigmoid."""
    return ew.sigmoid(input)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.silu: x * sigmoid(x)."""
    return _activate(input, inplace, lambda x: ew.mul(x, ew.sigmoid(x)))


def _softplus_neg_abs(x: Tensor) -> Tensor:
    """log(1 + exp(-|x|)), finite for every x."""
    return ew.log1p(ew.exp(ew.neg(ew.abs(x))))


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """Same as torch.nn.functional.softplus: log(1 + exp(beta x)) / beta, linear above
    ``threshold``."""
    _float_arg(input, "softplus")
    bx = ew.mul(input, beta) if beta != 1 else input
    soft = ew.log1p(ew.exp(ew.clamp(bx, max=threshold)))  # clamped: the unused branch stays finite
    if beta != 1:
        soft = ew.div(soft, beta)
    return ew.where(ew.gt(bx, threshold), input, soft)


def logsigmoid(input: Tensor) -> Tensor:
    """Same as torch.nn.functional.logsigmoid: -softplus(-x), computed stably."""
    _float_arg(input, "logsigmoid")
    return ew.neg(ew.add(_softplus_neg_abs(input), ew.relu(ew.neg(input))))


def _softmax_dim(ndim: int, name: str, stacklevel: int) -> int:
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Same as torch.nn.functional.softmax (one C kernel)."""
    return rd.softmax(input, _softmax_dim(input.ndim, "softmax", _stacklevel) if dim is None else dim, dtype)


def softmin(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Same as torch.nn.functional.softmin."""
    return rd.softmax(ew.neg(input), _softmax_dim(input.ndim, "softmin", _stacklevel) if dim is None else dim, dtype)


def log_softmax(input: Tensor, dim=None, _stacklevel: int = 3, dtype=None) -> Tensor:
    """Same as torch.nn.functional.log_softmax (one C kernel)."""
    return rd.log_softmax(input, _softmax_dim(input.ndim, "log_softmax", _stacklevel) if dim is None else dim, dtype)
