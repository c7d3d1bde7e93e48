"""Families defined as a simpler distribution pushed through transforms (``TransformedDistribution`` subclasses):
LogNormal, HalfNormal, HalfCauchy, Gumbel, Weibull, Pareto, Kumaraswamy, LogisticNormal, InverseGamma. Sampling and
``log_prob`` come from the base and the change of variables; each family adds its closed-form moments and
entropy."""

from __future__ import annotations

import math
from numbers import Number

from pyframe import _dtype
from pyframe import ops as T
from pyframe.distributions import constraints
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.elementwise_transforms import AbsTransform, AffineTransform, ExpTransform, PowerTransform
from pyframe.distributions.gamma_family import Exponential, Gamma
from pyframe.distributions.location_scale import Cauchy, Normal, Uniform
from pyframe.distributions.matrix_transforms import StickBreakingTransform
from pyframe.distributions.transformed_distribution import TransformedDistribution
from pyframe.distributions.utils import broadcast_all, euler_constant
from pyframe.tensor import Tensor

__all__ = [
    "Gumbel", "HalfCauchy", "HalfNormal", "InverseGamma", "Kumaraswamy", "LogNormal", "LogisticNormal", "Pareto",
    "Weibull",
]  # fmt: skip

_Real = Tensor | Number
_LOG2 = math.log(2)


def _from_base(name: str, doc: str) -> property:
    """A property reading ``name`` of ``base_dist`` (``LogNormal(loc, scale).loc`` is its Normal's)."""
    return property(lambda self: getattr(self.base_dist, name), doc=doc)


class LogNormal(TransformedDistribution):
    """``exp(X)`` for ``X ~ Normal(loc, scale)``.

    Args:
        loc (float, Tensor): the mean of ``log X``.
        scale (float, Tensor): the standard deviation of ``log X``, positive.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True
    base_dist: Normal

    def __init__(self, loc: _Real, scale: _Real, validate_args: bool | None = None) -> None:
        super().__init__(Normal(loc, scale, validate_args=validate_args), ExpTransform(), validate_args=validate_args)

    loc = _from_base("loc", "The mean of the logarithm.")
    scale = _from_base("scale", "The standard deviation of the logarithm.")
    mean = property(lambda self: (self.loc + self.scale.pow(2) / 2).exp(), doc="``exp(mu + sigma**2 / 2)``.")
    mode = property(lambda self: (self.loc - self.scale.square()).exp(), doc="``exp(mu - sigma**2)``.")

    @property
    def variance(self) -> Tensor:
        """``(exp(sigma**2) - 1) exp(2 mu + sigma**2)``."""
        s2 = self.scale.pow(2)
        return s2.expm1() * (2 * self.loc + s2).exp()

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() + self.loc


class _Folded(TransformedDistribution):
    """``|X|`` for a symmetric ``X`` centred at 0: twice the base density on ``[0, inf)``."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    scale = _from_base("scale", "The scale of the distribution folded.")
    mode = property(lambda self: T.zeros_like(self.scale), doc="Always 0.")

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value = T.as_tensor(value, dtype=self.scale.dtype)
        return T.where(value >= 0, self.base_dist.log_prob(value) + _LOG2, -math.inf)

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob: Tensor) -> Tensor:
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self) -> Tensor:
        return self.base_dist.entropy() - _LOG2


class HalfNormal(_Folded):
    """``|X|`` for ``X ~ Normal(0, scale)``.

    Args:
        scale (float, Tensor): the scale of the Normal folded, positive.
    """

    base_dist: Normal

    def __init__(self, scale: _Real, validate_args: bool | None = None) -> None:
        super().__init__(Normal(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    mean = property(lambda self: self.scale * math.sqrt(2 / math.pi), doc="``scale sqrt(2 / pi)``.")
    variance = property(lambda self: self.scale.pow(2) * (1 - 2 / math.pi), doc="``scale**2 (1 - 2 / pi)``.")


class HalfCauchy(_Folded):
    """``|X|`` for ``X ~ Cauchy(0, scale)``.

    Args:
        scale (float, Tensor): the scale of the Cauchy folded, positive.
    """

    base_dist: Cauchy

    def __init__(self, scale: _Real, validate_args: bool | None = None) -> None:
        super().__init__(Cauchy(0, scale, validate_args=False), AbsTransform(), validate_args=validate_args)

    mean = property(lambda self: T.full(self._extended_shape(), math.inf, dtype=self.scale.dtype), doc="Infinite.")
    variance = property(lambda self: self.base_dist.variance, doc="Infinite.")


class Gumbel(TransformedDistribution):
    """Gumbel (type-I extreme value) distribution: ``loc - scale log(-log U)`` for ``U`` uniform.

    Args:
        loc (float, Tensor): the location (mode).
        scale (float, Tensor): the scale, positive.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc: _Real, scale: _Real, validate_args: bool | None = None) -> None:
        self.loc, self.scale = broadcast_all(loc, scale)
        fi = _dtype.finfo(self.loc.dtype)
        scalar = isinstance(loc, Number) and isinstance(scale, Number)
        low, high = (
            (fi.tiny, 1 - fi.eps) if scalar else (T.full_like(self.loc, fi.tiny), T.full_like(self.loc, 1 - fi.eps))
        )
        base = Uniform(low, high, validate_args=validate_args)
        log = ExpTransform().inv
        chain = [log, AffineTransform(0, -T.ones_like(self.scale)), log, AffineTransform(loc, -self.scale)]
        super().__init__(base, chain, validate_args=validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return z - z.exp() - self.scale.log()

    mean = property(lambda self: self.loc + self.scale * euler_constant, doc="``loc + scale * gamma_E``.")
    mode = property(lambda self: self.loc, doc="``loc``.")
    stddev = property(lambda self: math.pi / math.sqrt(6) * self.scale, doc="``pi scale / sqrt(6)``.")
    variance = property(lambda self: self.stddev.pow(2), doc="``pi**2 scale**2 / 6``.")

    def entropy(self) -> Tensor:
        return self.scale.log() + (1 + euler_constant)


class Weibull(TransformedDistribution):
    """Weibull distribution: ``scale * E**(1 / concentration)`` for ``E ~ Exponential(1)``.

    Args:
        scale (float, Tensor): lambda, positive.
        concentration (float, Tensor): k, positive.
    """

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale: _Real, concentration: _Real, validate_args: bool | None = None) -> None:
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        chain = [PowerTransform(exponent=self.concentration_reciprocal), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(Exponential(T.ones_like(self.scale), validate_args=validate_args), chain, validate_args)

    def _moment(self, n: int) -> Tensor:
        return T.exp(T.lgamma(1 + n * self.concentration_reciprocal))

    mean = property(lambda self: self.scale * self._moment(1), doc="``lambda Gamma(1 + 1/k)``.")

    @property
    def mode(self) -> Tensor:
        """``lambda ((k - 1) / k)**(1/k)``."""
        k = self.concentration
        return self.scale * ((k - 1) / k) ** k.reciprocal()

    @property
    def variance(self) -> Tensor:
        """``lambda**2 (Gamma(1 + 2/k) - Gamma(1 + 1/k)**2)``."""
        return self.scale.pow(2) * (self._moment(2) - self._moment(1).pow(2))

    def entropy(self) -> Tensor:
        r = self.concentration_reciprocal
        return euler_constant * (1 - r) + T.log(self.scale * r) + 1


class Pareto(TransformedDistribution):
    """Pareto (type I) distribution: ``scale * exp(E)`` for ``E ~ Exponential(alpha)``.

    Args:
        scale (float, Tensor): the minimum value, positive.
        alpha (float, Tensor): the tail index, positive.
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale: _Real, alpha: _Real, validate_args: bool | None = None) -> None:
        self.scale, self.alpha = broadcast_all(scale, alpha)
        chain = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(Exponential(self.alpha, validate_args=validate_args), chain, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self) -> Tensor:
        """``alpha scale / (alpha - 1)``; infinite for ``alpha <= 1``."""
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    mode = property(lambda self: self.scale, doc="``scale``.")

    @property
    def variance(self) -> Tensor:
        """``scale**2 alpha / ((alpha - 1)**2 (alpha - 2))``; infinite for ``alpha <= 2``."""
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self) -> Tensor:
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Kumaraswamy(TransformedDistribution):
    """Kumaraswamy distribution on ``[0, 1]``, density ``a b x**(a-1) (1 - x**a)**(b-1)``: ``(1 - U**(1/b))**(1/a)``
    for ``U`` uniform.

    Args:
        concentration1 (float, Tensor): a, positive.
        concentration0 (float, Tensor): b, positive.
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: _Real, concentration0: _Real, validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = a, b = broadcast_all(concentration1, concentration0)
        base = Uniform(T.zeros_like(b), T.ones_like(b), validate_args=validate_args)
        chain = [PowerTransform(b.reciprocal()), AffineTransform(1.0, -1.0), PowerTransform(a.reciprocal())]
        super().__init__(base, chain, validate_args=validate_args)

    def _moment(self, n: int) -> Tensor:
        """``E[X**n] = b B(1 + n/a, b)``."""
        a, b = self.concentration1, self.concentration0
        return b * T.exp(T.lgamma(1 + n / a) + T.lgamma(b) - T.lgamma(1 + n / a + b))

    mean = property(lambda self: self._moment(1), doc="``b B(1 + 1/a, b)``.")
    variance = property(lambda self: self._moment(2) - self.mean.pow(2), doc="The second moment less the mean squared.")

    @property
    def mode(self) -> Tensor:
        """``((a - 1) / (a b - 1))**(1/a)`` where ``a, b >= 1`` (not both 1); NaN elsewhere."""
        a, b = self.concentration1, self.concentration0
        inner = T.where((a >= 1) & (b >= 1) & (a * b > 1), (a - 1) / (a * b - 1), math.nan)
        return inner ** a.reciprocal()

    def entropy(self) -> Tensor:
        a, b = self.concentration1, self.concentration0
        harmonic_b = T.digamma(b + 1) + euler_constant
        return (1 - b.reciprocal()) + (1 - a.reciprocal()) * harmonic_b - a.log() - b.log()


class LogisticNormal(TransformedDistribution):
    """The logistic-normal distribution on the simplex: a Normal vector of ``K - 1`` entries mapped by stick
    breaking onto ``K`` probabilities.

    Args:
        loc (float, Tensor): the Normal's mean (last dimension ``K - 1``).
        scale (float, Tensor): its standard deviation, positive.
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc: _Real, scale: _Real, validate_args: bool | None = None) -> None:
        base: Distribution = Normal(loc, scale, validate_args=validate_args)
        if not base.batch_shape:
            base = base.expand([1])
        super().__init__(base, StickBreakingTransform(), validate_args=validate_args)

    loc = property(lambda self: self.base_dist.base_dist.loc, doc="The Normal's mean.")
    scale = property(lambda self: self.base_dist.base_dist.scale, doc="The Normal's standard deviation.")


class InverseGamma(TransformedDistribution):
    """``1 / X`` for ``X ~ Gamma(concentration, rate)``.

    Args:
        concentration (float, Tensor): the Gamma's shape, positive.
        rate (float, Tensor): the Gamma's rate (the scale of ``1/X``), positive.
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True
    base_dist: Gamma

    def __init__(self, concentration: _Real, rate: _Real, validate_args: bool | None = None) -> None:
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(-base.rate.new_ones(())), validate_args=validate_args)

    concentration = _from_base("concentration", "The Gamma's shape.")
    rate = _from_base("rate", "The Gamma's rate.")

    @property
    def mean(self) -> Tensor:
        """``rate / (concentration - 1)``; infinite for ``concentration <= 1``."""
        a = self.concentration
        return T.where(a > 1, self.rate / (a - 1), math.inf)

    mode = property(lambda self: self.rate / (self.concentration + 1), doc="``rate / (concentration + 1)``.")

    @property
    def variance(self) -> Tensor:
        """``rate**2 / ((concentration - 1)**2 (concentration - 2))``; infinite for ``concentration <= 2``."""
        a = self.concentration
        return T.where(a > 2, self.rate.square() / ((a - 1).square() * (a - 2)), math.inf)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a + self.rate.log() + a.lgamma() - (1 + a) * a.digamma()
