"""The location-scale families drawn by a transform of one uniform or normal draw: Normal, Laplace, Cauchy, Uniform
and GeneralizedPareto. Each is ``loc + scale * standard draw`` (Uniform: ``low + (high - low) * U``), so
``rsample`` is reparameterised and ``cdf``/``icdf`` are closed forms."""

from __future__ import annotations

import math
from numbers import Number

from pyframe import _dtype
from pyframe import ops as T
from pyframe._grad_mode import no_grad
from pyframe.distributions import constraints
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.exp_family import ExponentialFamily
from pyframe.distributions.utils import _standard_normal, broadcast_all
from pyframe.tensor import Tensor

__all__ = ["Cauchy", "GeneralizedPareto", "Laplace", "Normal", "Uniform"]

_Real = Tensor | Number
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class _LocScale(Distribution):
    """``loc`` (real) and ``scale`` (positive), broadcast together."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc: _Real, scale: _Real, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.size(), validate_args=validate_args)

    mode = property(lambda self: self.loc, doc="``loc``.")

    def _z(self, value: Tensor) -> Tensor:
        return (value - self.loc) / self.scale

    def _checked(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return value


class Normal(_LocScale, ExponentialFamily):
    """Normal (Gaussian) distribution with mean ``loc`` and standard deviation ``scale``.

    Args:
        loc (float, Tensor): the mean.
        scale (float, Tensor): the standard deviation, positive.
    """

    _mean_carrier_measure = 0
    mean = property(lambda self: self.loc, doc="``loc``.")
    stddev = property(lambda self: self.scale, doc="``scale``.")
    variance = property(lambda self: self.scale.pow(2), doc="``scale**2``.")

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return T.normal(self.loc.expand(shape), self.scale.expand(shape))

    def rsample(self, sample_shape=()) -> Tensor:
        return self.loc + self.scale * _standard_normal(self._extended_shape(sample_shape), dtype=self.loc.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        value = self._checked(value)
        scale = self.scale
        return -((value - self.loc) ** 2) / (2 * scale**2) - scale.log() - _LOG_SQRT_2PI

    def cdf(self, value: Tensor) -> Tensor:
        return 0.5 * (1 + T.erf(self._z(self._checked(value)) / math.sqrt(2)))

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * math.sqrt(2) * T.erfinv(2 * value - 1)

    def entropy(self) -> Tensor:
        return 0.5 + _LOG_SQRT_2PI + self.scale.log()

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        precision = self.scale.pow(-2)
        return (self.loc * precision, -0.5 * precision)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return -0.25 * x.pow(2) / y + 0.5 * T.log(-math.pi / y)


class Laplace(_LocScale):
    """Laplace (double exponential) distribution with location ``loc`` and scale ``scale``.

    Args:
        loc (float, Tensor): the mean.
        scale (float, Tensor): the scale, positive.
    """

    mean = property(lambda self: self.loc, doc="``loc``.")
    variance = property(lambda self: 2 * self.scale.pow(2), doc="``2 scale**2``.")
    stddev = property(lambda self: math.sqrt(2) * self.scale, doc="``sqrt(2) scale``.")

    def rsample(self, sample_shape=()) -> Tensor:
        # u uniform on (-1, 1), away from -1 so log1p(-|u|) stays finite
        u = self.loc.new_empty(self._extended_shape(sample_shape)).uniform_(_dtype.finfo(self.loc.dtype).eps - 1, 1)
        return self.loc - self.scale * u.sign() * T.log1p(-u.abs())

    def log_prob(self, value: Tensor) -> Tensor:
        return -T.log(2 * self.scale) - self._z(self._checked(value)).abs()

    def cdf(self, value: Tensor) -> Tensor:
        z = self._z(self._checked(value))
        return 0.5 - 0.5 * z.sign() * T.expm1(-z.abs())

    def icdf(self, value: Tensor) -> Tensor:
        c = value - 0.5
        return self.loc - self.scale * c.sign() * T.log1p(-2 * c.abs())

    def entropy(self) -> Tensor:
        return 1 + T.log(2 * self.scale)


class Cauchy(_LocScale):
    """Cauchy (Lorentz) distribution with location ``loc`` and half-width ``scale``: the ratio of two centred
    normals.

    Args:
        loc (float, Tensor): the mode and median.
        scale (float, Tensor): the half width at half maximum, positive.
    """

    mean = property(lambda self: T.full(self._extended_shape(), math.nan, dtype=self.loc.dtype), doc="Undefined: NaN.")
    variance = property(lambda self: T.full(self._extended_shape(), math.inf, dtype=self.loc.dtype), doc="Infinite.")

    def rsample(self, sample_shape=()) -> Tensor:
        return self.loc + self.scale * self.loc.new_empty(self._extended_shape(sample_shape)).cauchy_()

    def log_prob(self, value: Tensor) -> Tensor:
        z = self._z(self._checked(value))
        return -math.log(math.pi) - self.scale.log() - (z * z).log1p()

    def cdf(self, value: Tensor) -> Tensor:
        return T.atan(self._z(self._checked(value))) / math.pi + 0.5

    def icdf(self, value: Tensor) -> Tensor:
        return self.loc + self.scale * T.tan(math.pi * (value - 0.5))

    def entropy(self) -> Tensor:
        return math.log(4 * math.pi) + self.scale.log()


class Uniform(Distribution):
    """Uniform distribution on the half-open interval ``[low, high)``.

    Args:
        low (float, Tensor): the lower bound (inclusive).
        high (float, Tensor): the upper bound (exclusive), above ``low``.
    """

    has_rsample = True

    def __init__(self, low: _Real, high: _Real, validate_args: bool | None = None) -> None:
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.size(), validate_args=validate_args)

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {"low": constraints.less_than(self.high), "high": constraints.greater_than(self.low)}

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.interval(self.low, self.high)

    mean = property(lambda self: (self.high + self.low) / 2, doc="The midpoint.")
    mode = property(lambda self: math.nan * self.high, doc="Every point is a mode: NaN.")
    stddev = property(lambda self: (self.high - self.low) / math.sqrt(12), doc="``(high - low) / sqrt(12)``.")
    variance = property(lambda self: (self.high - self.low).pow(2) / 12, doc="``(high - low)**2 / 12``.")

    def rsample(self, sample_shape=()) -> Tensor:
        u = T.rand(self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        inside = ((self.low <= value) & (value < self.high)).to(self.low.dtype)
        return inside.log() - T.log(self.high - self.low)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value: Tensor) -> Tensor:
        return self.low + value * (self.high - self.low)

    def entropy(self) -> Tensor:
        return T.log(self.high - self.low)


class GeneralizedPareto(_LocScale):
    """Generalized Pareto distribution with location ``loc``, scale ``scale`` and shape ``concentration`` (xi):
    exponential tails at ``xi = 0``, heavy above, bounded above ``loc - scale / xi`` below.

    Args:
        loc (float, Tensor): the lower end of the support.
        scale (float, Tensor): positive.
        concentration (float, Tensor): the shape xi.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive, "concentration": constraints.real}

    def __init__(self, loc: _Real, scale: _Real, concentration: _Real, validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        Distribution.__init__(self, self.loc.size(), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        xi = self.concentration
        return constraints.interval(self.loc, T.where(xi < 0, self.loc - self.scale / xi, math.inf))

    def _xi(self) -> tuple[Tensor, Tensor]:
        """Whether xi is (close to) 0, and xi with those entries replaced by 1 (for the branch not taken)."""
        xi = self.concentration
        zero = T.isclose(xi, T.zeros_like(xi))
        return zero, T.where(zero, 1.0, xi)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.icdf(T.rand(self._extended_shape(sample_shape), dtype=self.loc.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        z = self._z(self._checked(value))
        zero, xi = self._xi()
        k = 1 / xi + 1
        return -self.scale.log() - T.where(zero, z, T.where(k == 0, k, k * T.log1p(xi * z)))

    def log_survival_function(self, value: Tensor) -> Tensor:
        """``log P(X > value)``."""
        z = self._z(self._checked(value))
        zero, xi = self._xi()
        return T.where(zero, -z, -T.log1p(xi * z) / xi)

    def log_cdf(self, value: Tensor) -> Tensor:
        """``log P(X <= value)``."""
        return T.log1p(-T.exp(self.log_survival_function(value)))

    def cdf(self, value: Tensor) -> Tensor:
        return T.exp(self.log_cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        zero, xi = self._xi()
        log_q = T.log1p(-value)
        return T.where(zero, self.loc - self.scale * log_q, self.loc + self.scale / xi * T.expm1(-xi * log_q))

    @property
    def mean(self) -> Tensor:
        """``loc + scale / (1 - xi)`` for ``xi < 1``, else NaN."""
        xi = self.concentration
        ok = xi < 1
        return T.where(ok, self.loc + self.scale / (1 - T.where(ok, xi, 0.5)), math.nan)

    @property
    def variance(self) -> Tensor:
        """``scale**2 / ((1 - xi)**2 (1 - 2 xi))`` for ``xi < 1/2``, else NaN."""
        xi = self.concentration
        ok = xi < 0.5
        xs = T.where(ok, xi, 0.25)
        return T.where(ok, self.scale**2 / ((1 - xs) ** 2 * (1 - 2 * xs)), math.nan)

    def entropy(self) -> Tensor:
        return T.broadcast_to(self.scale.log() + self.concentration + 1, self.batch_shape)
