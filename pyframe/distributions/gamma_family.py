"""The families built on Gamma draws: Gamma, Chi2, Exponential, Beta, Dirichlet, StudentT, FisherSnedecor.

Gamma draws come from the C core (``_standard_gamma``: Marsaglia and Tsang) and are reparameterised through the
implicit gradient of the Gamma cdf in its shape, so every ``rsample`` here is differentiable; Dirichlet draws are
normalised Gamma draws, Beta is a two-category Dirichlet, StudentT and FisherSnedecor are ratios."""

from __future__ import annotations

import math
from numbers import Number

from pyframe import _dtype, special
from pyframe import ops as T
from pyframe.distributions import constraints
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.exp_family import ExponentialFamily
from pyframe.distributions.utils import _standard_normal, broadcast_all
from pyframe.nn import functional as F
from pyframe.ops.random import _standard_gamma
from pyframe.tensor import Tensor

__all__ = ["Beta", "Chi2", "Dirichlet", "Exponential", "FisherSnedecor", "Gamma", "StudentT"]

_Real = Tensor | Number


def _floor_at_tiny(x: Tensor) -> Tensor:
    """Raise underflowed draws to the dtype's smallest normal number in place, outside autograd (a Gamma draw of
    0 has log-density -inf and an infinite gradient)."""
    x.detach().clamp_(min=_dtype.finfo(x.dtype).tiny)
    return x


class Gamma(ExponentialFamily):
    """Gamma distribution with shape ``concentration`` (alpha) and ``rate`` (beta = 1 / scale).

    Args:
        concentration (float, Tensor): the shape, positive.
        rate (float, Tensor): the rate, positive.
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration: _Real, rate: _Real, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.size(), validate_args=validate_args)

    mean = property(lambda self: self.concentration / self.rate, doc="``alpha / beta``.")
    mode = property(lambda self: ((self.concentration - 1) / self.rate).clamp(min=0), doc="``(alpha-1)/beta``, >= 0.")
    variance = property(lambda self: self.concentration / self.rate.pow(2), doc="``alpha / beta**2``.")

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        return _floor_at_tiny(_standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        value = T.as_tensor(value, dtype=self.rate.dtype)
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration, self.rate
        return T.xlogy(a, b) + T.xlogy(a - 1, value) - b * value - T.lgamma(a)

    def entropy(self) -> Tensor:
        a = self.concentration
        return a - self.rate.log() + T.lgamma(a) + (1.0 - a) * T.digamma(a)

    def cdf(self, value: Tensor) -> Tensor:
        """The regularised lower incomplete gamma function ``P(alpha, beta x)``."""
        if self._validate_args:
            self._validate_sample(value)
        return special.gammainc(self.concentration, self.rate * value)

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return T.lgamma(x + 1) + (x + 1) * T.log(-y.reciprocal())


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``.

    Args:
        df (float, Tensor): the degrees of freedom, positive.
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df: _Real, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    df = property(lambda self: self.concentration * 2, doc="The degrees of freedom.")


class Exponential(ExponentialFamily):
    """Exponential distribution with rate ``rate``.

    Args:
        rate (float, Tensor): the rate (1 / mean), positive.
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, rate: _Real, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.size(), validate_args=validate_args)

    mean = property(lambda self: self.rate.reciprocal(), doc="``1 / rate``.")
    stddev = property(lambda self: self.rate.reciprocal(), doc="``1 / rate``.")
    mode = property(lambda self: T.zeros_like(self.rate), doc="Always 0.")
    variance = property(lambda self: self.rate.pow(-2), doc="``1 / rate**2``.")

    def rsample(self, sample_shape=()) -> Tensor:
        return self.rate.new_empty(self._extended_shape(sample_shape)).exponential_() / self.rate

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return -T.expm1(-self.rate * value)

    def icdf(self, value: Tensor) -> Tensor:
        return -T.log1p(-value) / self.rate

    def entropy(self) -> Tensor:
        return 1.0 - self.rate.log()

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (-self.rate,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return -T.log(-x)


class Dirichlet(ExponentialFamily):
    """Dirichlet distribution over the simplex, with concentration ``concentration`` (the last dimension is the
    event).

    Args:
        concentration (Tensor): positive, at least one-dimensional.
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration: Tensor, validate_args: bool | None = None) -> None:
        if not isinstance(concentration, Tensor) or concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:], validate_args=validate_args)

    def rsample(self, sample_shape=()) -> Tensor:
        g = _standard_gamma(self.concentration.expand(self._extended_shape(sample_shape)))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return T.xlogy(a - 1.0, value).sum(-1) + T.lgamma(a.sum(-1)) - T.lgamma(a).sum(-1)

    @property
    def mean(self) -> Tensor:
        """``alpha / sum(alpha)``."""
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self) -> Tensor:
        """``(alpha - 1) / sum(alpha - 1)`` with negative terms set to 0; when every alpha is below 1, the vertex
        of the largest."""
        am1 = (self.concentration - 1).clamp(min=0.0)
        inner = am1 / am1.sum(-1, True)
        vertex = F.one_hot(inner.argmax(-1), am1.shape[-1]).to(inner.dtype)
        return T.where((self.concentration < 1).all(-1, keepdim=True), vertex, inner)

    @property
    def variance(self) -> Tensor:
        """``alpha_i (a0 - alpha_i) / (a0**2 (a0 + 1))`` with ``a0 = sum(alpha)``."""
        a = self.concentration
        a0 = a.sum(-1, True)
        return a * (a0 - a) / (a0.pow(2) * (a0 + 1))

    def entropy(self) -> Tensor:
        a = self.concentration
        k, a0 = a.size(-1), a.sum(-1)
        return T.lgamma(a).sum(-1) - T.lgamma(a0) - (k - a0) * T.digamma(a0) - ((a - 1.0) * T.digamma(a)).sum(-1)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.concentration,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.lgamma().sum(-1) - T.lgamma(x.sum(-1))


class Beta(ExponentialFamily):
    """Beta distribution on ``[0, 1]``: the first coordinate of a ``Dirichlet([concentration1, concentration0])``.

    Args:
        concentration1 (float, Tensor): alpha, positive.
        concentration0 (float, Tensor): beta, positive.
    """

    arg_constraints = {"concentration1": constraints.positive, "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1: _Real, concentration0: _Real, validate_args: bool | None = None) -> None:
        self._dirichlet = Dirichlet(T.stack(broadcast_all(concentration1, concentration0), -1), validate_args)
        super().__init__(self._dirichlet.batch_shape, validate_args=validate_args)

    concentration1 = property(lambda self: self._dirichlet.concentration[..., 0], doc="alpha.")
    concentration0 = property(lambda self: self._dirichlet.concentration[..., 1], doc="beta.")

    @property
    def mean(self) -> Tensor:
        """``alpha / (alpha + beta)``."""
        return self.concentration1 / (self.concentration1 + self.concentration0)

    mode = property(lambda self: self._dirichlet.mode[..., 0], doc="The Dirichlet mode's first coordinate.")

    @property
    def variance(self) -> Tensor:
        """``alpha beta / ((alpha + beta)**2 (alpha + beta + 1))``."""
        s = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (s.pow(2) * (s + 1))

    def rsample(self, sample_shape=()) -> Tensor:
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(T.stack([value, 1.0 - value], -1))

    def entropy(self) -> Tensor:
        return self._dirichlet.entropy()

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return (self.concentration1, self.concentration0)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        return T.lgamma(x) + T.lgamma(y) - T.lgamma(x + y)


class StudentT(Distribution):
    """Student's t distribution with ``df`` degrees of freedom, location ``loc`` and scale ``scale``.

    Args:
        df (float, Tensor): degrees of freedom, positive.
        loc (float, Tensor): location. Default: 0.
        scale (float, Tensor): scale, positive. Default: 1.
    """

    arg_constraints = {"df": constraints.positive, "loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df: _Real, loc: _Real = 0.0, scale: _Real = 1.0, validate_args: bool | None = None) -> None:
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    mean = property(lambda self: T.where(self.df > 1, self.loc, math.nan), doc="``loc``; NaN for ``df <= 1``.")
    mode = property(lambda self: self.loc, doc="``loc``.")

    @property
    def variance(self) -> Tensor:
        """``scale**2 df / (df - 2)`` for ``df > 2``, infinite for ``1 < df <= 2``, NaN below."""
        df = self.df
        finite = self.scale.pow(2) * df / (T.where(df > 2, df, 3.0) - 2)
        return T.where(df > 2, finite, T.where(df > 1, math.inf, math.nan))

    def rsample(self, sample_shape=()) -> Tensor:
        z = _standard_normal(self._extended_shape(sample_shape), dtype=self.df.dtype)
        chi2 = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * z * T.rsqrt(chi2 / self.df)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        df, y = self.df, (value - self.loc) / self.scale
        log_norm = (
            self.scale.log() + 0.5 * df.log() + 0.5 * math.log(math.pi) + T.lgamma(0.5 * df) - T.lgamma(0.5 * df + 0.5)
        )
        return -0.5 * (df + 1.0) * T.log1p(y * y / df) - log_norm

    def entropy(self) -> Tensor:
        h = 0.5 * self.df
        log_beta = T.lgamma(h) + math.lgamma(0.5) - T.lgamma(h + 0.5)
        return self.scale.log() + (h + 0.5) * (T.digamma(h + 0.5) - T.digamma(h)) + 0.5 * self.df.log() + log_beta


class FisherSnedecor(Distribution):
    """Fisher-Snedecor (F) distribution: ``(X1 / df1) / (X2 / df2)`` for independent chi-squared ``X1``, ``X2``.

    Args:
        df1 (float, Tensor): the numerator's degrees of freedom, positive.
        df2 (float, Tensor): the denominator's degrees of freedom, positive.
    """

    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1: _Real, df2: _Real, validate_args: bool | None = None) -> None:
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(0.5 * self.df1, 0.5 * self.df1)  # chi2(df1) / df1
        self._gamma2 = Gamma(0.5 * self.df2, 0.5 * self.df2)
        super().__init__(self.df1.size(), validate_args=validate_args)

    @property
    def mean(self) -> Tensor:
        """``df2 / (df2 - 2)``; NaN for ``df2 <= 2``."""
        d2 = self.df2
        return T.where(d2 > 2, d2 / (T.where(d2 > 2, d2, 3.0) - 2), math.nan)

    @property
    def mode(self) -> Tensor:
        """``(df1 - 2) / df1 * df2 / (df2 + 2)``; NaN for ``df1 <= 2``."""
        d1, d2 = self.df1, self.df2
        return T.where(d1 > 2, (d1 - 2) / d1 * d2 / (d2 + 2), math.nan)

    @property
    def variance(self) -> Tensor:
        """``2 df2**2 (df1 + df2 - 2) / (df1 (df2 - 2)**2 (df2 - 4))``; NaN for ``df2 <= 4``."""
        d1, d2 = self.df1, self.df2
        d2s = T.where(d2 > 4, d2, 5.0)
        return T.where(d2 > 4, 2 * d2s.pow(2) * (d1 + d2s - 2) / (d1 * (d2s - 2).pow(2) * (d2s - 4)), math.nan)

    def rsample(self, sample_shape=()) -> Tensor:
        tiny = _dtype.finfo(self.df1.dtype).tiny
        x1 = self._gamma1.rsample(sample_shape)
        x2 = self._gamma2.rsample(sample_shape).clamp(min=tiny)
        return (x1 / x2).clamp(min=tiny)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        h1, h2, ratio = 0.5 * self.df1, 0.5 * self.df2, self.df1 / self.df2
        log_norm = (h1 + h2).lgamma() - h1.lgamma() - h2.lgamma() + h1 * ratio.log()
        return log_norm + (h1 - 1) * value.log() - (h1 + h2) * T.log1p(ratio * value)
