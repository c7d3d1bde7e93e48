"""``VonMises``: the circular normal distribution."""

from __future__ import annotations

import math

from pyframe import _dtype, special
from pyframe import ops as T
from pyframe._grad_mode import no_grad
from pyframe.distributions import constraints
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.utils import broadcast_all, lazy_property
from pyframe.tensor import Size, Tensor

__all__ = ["VonMises"]


def _log_i0(x: Tensor) -> Tensor:
    """``log I0(x)`` through the exponentially scaled Bessel function (no overflow for large ``x``)."""
    return special.i0e(x).log() + x


def _log_i1(x: Tensor) -> Tensor:
    return special.i1e(x).log() + x


class VonMises(Distribution):
    """The von Mises distribution on the circle, density ``exp(kappa cos(x - loc)) / (2 pi I0(kappa))``; values are
    angles in ``[-pi, pi)``. Draws use Best and Fisher's (1979) rejection sampler in float64; there is no
    ``rsample``.

    Args:
        loc (Tensor): the mean angle, in radians.
        concentration (Tensor): kappa, positive.
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc: Tensor | float, concentration: Tensor | float, validate_args: bool | None = None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, Size(), validate_args)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        return k * T.cos(value - self.loc) - math.log(2 * math.pi) - _log_i0(k)

    @lazy_property
    def _proposal_r(self) -> Tensor:
        """Best and Fisher's ``r = (1 + rho**2) / (2 rho)`` in float64 (``1/kappa + kappa`` for tiny kappa)."""
        k = self.concentration.to(_dtype.float64)
        tau = 1 + (1 + 4 * k * k).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * k)
        return T.where(k < 1e-5, 1 / k + k, (1 + rho * rho) / (2 * rho))

    @no_grad()
    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        k = self.concentration.to(_dtype.float64).expand(shape)
        r = self._proposal_r.expand(shape)
        angle = T.zeros(shape, dtype=_dtype.float64)
        pending = T.ones(shape, dtype=_dtype.bool_)
        while bool(pending.any()):
            u1, u2, u3 = T.rand((3,) + tuple(shape), dtype=_dtype.float64).unbind()
            z = T.cos(math.pi * u1)
            f = (1 + r * z) / (r + z)
            c = k * (r - f)
            ok = pending & ((c * (2 - c) > u2) | ((c / u2).log() + 1 - c >= 0))
            angle = T.where(ok, (u3 - 0.5).sign() * f.acos(), angle)
            pending = pending & ~ok
        wrapped = (angle + math.pi + self.loc.to(_dtype.float64)) % (2 * math.pi) - math.pi
        return wrapped.to(self.loc.dtype)

    mean = property(lambda self: self.loc, doc="The mean angle ``loc``.")
    mode = property(lambda self: self.loc, doc="``loc``.")

    @property
    def variance(self) -> Tensor:
        """The circular variance ``1 - I1(kappa) / I0(kappa)``."""
        k = self.concentration
        return 1 - (_log_i1(k) - _log_i0(k)).exp()
