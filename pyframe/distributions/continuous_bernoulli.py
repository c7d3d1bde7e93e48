"""``ContinuousBernoulli``: the normalised Bernoulli likelihood as a density on ``[0, 1]`` (Loaiza-Ganem and
Cunningham, 2019)."""

from __future__ import annotations

import math
from numbers import Number

from pyframe import ops as T
from pyframe._grad_mode import no_grad
from pyframe.distributions import constraints
from pyframe.distributions.discrete import _ProbsOrLogits
from pyframe.distributions.exp_family import ExponentialFamily
from pyframe.distributions.utils import clamp_probs, lazy_property, logits_to_probs
from pyframe.nn import functional as F
from pyframe.tensor import Tensor

__all__ = ["ContinuousBernoulli"]

_Param = Tensor | Number | None


class ContinuousBernoulli(_ProbsOrLogits, ExponentialFamily):
    """Continuous Bernoulli distribution, density ``C(p) p**x (1 - p)**(1 - x)`` on ``[0, 1]``.

    Near ``p = 1/2`` the closed forms lose precision, so inside ``lims`` they are replaced by Taylor expansions
    around 1/2.

    Args:
        probs (Number, Tensor): the parameter, in ``[0, 1]`` (clamped away from 0 and 1).
        logits (Number, Tensor): its log-odds.
        lims (tuple of float): the interval around 1/2 where the Taylor expansions are used.
            Default: ``(0.499, 0.501)``.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    _mean_carrier_measure = 0
    has_rsample = True

    def __init__(
        self,
        probs: _Param = None,
        logits: _Param = None,
        lims: tuple[float, float] = (0.499, 0.501),
        validate_args: bool | None = None,
    ) -> None:
        self._take(probs, logits)
        if probs is not None:
            if validate_args is not None and not bool(constraints.unit_interval.check(self.probs).all()):
                raise ValueError("The parameter probs has invalid values")
            self.__dict__["probs"] = clamp_probs(self.probs)
        self._lims = lims
        super().__init__(self._param.size(), validate_args=validate_args)

    @lazy_property
    def probs(self) -> Tensor:
        """The parameter (clamped into ``(0, 1)``)."""
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _stable(self) -> Tensor:
        """Where ``probs`` is outside ``lims``, so the closed forms are accurate."""
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _p(self) -> Tensor:
        """``probs`` with the unstable entries moved to ``lims[0]`` (their closed form is computed, then
        discarded)."""
        return T.where(self._stable(), self.probs, self._lims[0])

    def _log_norm(self) -> Tensor:
        """``log C(p)``, ``C(p) = 2 atanh(1 - 2p) / (1 - 2p)``."""
        p = self._p()
        low = T.where(p <= 0.5, p, 0.0)
        high = T.where(p >= 0.5, p, 1.0)
        closed = T.log((T.log1p(-p) - p.log()).abs()) - T.where(p <= 0.5, T.log1p(-2.0 * low), T.log(2.0 * high - 1.0))
        d2 = (self.probs - 0.5) ** 2
        return T.where(self._stable(), closed, math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * d2) * d2)

    @property
    def mean(self) -> Tensor:
        """``p / (2p - 1) + 1 / (log(1 - p) - log p)``."""
        p = self._p()
        d = self.probs - 0.5
        closed = p / (2.0 * p - 1.0) + 1.0 / (T.log1p(-p) - p.log())
        return T.where(self._stable(), closed, 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * d * d) * d)

    @property
    def variance(self) -> Tensor:
        """``p (p - 1) / (1 - 2p)**2 + 1 / (log(1 - p) - log p)**2``."""
        p = self._p()
        d2 = (self.probs - 0.5) ** 2
        closed = p * (p - 1.0) / (1.0 - 2.0 * p) ** 2 + 1.0 / (T.log1p(-p) - p.log()) ** 2
        return T.where(self._stable(), closed, 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * d2) * d2)

    stddev = property(lambda self: self.variance.sqrt(), doc="The square root of the variance.")

    def sample(self, sample_shape=()) -> Tensor:
        u = T.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype)
        with no_grad():
            return self.icdf(u)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.icdf(T.rand(self._extended_shape(sample_shape), dtype=self.probs.dtype))

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = self._broadcast_checked(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none") + self._log_norm()

    def cdf(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        p = self._p()
        closed = (p**value * (1.0 - p) ** (1.0 - value) + p - 1.0) / (2.0 * p - 1.0)
        inside = T.where(self._stable(), closed, value)
        return T.where(value <= 0.0, T.zeros_like(value), T.where(value >= 1.0, T.ones_like(value), inside))

    def icdf(self, value: Tensor) -> Tensor:
        p = self._p()
        closed = (T.log1p(-p + value * (2.0 * p - 1.0)) - T.log1p(-p)) / (p.log() - T.log1p(-p))
        return T.where(self._stable(), closed, value)

    def entropy(self) -> Tensor:
        log_q, log_p = T.log1p(-self.probs), self.probs.log()
        return self.mean * (log_q - log_p) - self._log_norm() - log_q

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.logits,)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        lo, hi = self._lims[0] - 0.5, self._lims[1] - 0.5
        stable = (x <= lo) | (x > hi)
        xs = T.where(stable, x, lo)
        closed = T.log(T.expm1(xs).abs()) - T.log(xs.abs())
        return T.where(stable, closed, 0.5 * x + x**2 / 24.0 - x**4 / 2880.0)
