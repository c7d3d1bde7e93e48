"""Transforms applied element by element: the parameterless bijections (``ExpTransform``, ``SigmoidTransform``,
``SoftplusTransform``, ``TanhTransform``) and ``AbsTransform``, made from one table row each by
:func:`_elementwise`, and the parameterised ``AffineTransform``, ``PowerTransform`` and
``CumulativeDistributionTransform``."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from numbers import Number
from typing import Any

from pyframe import _dtype
from pyframe import ops as T
from pyframe.distributions import constraints
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.transform import Transform
from pyframe.distributions.utils import _sum_rightmost, broadcast_all
from pyframe.nn import functional as F
from pyframe.tensor import Tensor

__all__ = [
    "ExpTransform", "PowerTransform", "SigmoidTransform", "SoftplusTransform", "TanhTransform", "AbsTransform",
    "AffineTransform", "CumulativeDistributionTransform",
]  # fmt: skip

_Fn = Callable[..., Tensor]


class _Elementwise(Transform):
    """A parameterless transform applied to every element; its maps are the class's ``_maps``."""

    _maps: tuple[_Fn, _Fn | None, _Fn | None]

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return self._maps[0](x)

    def _inverse(self, y: Tensor) -> Tensor:
        inverse = self._maps[1]
        if inverse is None:
            raise NotImplementedError(f"{type(self).__name__} has no inverse")
        return inverse(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        ladj = self._maps[2]
        if ladj is None:
            raise NotImplementedError(f"{type(self).__name__} has no log-abs-det-Jacobian")
        return ladj(x, y)


def _elementwise(
    name: str,
    doc: str,
    domain: constraints.Constraint,
    codomain: constraints.Constraint,
    forward: _Fn,
    inverse: _Fn | None,
    log_abs_det_jacobian: _Fn | None,
    monotone: bool = True,
) -> type[_Elementwise]:
    """A transform class from one row: its maps, domain and codomain (increasing bijections unless not
    ``monotone``)."""
    attrs: dict[str, Any] = {
        "__doc__": doc,
        "__module__": __name__,
        "__qualname__": name,
        "domain": domain,
        "codomain": codomain,
        "bijective": monotone,
        "_maps": (forward, inverse, log_abs_det_jacobian),
    }
    if monotone:
        attrs["sign"] = +1
    return type(name, (_Elementwise,), attrs)


def _clipped_sigmoid(x: Tensor) -> Tensor:
    """The sigmoid kept inside ``[tiny, 1 - eps]`` of the dtype, so its logit stays finite."""
    fi = _dtype.finfo(x.dtype)
    return T.sigmoid(x).clamp(min=fi.tiny, max=1.0 - fi.eps)


def _clipped_logit(y: Tensor) -> Tensor:
    fi = _dtype.finfo(y.dtype)
    y = y.clamp(min=fi.tiny, max=1.0 - fi.eps)
    return y.log() - (-y).log1p()


ExpTransform = _elementwise(
    "ExpTransform", "``y = exp(x)``.", constraints.real, constraints.positive,
    T.exp, T.log, lambda x, y: x,
)  # fmt: skip
SigmoidTransform = _elementwise(
    "SigmoidTransform", "``y = 1 / (1 + exp(-x))`` (kept inside ``(0, 1)`` of the dtype).",
    constraints.real, constraints.unit_interval,
    _clipped_sigmoid, _clipped_logit, lambda x, y: -F.softplus(-x) - F.softplus(x),
)  # fmt: skip
SoftplusTransform = _elementwise(
    "SoftplusTransform", "``y = log(1 + exp(x))``.", constraints.real, constraints.positive,
    F.softplus, lambda y: T.log(-T.expm1(-y)) + y, lambda x, y: -F.softplus(-x),
)  # fmt: skip
TanhTransform = _elementwise(
    "TanhTransform", "``y = tanh(x)``; ``log|dy/dx| = 2 (log 2 - x - softplus(-2x))``, stable for large ``|x|``.",
    constraints.real, constraints.interval(-1.0, 1.0),
    T.tanh, T.atanh, lambda x, y: 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x)),
)  # fmt: skip
AbsTransform = _elementwise(
    "AbsTransform", "``y = |x|``: not injective; its inverse returns the non-negative preimage.",
    constraints.real, constraints.positive,
    T.abs, lambda y: y, None, monotone=False,
)  # fmt: skip


def _equal(a: Any, b: Any) -> bool:
    """Whether two parameters (numbers or tensors) are equal everywhere."""
    if isinstance(a, Number) and isinstance(b, Number):
        return a == b
    return bool((T.as_tensor(a) == T.as_tensor(b)).all())


def _shape_of(v: Any) -> tuple[int, ...]:
    return tuple(v.shape) if isinstance(v, Tensor) else ()


class AffineTransform(Transform):
    """``y = loc + scale * x``.

    Args:
        loc (Tensor or float): the shift.
        scale (Tensor or float): the factor.
        event_dim (int): how many rightmost dimensions form an event (the log-det-Jacobian is summed over them).
            Default: 0.
    """

    bijective = True
    _copy_recaches = True

    def __init__(self, loc: Tensor | float, scale: Tensor | float, event_dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.loc, self.scale, self._event_dim = loc, scale, event_dim

    event_dim = property(lambda self: self._event_dim)  # type: ignore[assignment]

    def _space(self) -> constraints.Constraint:
        return constraints.independent(constraints.real, self._event_dim) if self._event_dim else constraints.real

    domain = constraints.dependent_property(_space, is_discrete=False)
    codomain = constraints.dependent_property(_space, is_discrete=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AffineTransform):
            return False
        return _equal(self.loc, other.loc) and _equal(self.scale, other.scale)

    __hash__ = Transform.__hash__

    @property
    def sign(self) -> Tensor | int:  # type: ignore[override]
        s = self.scale
        return s.sign() if isinstance(s, Tensor) else (s > 0) - (s < 0)

    def _call(self, x: Tensor) -> Tensor:
        return self.loc + self.scale * x

    def _inverse(self, y: Tensor) -> Tensor:
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        s = self.scale
        lad = s.abs().log() if isinstance(s, Tensor) else T.full_like(x, math.log(abs(s)))
        lad = lad.expand(T.broadcast_shapes(tuple(x.shape), tuple(lad.shape)))
        return _sum_rightmost(lad, self._event_dim)

    def forward_shape(self, shape: Sequence[int]) -> Sequence[int]:
        return T.broadcast_shapes(tuple(shape), _shape_of(self.loc), _shape_of(self.scale))

    inverse_shape = forward_shape


class PowerTransform(Transform):
    """``y = x ** exponent`` on positive numbers.

    Args:
        exponent (Tensor or float): the power.
    """

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True
    _copy_recaches = True

    def __init__(self, exponent: Tensor | float, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        (self.exponent,) = broadcast_all(exponent)

    sign = property(lambda self: self.exponent.sign())  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PowerTransform) and _equal(self.exponent, other.exponent)

    __hash__ = Transform.__hash__

    def _call(self, x: Tensor) -> Tensor:
        return x.pow(self.exponent)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return (self.exponent * y / x).abs().log()  # |d x^p / dx| = |p x^(p-1)| = |p y / x|

    def forward_shape(self, shape: Sequence[int]) -> Sequence[int]:
        return T.broadcast_shapes(tuple(shape), _shape_of(self.exponent))

    inverse_shape = forward_shape


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)``: maps a univariate distribution's support onto ``[0, 1]`` (its inverse is the
    ``icdf``, its log-det-Jacobian the ``log_prob``). Used to build copulas.

    Args:
        distribution (Distribution): a univariate distribution with ``cdf``, ``icdf`` and ``log_prob``.
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = +1
    _copy_recaches = True

    def __init__(self, distribution: Distribution, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self) -> constraints.Constraint | None:  # type: ignore[override]
        return self.distribution.support

    def _call(self, x: Tensor) -> Tensor:
        return self.distribution.cdf(x)

    def _inverse(self, y: Tensor) -> Tensor:
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return self.distribution.log_prob(x)
