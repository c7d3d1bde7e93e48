"""``Independent``: reinterprets batch dims of a distribution as event dims (a diagonal Normal
over an action vector, say), summing log densities and entropies over them."""

from __future__ import annotations

from pyframe.distributions.distribution import Distribution
from pyframe.tensor import Tensor

__all__ = ["Independent"]


def _sum_rightmost(t: Tensor, n: int) -> Tensor:
    return t.sum(tuple(range(-n, 0))) if n else t


class Independent(Distribution):
    """Same as torch.distributions.Independent(base_distribution, reinterpreted_batch_ndims)."""

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int, validate_args=None) -> None:
        if not isinstance(base_distribution, Distribution):
            raise TypeError(f"base_distribution must be a Distribution, got {type(base_distribution).__name__}")
        n = reinterpreted_batch_ndims
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= len(base_distribution.batch_shape):
            raise ValueError(
                f"Expected 0 <= reinterpreted_batch_ndims <= len(base_distribution.batch_shape), "
                f"{n!r} vs {len(base_distribution.batch_shape)}"
            )
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = n
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = n + len(base_distribution.event_shape)
        super().__init__(shape[: len(shape) - event_dim], shape[len(shape) - event_dim :], validate_args=False)
        self._validate_args = base_distribution._validate_args if validate_args is None else bool(validate_args)

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return self.base_dist.has_rsample

    @property
    def has_enumerate_support(self) -> bool:  # type: ignore[override]
        return False if self.reinterpreted_batch_ndims else self.base_dist.has_enumerate_support

    @property
    def mean(self) -> Tensor:
        return self.base_dist.mean

    @property
    def mode(self) -> Tensor:
        return self.base_dist.mode

    @property
    def variance(self) -> Tensor:
        return self.base_dist.variance

    def sample(self, sample_shape=()) -> Tensor:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value) -> Tensor:
        return _sum_rightmost(self.base_dist.log_prob(value), self.reinterpreted_batch_ndims)

    def entropy(self) -> Tensor:
        return _sum_rightmost(self.base_dist.entropy(), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"
