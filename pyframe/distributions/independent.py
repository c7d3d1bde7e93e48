"""``Independent``: reinterpret batch dimensions of a distribution as event dimensions."""

from __future__ import annotations

from typing import Generic, TypeVar

from pyframe.distributions import constraints
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.utils import _sum_rightmost
from pyframe.tensor import Size, Tensor

__all__ = ["Independent"]

D = TypeVar("D", bound=Distribution)


class Independent(Distribution, Generic[D]):
    """The same distribution with its ``reinterpreted_batch_ndims`` rightmost batch dimensions moved into the
    event: ``log_prob`` sums over them, so a diagonal Normal of batch shape ``[3]`` becomes one distribution over
    vectors of 3.

    Args:
        base_distribution (Distribution): the distribution to wrap.
        reinterpreted_batch_ndims (int): how many batch dimensions join the event.
    """

    arg_constraints: dict[str, constraints.Constraint] = {}
    base_dist: D

    def __init__(self, base_distribution: D, reinterpreted_batch_ndims: int, validate_args: bool | None = None):
        n_batch = len(base_distribution.batch_shape)
        if not isinstance(reinterpreted_batch_ndims, int) or not 0 <= reinterpreted_batch_ndims <= n_batch:
            raise ValueError(
                "Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"actual {reinterpreted_batch_ndims} vs {n_batch}"
            )
        self.base_dist, self.reinterpreted_batch_ndims = base_distribution, reinterpreted_batch_ndims
        shape = base_distribution.batch_shape + base_distribution.event_shape
        cut = n_batch - reinterpreted_batch_ndims
        super().__init__(shape[:cut], shape[cut:], validate_args=validate_args)

    def expand(self, batch_shape, _instance: Distribution | None = None) -> Distribution:
        new = self._expanded(batch_shape, _instance)
        new.base_dist = self.base_dist.expand(Size(batch_shape) + self.event_shape[: self.reinterpreted_batch_ndims])
        return new

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        return self.reinterpreted_batch_ndims == 0 and self.base_dist.has_enumerate_support

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        inner = self.base_dist.support
        n = self.reinterpreted_batch_ndims
        return constraints.independent(inner, n) if n else inner

    mean = property(lambda self: self.base_dist.mean, doc="The base distribution's mean.")
    mode = property(lambda self: self.base_dist.mode, doc="The base distribution's mode.")
    variance = property(lambda self: self.base_dist.variance, doc="The base distribution's variance.")

    def sample(self, sample_shape=()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Tensor) -> Tensor:
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        if self.reinterpreted_batch_ndims:
            raise NotImplementedError("Enumeration over cartesian product is not implemented")
        return self.base_dist.enumerate_support(expand=expand)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_dist}, {self.reinterpreted_batch_ndims})"
