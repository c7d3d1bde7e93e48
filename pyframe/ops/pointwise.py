"""Pointwise ops that are compositions of the C elementwise ops: ``addcmul``, ``addcdiv``,
``lerp``, one-sided clamps, ``nan_to_num``, ``logaddexp``, ``hypot``, ``fmod``, ``frac``,
``xlogy``, ``div`` with a rounding mode, ``round`` to decimals, and torch's aliases. Each is a line of existing
ops; where the composition's derivative would differ from torch's at a switching point or a NaN, the op states
torch's (``ew.with_derivative``).
"""

from __future__ import annotations

import math

from pyframe import _dtype
from pyframe.ops import elementwise as ew
from pyframe.ops._common import zeros_of
from pyframe.tensor import Tensor

__all__ = [
    "addcmul", "addcdiv", "lerp", "clamp_min", "clamp_max", "nan_to_num", "logaddexp", "hypot", "fmod", "frac",
    "xlogy", "sgn", "positive", "negative", "absolute", "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh",
    "arctan2", "fix", "float_power", "div", "divide", "true_divide", "round", "round_", "angle",
]  # fmt: skip


def _tensor(x, name: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be a Tensor, not {type(x).__name__}")
    return x


def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:  # noqa: A002
    """Same as torch.addcmul: ``input + value * tensor1 * tensor2``."""
    prod = ew.mul(tensor1, tensor2)
    return ew.plain_add(_tensor(input, "addcmul"), prod if value == 1 else ew.mul(prod, value))


def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1) -> Tensor:  # noqa: A002
    """Same as torch.addcdiv: ``input + value * tensor1 / tensor2``."""
    if not (
        _tensor(tensor1, "addcdiv").dtype.is_floating_point
        or getattr(tensor2, "dtype", _dtype.float32).is_floating_point
    ):
        raise RuntimeError("addcdiv(): integer division with addcdiv is no longer supported; use addcmul or torch.div")
    quot = ew.div(tensor1, tensor2)
    return ew.plain_add(_tensor(input, "addcdiv"), quot if value == 1 else ew.mul(quot, value))


def lerp(input: Tensor, end: Tensor, weight) -> Tensor:  # noqa: A002
    """Same as torch.lerp, with its two forms: ``input + weight * (end - input)`` for weight < 0.5,
    ``end - (end - input) * (1 - weight)`` from 0.5 on (exact at weight 1, and lerp(-inf, x, 0.5) is -inf)."""
    diff = ew.plain_sub(end, _tensor(input, "lerp"))
    low = ew.plain_add(input, ew.mul(diff, weight))
    high = ew.plain_sub(end, ew.mul(diff, ew.sub(1.0, weight) if isinstance(weight, Tensor) else 1.0 - weight))
    return ew.where(ew.lt(weight, 0.5), low, high) if isinstance(weight, Tensor) else (low if weight < 0.5 else high)


def clamp_min(input: Tensor, min) -> Tensor:  # noqa: A001, A002
    """Same as torch.clamp_min."""
    ew.check_operands("clamp_min", input, min, "other")
    return ew.clamp(input, min=min)


def clamp_max(input: Tensor, max) -> Tensor:  # noqa: A001, A002
    """Same as torch.clamp_max."""
    ew.check_operands("clamp_max", input, max, "other")
    return ew.clamp(input, max=max)


def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None) -> Tensor:  # noqa: A002
    """Same as torch.nan_to_num: NaN, +inf and -inf replaced (by default with 0 and the dtype's
    largest and lowest finite values)."""
    x = _tensor(input, "nan_to_num")
    if not x.dtype.is_floating_point:
        return x.clone()
    largest = _dtype.finfo(x.dtype).max
    hi = largest if posinf is None else posinf
    lo = -largest if neginf is None else neginf
    out = ew.where(ew.isnan(x), nan, x)
    out = ew.where(ew.logical_and(ew.isinf(x), ew.gt(x, 0)), hi, out)
    return ew.where(ew.logical_and(ew.isinf(x), ew.lt(x, 0)), lo, out)


def logaddexp(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.logaddexp: ``log(exp(input) + exp(other))`` without overflow; torch's derivative
    g / (1 + exp(other - input)) (NaN where both are the same infinity). Both arguments are tensors."""
    ew.check_operands("logaddexp", input, other, "none")
    return ew.with_derivative("LogaddexpBackward0", _logaddexp, _logaddexp_grad, input, other)


def _logaddexp_grad(g, a, b):
    return ew.div(g, ew.add(ew.exp(ew.sub(b, a)), 1.0)), ew.div(g, ew.add(ew.exp(ew.sub(a, b)), 1.0))


def _logaddexp(input, other):
    hi = ew.maximum(input, other)
    lo = ew.minimum(input, other)
    # equal infinities would give inf - inf = nan: their sum is that infinity
    diff = ew.where(ew.eq(hi, lo), 0.0, ew.plain_sub(lo, hi))
    return ew.plain_add(hi, ew.log1p(ew.exp(diff)))


def hypot(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.hypot: ``sqrt(input**2 + other**2)``, inf when either is infinite (even beside NaN, as
    C's hypot); derivative g input / hypot."""
    return ew.with_derivative("HypotBackward0", _hypot, _hypot_grad, input, other, saves_output=True)


def _hypot(a, b):
    r = ew.sqrt(ew.plain_add(ew.mul(a, a), ew.mul(b, b)))
    return ew.where(ew.logical_or(ew.isinf(a), ew.isinf(b)), float("inf"), r)


def _hypot_grad(g, a, b, y):
    return ew.mul(g, ew.div(a, y)), ew.mul(g, ew.div(b, y))


def fmod(input: Tensor, other) -> Tensor:  # noqa: A002
    """Same as torch.fmod: the remainder with the sign of the dividend (C's fmod), where
    ``remainder`` takes the divisor's sign."""
    return ew.with_derivative("FmodBackward0", _fmod, _fmod_grad, _tensor(input, "fmod"), other)


def _fmod_grad(g, x, y):
    """torch's: g for the dividend, -g trunc(x / y) for the divisor."""
    return g, ew.neg(ew.mul(g, ew.trunc(ew.div(x, y))))


def _fmod(x, other):
    if not isinstance(other, Tensor):
        other = ew.as_tensor_of(other, ew.result_type(x, other))
    return ew.where(ew.logical_and(ew.isinf(other), ew.isfinite(x)), x, _fmod_finite(x, other))  # C's fmod(x, inf)


def _fmod_finite(x, other):
    r = ew.remainder(x, other)
    # remainder and fmod differ by one divisor exactly where the signs of r and x differ
    fix = ew.logical_and(ew.ne(r, 0), ew.ne(ew.lt(r, 0), ew.lt(x, 0)))
    return ew.where(fix, ew.plain_sub(r, other), r)


def frac(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.frac: ``input - trunc(input)``."""
    return ew.plain_sub(input, ew.trunc(input))


def xlogy(input, other) -> Tensor:  # noqa: A002
    """Same as torch.xlogy: ``input * log(other)``, 0 where ``input`` is 0 (and ``other`` not NaN). torch's
    derivative: ``xlogy(g, other)``, 0 where input is 0 and other <= 0, for input; ``g input / other`` for other."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("xlogy(): expected at least one Tensor")
    dt = ew.result_type(input, other)
    dt = dt if dt.is_floating_point else _dtype.get_default_dtype()
    x, y = ew.as_tensor_of(input, dt), ew.as_tensor_of(other, dt)
    return ew.with_derivative("XlogyBackward0", _xlogy, _xlogy_grad, x, y)


def _xlogy(x, y):
    return ew.where(ew.logical_and(ew.eq(x, 0), ew.logical_not(ew.isnan(y))), 0.0, ew.mul(x, ew.log(y)))


def _xlogy_grad(g, x, y):
    gx = ew.where(ew.logical_and(ew.eq(x, 0), ew.le(y, 0)), 0.0, _xlogy(g, y))
    return gx, ew.div(ew.mul(g, x), y)


def sgn(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.sgn (real tensors: sign)."""
    return ew.sign(input)


def angle(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.angle on a real tensor: the argument of each element as a complex number, pi for a negative
    one and 0 otherwise (-0.0 included); NaN stays NaN. Integers and bools give the default float dtype. The
    gradient is zero, as torch's for real input."""
    x = _tensor(input, "angle")
    dt = x.dtype if x.dtype.is_floating_point else _dtype.get_default_dtype()

    def forward(v: Tensor) -> Tensor:
        y = ew.mul(ew.lt(v, 0).to(dt), math.pi)
        return ew.where(ew.isnan(v), v, y) if v.dtype.is_floating_point else y

    return ew.with_derivative("AngleBackward0", forward, lambda g, v: zeros_of(v._shape, g.dtype), x)


def positive(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.positive: the input itself."""
    if _tensor(input, "positive").dtype is _dtype.bool_:
        raise TypeError("positive(): the positive operator is not supported on bool tensors")
    return input


def float_power(input, exponent) -> Tensor:  # noqa: A002
    """Same as torch.float_power: the power computed in float64 (at least one argument a tensor)."""
    ew.check_operands("float_power", input, exponent)
    base = input.to(_dtype.float64) if isinstance(input, Tensor) else input
    exp = exponent.to(_dtype.float64) if isinstance(exponent, Tensor) else exponent
    if not isinstance(base, Tensor):
        base = ew.as_tensor_of(base, _dtype.float64)
    return ew.pow(base, exp)


def float_power_(input: Tensor, exponent) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.float_power_: ``float_power(self, exponent)`` written into this tensor, which must
    be float64 (the result's dtype)."""
    if input.dtype is not _dtype.float64:
        raise RuntimeError(
            f"the base given to float_power_ has dtype {input.dtype.name} but the operation's result requires "
            "dtype float64"
        )
    return ew.write_back(input, float_power, exponent)


negative = ew.neg
absolute = ew.abs
arcsin, arccos, arctan = ew.asin, ew.acos, ew.atan
arcsinh, arccosh, arctanh = ew.asinh, ew.acosh, ew.atanh
arctan2 = ew.atan2
fix = ew.trunc


def div(input, other, *, rounding_mode: str | None = None, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """Same as torch.div: true division, or with ``rounding_mode`` "trunc" (toward zero) or "floor" (toward
    -inf) a rounded quotient of the operands' promoted dtype (integers stay integers; an integer division by
    zero raises). The rounded forms have a zero gradient, as torch's."""
    if rounding_mode is None:
        return ew.div(input, other, out)
    if rounding_mode not in ("trunc", "floor"):
        raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                         f"{rounding_mode!r}")  # fmt: skip
    ew.check_operands("div", input, other, "both")
    if rounding_mode == "floor":
        q = ew.floor_divide(input, other)
    else:
        dt = ew.result_type(input, other)
        a, b = ew.as_tensor_of(input, dt), ew.as_tensor_of(other, dt)
        if dt.is_floating_point:
            q = ew.trunc(ew.div(a, b))
        else:  # the floor quotient, one up where the remainder is nonzero and the signs differ
            q = ew.floor_divide(a, b)
            up = ew.logical_and(ew.ne(ew.plain_sub(a, ew.mul(q, b)), 0), ew.ne(ew.lt(a, 0), ew.lt(b, 0)))
            q = ew.plain_add(q, up.to(dt))
    return q if out is None else ew.copy_(out, q)


divide = true_divide = div


def div_(self: Tensor, other, *, rounding_mode: str | None = None) -> Tensor:
    """Same as torch.Tensor.div_ (``rounding_mode`` as in ``div``)."""
    if rounding_mode is None:
        return ew.inplace_ops["div_"](self, other)
    return ew.write_back(self, div, other, rounding_mode=rounding_mode)


def round(input: Tensor, *, decimals: int = 0, out: Tensor | None = None) -> Tensor:  # noqa: A001, A002
    """Same as torch.round: to the nearest integer, ties to even; with ``decimals``, to that many decimal
    places (negative: to tens, hundreds, ...), as torch computes it: ``round(x * 10**d) / 10**d`` (for
    negative d, ``round(x / 10**-d) * 10**-d``) in the input's dtype. Integers take decimals=0 only."""
    if not decimals:
        return ew.round(input) if out is None else ew.round(input, out=out)
    x = _tensor(input, "round")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"round(): decimals={decimals} is not implemented for {x.dtype.name} tensors "
                                  "(as torch); convert to a floating dtype first")  # fmt: skip
    scale = 10.0 ** abs(int(decimals))
    y = ew.div(ew.round(ew.mul(x, scale)), scale) if decimals > 0 else ew.mul(ew.round(ew.div(x, scale)), scale)
    return y if out is None else ew.copy_(out, y)


def round_(self: Tensor, *, decimals: int = 0) -> Tensor:
    """Same as torch.Tensor.round_ (``decimals`` as in ``round``)."""
    if not decimals:
        return ew.round_(self)
    return ew.write_back(self, round, decimals=decimals)


# the rows' public names are these wrappers (as pow's is its own): Tensor methods and pyframe.div/round bind them
ew.binary_ops["div"], ew.unary_ops["round"], ew.inplace_unary_ops["round_"] = div, round, round_
