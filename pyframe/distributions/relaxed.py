"""The relaxed (concrete / Gumbel-softmax) families: continuous, reparameterised stand-ins for Bernoulli and
one-hot categorical draws at a ``temperature`` (Maddison et al., 2017; Jang et al., 2017). The logit-space
distributions (``LogitRelaxedBernoulli``, ``ExpRelaxedCategorical``) carry the density; ``RelaxedBernoulli`` and
``RelaxedOneHotCategorical`` map them onto ``(0, 1)`` and the simplex."""

from __future__ import annotations

from numbers import Number

from pyframe import ops as T
from pyframe.distributions import constraints
from pyframe.distributions.discrete import Categorical, _ProbsOrLogits
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.elementwise_transforms import ExpTransform, SigmoidTransform
from pyframe.distributions.transformed_distribution import TransformedDistribution
from pyframe.distributions.utils import clamp_probs
from pyframe.tensor import Tensor

__all__ = ["ExpRelaxedCategorical", "LogitRelaxedBernoulli", "RelaxedBernoulli", "RelaxedOneHotCategorical"]

_Param = Tensor | Number | None


def _logit(p: Tensor) -> Tensor:
    return p.log() - (-p).log1p()


class LogitRelaxedBernoulli(_ProbsOrLogits, Distribution):
    """The logit of a :class:`RelaxedBernoulli` draw: ``(logit(p) + logit(U)) / temperature``.

    Args:
        temperature (Tensor): the relaxation temperature, positive.
        probs (Number, Tensor): the probability of 1.
        logits (Number, Tensor): its log-odds.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(
        self, temperature: Tensor, probs: _Param = None, logits: _Param = None, validate_args: bool | None = None
    ) -> None:
        self.temperature = temperature
        self._take(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        p = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(T.rand(shape, dtype=p.dtype))
        return (_logit(u) + _logit(p)) / self.temperature

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = self._broadcast_checked(self.logits, value)
        d = logits - value * self.temperature
        return self.temperature.log() + d - 2 * d.exp().log1p()


class _Relaxed(TransformedDistribution):
    """A relaxed family: its logit- or log-space base distribution ``_base(temperature, probs, logits)``
    mapped by ``_transform``; each family shows the base's temperature and parameters as its own."""

    _base: type
    _transform: type
    _base_validates = True  # the base gets validate_args too (torch passes it for the categorical only)

    def __init__(
        self, temperature: Tensor, probs: _Param = None, logits: _Param = None, validate_args: bool | None = None
    ) -> None:
        check = {"validate_args": validate_args} if self._base_validates else {}
        base = self._base(temperature, probs, logits, **check)
        super().__init__(base, self._transform(), validate_args=validate_args)


class RelaxedBernoulli(_Relaxed):
    """A continuous relaxation of Bernoulli on ``(0, 1)``: the sigmoid of a :class:`LogitRelaxedBernoulli` draw.
    Low temperatures concentrate the mass near 0 and 1.

    Args:
        temperature (Tensor): the relaxation temperature, positive.
        probs (Number, Tensor): the probability of 1.
        logits (Number, Tensor): its log-odds.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    base_dist: LogitRelaxedBernoulli
    _base, _transform, _base_validates = LogitRelaxedBernoulli, SigmoidTransform, False

    temperature = property(lambda self: self.base_dist.temperature, doc="The relaxation temperature.")
    logits = property(lambda self: self.base_dist.logits, doc="The log-odds.")
    probs = property(lambda self: self.base_dist.probs, doc="The probability of 1.")


class ExpRelaxedCategorical(Distribution):
    """The log of a :class:`RelaxedOneHotCategorical` draw: ``log_softmax((logits + G) / temperature)`` for
    Gumbel noise ``G``.

    Args:
        temperature (Tensor): the relaxation temperature, positive.
        probs (Tensor): event probabilities.
        logits (Tensor): event log-probabilities.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        temperature: Tensor,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    probs = property(lambda self: self._categorical.probs, doc="Event probabilities.")
    logits = property(lambda self: self._categorical.logits, doc="Event log-probabilities.")
    param_shape = property(lambda self: self._categorical.param_shape, doc="The shape of the parameter given.")

    def _new(self, *args, **kwargs) -> Tensor:
        return self._categorical._new(*args, **kwargs)

    def rsample(self, sample_shape=()) -> Tensor:
        u = clamp_probs(T.rand(self._extended_shape(sample_shape), dtype=self.logits.dtype))
        scores = (self.logits - (-u.log()).log()) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value: Tensor) -> Tensor:
        k = self.event_shape[0]
        logits, value = self._broadcast_checked(self.logits, value)
        t = self.temperature
        log_scale = T.full_like(t, float(k)).lgamma() + (k - 1) * t.log()
        score = logits - value * t
        return (score - score.logsumexp(-1, keepdim=True)).sum(-1) + log_scale


class RelaxedOneHotCategorical(_Relaxed):
    """A continuous relaxation of one-hot categorical draws on the simplex (Gumbel-softmax): the exp of an
    :class:`ExpRelaxedCategorical` draw.

    Args:
        temperature (Tensor): the relaxation temperature, positive.
        probs (Tensor): event probabilities.
        logits (Tensor): event log-probabilities.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True
    base_dist: ExpRelaxedCategorical
    _base, _transform = ExpRelaxedCategorical, ExpTransform

    temperature = property(lambda self: self.base_dist.temperature, doc="The relaxation temperature.")
    logits = property(lambda self: self.base_dist.logits, doc="Event log-probabilities.")
    probs = property(lambda self: self.base_dist.probs, doc="Event probabilities.")
