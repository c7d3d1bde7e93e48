"""``MixtureSameFamily``: a finite mixture whose components are the rightmost batch dimension of one
distribution."""

from __future__ import annotations

from pyframe import ops as T
from pyframe._grad_mode import no_grad
from pyframe.distributions import constraints
from pyframe.distributions.constraints import MixtureSameFamilyConstraint
from pyframe.distributions.discrete import Categorical
from pyframe.distributions.distribution import Distribution
from pyframe.tensor import Size, Tensor

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """A mixture of ``K`` components of one family: draw ``k ~ mixture_distribution``, then a value from the
    ``k``-th entry of ``component_distribution``'s last batch dimension. ``log_prob`` is the log-sum-exp over the
    components; there is no ``rsample``.

    Args:
        mixture_distribution (Categorical): the component weights, batch shape broadcastable with the components'
            batch shape less its last dimension.
        component_distribution (Distribution): the components, batch shape ``(..., K)``.

    Example::

        >>> mix = Categorical(pyframe.ones(5))
        >>> comp = Normal(pyframe.randn(5), pyframe.rand(5))
        >>> gmm = MixtureSameFamily(mix, comp)
    """

    arg_constraints: dict[str, constraints.Constraint] = {}
    has_rsample = False

    def __init__(
        self,
        mixture_distribution: Categorical,
        component_distribution: Distribution,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of pyframe.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of pyframe.distributions.Distribution")
        mixture_batch, component_batch = mixture_distribution.batch_shape, component_distribution.batch_shape[:-1]
        if any(
            a != b and 1 not in (a, b) for a, b in zip(reversed(mixture_batch), reversed(component_batch), strict=False)
        ):
            raise ValueError(
                f"`mixture_distribution.batch_shape` ({mixture_batch}) is not compatible with "
                f"`component_distribution.batch_shape`({component_batch})"
            )
        k_mix, k_comp = mixture_distribution.logits.shape[-1], component_distribution.batch_shape[-1]
        if k_mix != k_comp:
            raise ValueError(
                f"`mixture_distribution component` ({k_mix}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({k_comp})"
            )
        self._mixture_distribution, self._component_distribution = mixture_distribution, component_distribution
        self._num_component = k_mix
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(component_batch, component_distribution.event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance: Distribution | None = None) -> Distribution:
        new = self._expanded(batch_shape, _instance)
        new._component_distribution = self._component_distribution.expand(Size(batch_shape) + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        return new

    @constraints.dependent_property
    def support(self) -> constraints.Constraint:
        return MixtureSameFamilyConstraint(self._component_distribution.support)

    mixture_distribution = property(lambda self: self._mixture_distribution, doc="The Categorical over components.")
    component_distribution = property(lambda self: self._component_distribution, doc="The components.")

    def _weights(self) -> Tensor:
        """The mixture probabilities shaped ``(..., K, 1, ...)`` to broadcast against component statistics."""
        p = self.mixture_distribution.probs
        return p.reshape(p.shape + (1,) * self._event_ndims)

    def _over_components(self, x: Tensor) -> Tensor:
        return T.sum(x, dim=-1 - self._event_ndims)

    @property
    def mean(self) -> Tensor:
        """The weighted mean of the component means."""
        return self._over_components(self._weights() * self.component_distribution.mean)

    @property
    def variance(self) -> Tensor:
        """The law of total variance: mean component variance plus the variance of component means."""
        w, comp = self._weights(), self.component_distribution
        spread = (comp.mean - self._pad(self.mean)).pow(2.0)
        return self._over_components(w * comp.variance) + self._over_components(w * spread)

    def cdf(self, x: Tensor) -> Tensor:
        return T.sum(self.component_distribution.cdf(self._pad(x)) * self.mixture_distribution.probs, dim=-1)

    def log_prob(self, x: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(x)
        per_component = self.component_distribution.log_prob(self._pad(x))
        return T.logsumexp(per_component + T.log_softmax(self.mixture_distribution.logits, dim=-1), dim=-1)

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            sample_shape = Size(sample_shape)
            which = self.mixture_distribution.sample(sample_shape)  # sample_shape + mixture batch shape
            drawn = self.component_distribution.sample(sample_shape)  # ... + batch + (K,) + event
            es, nb = self.event_shape, len(self.batch_shape)
            lead = (1,) * (nb - (which.dim() - len(sample_shape)))  # the mixture batch may broadcast
            index = which.reshape(sample_shape + lead + which.shape[len(sample_shape) :] + (1,) * (1 + len(es)))
            index = index.expand(sample_shape + self.batch_shape + (1,) + es)
            return drawn.gather(len(sample_shape) + nb, index).squeeze(len(sample_shape) + nb)

    def _pad(self, x: Tensor) -> Tensor:
        return x.unsqueeze(-1 - self._event_ndims)

    def __repr__(self) -> str:
        return f"MixtureSameFamily(\n  {self.mixture_distribution},\n  {self.component_distribution})"
