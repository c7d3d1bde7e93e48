"""``TransformedDistribution``: a base distribution pushed through a sequence of transforms. Sampling applies the
transforms; ``log_prob`` inverts them and subtracts each one's log-abs-det-Jacobian (change of variables)."""

from __future__ import annotations

from collections.abc import Sequence

from pyframe._grad_mode import no_grad
from pyframe.distributions import constraints
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.independent import Independent
from pyframe.distributions.transform import ComposeTransform, Transform
from pyframe.distributions.utils import _sum_rightmost
from pyframe.tensor import Size, Tensor

__all__ = ["TransformedDistribution"]


class TransformedDistribution(Distribution):
    """The distribution of ``f_n(...f_1(X))`` for ``X ~ base_distribution`` and ``transforms = [f_1, ..., f_n]``.

    The base is expanded where the transforms broadcast it to a larger shape, and wrapped in ``Independent`` when
    the transforms act on more dimensions than its event. Subclasses (``LogNormal``, ``Gumbel`` ...) are families
    defined this way.

    Args:
        base_distribution (Distribution): the distribution of ``X``.
        transforms (Transform or list of Transform): applied in order.
    """

    arg_constraints: dict[str, constraints.Constraint] = {}

    def __init__(
        self,
        base_distribution: Distribution,
        transforms: Transform | Sequence[Transform],
        validate_args: bool | None = None,
    ) -> None:
        if isinstance(transforms, Transform):
            transforms = [transforms]
        if not isinstance(transforms, list) or not all(isinstance(t, Transform) for t in transforms):
            raise ValueError(f"transforms must be a Transform or a list of Transforms, but was {transforms}")
        self.transforms = transforms
        chain = ComposeTransform(transforms)
        base_event = len(base_distribution.event_shape)
        base_shape = base_distribution.batch_shape + base_distribution.event_shape
        if len(base_shape) < chain.domain.event_dim:
            raise ValueError(
                f"base_distribution needs to have shape with size at least {chain.domain.event_dim}, "
                f"but got {base_shape}."
            )
        shape = Size(chain.forward_shape(base_shape))
        wanted_base = Size(chain.inverse_shape(shape))
        if wanted_base != base_shape:  # the transforms' parameters broadcast the base to a larger batch
            base_distribution = base_distribution.expand(wanted_base[: len(wanted_base) - base_event])
        if chain.domain.event_dim > base_event:
            base_distribution = Independent(base_distribution, chain.domain.event_dim - base_event)
        self.base_dist = base_distribution
        event_dim = max(chain.codomain.event_dim, base_event + chain.codomain.event_dim - chain.domain.event_dim)
        cut = len(shape) - event_dim
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance: Distribution | None = None) -> Distribution:
        new = self._expanded(batch_shape, _instance)
        shape = Size(batch_shape) + self.event_shape
        for t in reversed(self.transforms):
            shape = t.inverse_shape(shape)
        new.base_dist = self.base_dist.expand(shape[: len(shape) - len(self.base_dist.event_shape)])
        return new

    @constraints.dependent_property(is_discrete=False)
    def support(self) -> constraints.Constraint:
        if not self.transforms:
            return self.base_dist.support
        last = self.transforms[-1].codomain
        extra = len(self.event_shape) - last.event_dim
        return constraints.independent(last, extra) if extra > 0 else last

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    def _forward(self, x: Tensor) -> Tensor:
        for t in self.transforms:
            x = t(x)
        return x

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            return self._forward(self.base_dist.sample(sample_shape))

    def rsample(self, sample_shape=()) -> Tensor:
        return self._forward(self.base_dist.rsample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        """``log p_base(f^-1(y))`` minus the log-abs-det-Jacobians, summed over each event."""
        if self._validate_args:
            self._validate_sample(value)
        y, dim, total = value, len(self.event_shape), 0.0
        for t in reversed(self.transforms):
            x = t.inv(y)
            dim += t.domain.event_dim - t.codomain.event_dim
            total = total - _sum_rightmost(t.log_abs_det_jacobian(x, y), dim - t.domain.event_dim)
            y = x
        return total + _sum_rightmost(self.base_dist.log_prob(y), dim - len(self.base_dist.event_shape))

    def _monotonize_cdf(self, value: Tensor) -> Tensor:
        """``value``, or ``1 - value`` when the transforms decrease overall (their signs' product)."""
        sign = 1
        for t in self.transforms:
            sign = sign * t.sign
        return value if isinstance(sign, int) and sign == 1 else sign * (value - 0.5) + 0.5

    def cdf(self, value: Tensor) -> Tensor:
        for t in reversed(self.transforms):
            value = t.inv(value)
        if self._validate_args:
            self.base_dist._validate_sample(value)
        return self._monotonize_cdf(self.base_dist.cdf(value))

    def icdf(self, value: Tensor) -> Tensor:
        return self._forward(self.base_dist.icdf(self._monotonize_cdf(value)))
