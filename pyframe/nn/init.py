"""Parameter initialisation. Same as torch.nn.init.

Every function fills its tensor in place under ``no_grad`` and returns it; the random ones
draw from pyframe's seeded generator (``pyframe.manual_seed``), so their streams differ
from torch's while their distributions match. ``generator=`` is not supported.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

from pyframe import _dtype, _grad_mode
from pyframe.ops import elementwise as ew
from pyframe.tensor import Tensor

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "zeros_", "ones_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
    "uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
    "kaiming_normal", "orthogonal", "sparse",
]  # fmt: skip

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """Same as torch.nn.init.calculate_gain: the recommended gain for a nonlinearity."""
    if nonlinearity in _LINEAR or nonlinearity == "sigmoid":
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain(): negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain(): unsupported nonlinearity {nonlinearity!r}")


def _check(tensor, fn: str) -> Tensor:
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{fn}(): expected a Tensor, got {type(tensor).__name__}")
    return tensor


def _no_generator(generator, fn: str) -> None:
    if generator is not None:
        raise NotImplementedError(f"{fn}(): generator= is not supported; seed with pyframe.manual_seed")


def _fans(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight [out, in, *kernel], as torch."""
    if tensor.ndim < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
            f"(shape {list(tensor.shape)})"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode!r} not supported, please use one of 'fan_in', 'fan_out'")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Same as torch.nn.init.uniform_: U(a, b)."""
    from pyframe.ops.random import uniform_ as draw

    _check(tensor, "uniform_")
    _no_generator(generator, "uniform_")
    with _grad_mode.no_grad():
        return draw(tensor, a, b)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Same as torch.nn.init.normal_: N(mean, std^2)."""
    from pyframe.ops.random import normal_ as draw

    _check(tensor, "normal_")
    _no_generator(generator, "normal_")
    with _grad_mode.no_grad():
        return draw(tensor, mean, std)


def _erfinv(y: Tensor) -> Tensor:
    """erfinv for |y| < 1: Giles' single-precision approximation, then two Newton steps on
    erf (all float64 tensor ops)."""
    w = ew.neg(ew.log(ew.mul(ew.sub(1.0, y), ew.add(1.0, y))))
    central = ew.sub(w, 2.5)
    p = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503, -0.00417768164,
              0.246640727, 1.50140941):  # fmt: skip
        p = ew.add(ew.mul(central, p), c)
    tail = ew.sub(ew.sqrt(ew.clamp(w, min=5.0)), 3.0)
    q = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613, 0.00943887047,
              1.00167406, 2.83297682):  # fmt: skip
        q = ew.add(ew.mul(tail, q), c)
    x = ew.mul(ew.where(ew.lt(w, 5.0), p, q), y)
    for _ in range(2):  # x -= (erf(x) - y) / erf'(x)
        x = ew.sub(x, ew.div(ew.sub(ew.erf(x), y), ew.mul(ew.exp(ew.neg(ew.mul(x, x))), 2.0 / math.sqrt(math.pi))))
    return x


def trunc_normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None
) -> Tensor:  # fmt: skip
    """Same as torch.nn.init.trunc_normal_: N(mean, std^2) restricted to [a, b], drawn by the
    inverse CDF like torch (``a`` and ``b`` are absolute bounds, not in units of std)."""
    from pyframe.ops.creation import empty
    from pyframe.ops.random import uniform_ as draw

    _check(tensor, "trunc_normal_")
    _no_generator(generator, "trunc_normal_")
    if not a < b:
        raise ValueError(f"trunc_normal_(): expected a < b, got a={a}, b={b}")
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The distribution of values may be "
            "incorrect.",
            stacklevel=2,
        )

    def cdf(x: float) -> float:
        return (1.0 + math.erf((x - mean) / std / math.sqrt(2.0))) / 2.0

    lo, hi = cdf(a), cdf(b)
    with _grad_mode.no_grad():
        u = draw(empty(*tensor.shape, dtype=_dtype.float64), 2 * lo - 1, 2 * hi - 1)
        u = ew.clamp(u, -1 + 1e-15, 1 - 1e-15)  # erfinv(+-1) is infinite
        x = ew.add(ew.mul(_erfinv(u), std * math.sqrt(2.0)), mean)
        ew.copy_(tensor, ew.clamp(x, a, b))
    return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Same as torch.nn.init.constant_."""
    _check(tensor, "constant_")
    with _grad_mode.no_grad():
        return ew.fill_(tensor, val)


def zeros_(tensor: Tensor) -> Tensor:
    """Same as torch.nn.init.zeros_."""
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    """Same as torch.nn.init.ones_."""
    return constant_(tensor, 1.0)


def eye_(tensor: Tensor) -> Tensor:
    """Same as torch.nn.init.eye_: the identity on a 2-d tensor."""
    from pyframe.ops.creation import eye

    _check(tensor, "eye_")
    if tensor.ndim != 2:
        raise ValueError(f"eye_(): only tensors with 2 dimensions are supported, got shape {list(tensor.shape)}")
    with _grad_mode.no_grad():
        return ew.copy_(tensor, eye(*tensor.shape, dtype=tensor.dtype))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Same as torch.nn.init.dirac_: convolution weights that preserve their input."""
    _check(tensor, "dirac_")
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"dirac_(): only tensors with 3, 4, or 5 dimensions are supported, got {list(tensor.shape)}")
    out_per_group = tensor.shape[0] // groups
    if tensor.shape[0] % groups:
        raise ValueError(f"dirac_(): dim 0 ({tensor.shape[0]}) must be divisible by groups ({groups})")
    min_dim = min(out_per_group, tensor.shape[1])
    centre = tuple(k // 2 for k in tensor.shape[2:])
    with _grad_mode.no_grad():
        ew.fill_(tensor, 0.0)
        for g in range(groups):
            for d in range(min_dim):
                tensor[(g * out_per_group + d, d) + centre] = 1.0
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Same as torch.nn.init.xavier_uniform_: U(-b, b), b = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(_check(tensor, "xavier_uniform_"))
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Same as torch.nn.init.xavier_normal_: N(0, std^2), std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _fans(_check(tensor, "xavier_normal_"))
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a, mode: str, nonlinearity: str, fn: str) -> float:
    """gain / sqrt(fan); 0 for a zero-element tensor (torch's warning: nothing to draw)."""
    _check(tensor, fn)
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return 0.0
    return calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))


def kaiming_uniform_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None
) -> Tensor:  # fmt: skip
    """Same as torch.nn.init.kaiming_uniform_: U(-b, b), b = gain * sqrt(3 / fan)."""
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_")
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None
) -> Tensor:  # fmt: skip
    """Same as torch.nn.init.kaiming_normal_: N(0, std^2), std = gain / sqrt(fan)."""
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_"), generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """Same as torch.nn.init.orthogonal_, step for step: N(0, 1) draws in a (rows, numel / rows) matrix,
    transposed when rows < cols, its QR's Q with the signs of R's diagonal (``pyframe.linalg.qr``), transposed
    back, times ``gain``: the same draws give torch's weights."""
    from pyframe import linalg
    from pyframe.ops.creation import empty, eye

    _check(tensor, "orthogonal_")
    if tensor.ndim < 2:
        raise ValueError(
            f"orthogonal_(): only tensors with 2 or more dimensions are supported, got {list(tensor.shape)}"
        )
    if tensor.numel() == 0:
        return tensor
    if tensor.dtype not in (_dtype.float32, _dtype.float64):
        raise TypeError(f"orthogonal_(): expected a float32 or float64 tensor, got {tensor.dtype.name}")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with _grad_mode.no_grad():
        flattened = normal_(empty(rows, cols, dtype=tensor.dtype), 0.0, 1.0, generator)
        if rows < cols:
            flattened = flattened.T
        q, r = linalg.qr(flattened)
        d = ew.mul(r, eye(r.shape[0], r.shape[1], dtype=r.dtype)).sum(0)
        q = ew.mul(q, ew.sign(d))
        if rows < cols:
            q = q.T
        ew.copy_(tensor, ew.mul(q, gain).reshape(tensor.shape))
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Same as torch.nn.init.sparse_: a 2-d tensor drawn from N(0, std^2), then ``ceil(sparsity * rows)`` entries of
    every column, at rows chosen uniformly at random, set to zero (Martens, 2010)."""
    from pyframe.ops import random

    _check(tensor, "sparse_")
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported, got {tensor.ndim} dimensions")
    if not 0 <= sparsity <= 1:
        raise ValueError(f"sparse_(): sparsity must be in [0, 1], got {sparsity}")
    rows, cols = tensor.shape
    zeros = math.ceil(sparsity * rows)
    with _grad_mode.no_grad():
        normal_(tensor, 0.0, std, generator)
        if zeros and cols:  # each column's rows in a random order (independent uniform keys), the first `zeros` cut
            order = random.rand(rows, cols).argsort(dim=0)[:zeros]
            tensor.scatter_(0, order, 0.0)
    return tensor


def _deprecated(new: Callable) -> Callable:
    """torch's old names without the trailing underscore: the same function, with torch's FutureWarning."""
    old = new.__name__[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.", FutureWarning,
                      stacklevel=2)  # fmt: skip
        return new(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old
    deprecated_init.__doc__ = f"Same as torch.nn.init.{old}: deprecated, it warns and calls ``{new.__name__}``."
    return deprecated_init


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
eye = _deprecated(eye_)
dirac = _deprecated(dirac_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
