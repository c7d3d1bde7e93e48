"""The discrete families parameterised by ``probs`` or ``logits`` (Bernoulli, Binomial, Geometric, NegativeBinomial,
Categorical, OneHotCategorical, Multinomial) and Poisson. They share :class:`_ProbsOrLogits`: it takes exactly one of
the two parameterisations, keeps the one given and derives the other on first use. Each family lives at torch's
module path too (``pyframe.distributions.bernoulli.Bernoulli``)."""

from __future__ import annotations

import math
from numbers import Number

from pyframe import _dtype
from pyframe import ops as T
from pyframe._grad_mode import no_grad
from pyframe.distributions import constraints
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.exp_family import ExponentialFamily
from pyframe.distributions.gamma_family import Gamma
from pyframe.distributions.utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits
from pyframe.nn import functional as F
from pyframe.tensor import Size, Tensor

__all__ = [
    "Bernoulli", "Binomial", "Categorical", "Geometric", "Multinomial", "NegativeBinomial", "OneHotCategorical",
    "OneHotCategoricalStraightThrough", "Poisson",
]  # fmt: skip

_Param = Tensor | Number | None


class _ProbsOrLogits:
    """Mixin of the families given by ``probs`` or by ``logits``. ``_binary`` says what a logit is: log-odds of
    one event (``True``), or an unnormalised log-probability over the last dimension (``False``)."""

    _binary = True
    _given: str

    def _take(self, probs: _Param, logits: _Param, *others: Tensor | Number) -> list[Tensor]:
        """Store the parameterisation given (broadcast with ``others``, which come back first, in its dtype)."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self._given, value = ("probs", probs) if probs is not None else ("logits", logits)
        if self._binary:
            *rest, value = broadcast_all(*others, value)
            rest = [r.type_as(value) for r in rest]
        else:
            if not isinstance(value, Tensor):
                raise TypeError(f"`{self._given}` must be a Tensor, got {type(value).__name__}")
            if value.dim() < 1:
                raise ValueError(f"`{self._given}` parameter must be at least one-dimensional.")
            value = value / value.sum(-1, keepdim=True) if probs is not None else value - value.logsumexp(-1, True)
            rest = []
        self.__dict__[self._given] = value
        return rest

    @lazy_property
    def logits(self) -> Tensor:
        """Log-odds (binary families) or normalised log-probabilities."""
        return probs_to_logits(self.probs, is_binary=self._binary)

    @lazy_property
    def probs(self) -> Tensor:
        """The probability of each event."""
        return logits_to_probs(self.logits, is_binary=self._binary)

    @property
    def _param(self) -> Tensor:
        return self.__dict__[self._given]

    @property
    def param_shape(self) -> Size:
        """The shape of the parameter as given."""
        return self._param.size()

    def _new(self, *args, **kwargs) -> Tensor:
        return self._param.new_tensor(*args, **kwargs)


def _enumerate(values: Tensor, batch_shape: Size, event_shape: Size, expand: bool) -> Tensor:
    """``values`` (one per row) laid along dimension 0 beside ``batch_shape`` size-1 (or expanded) dimensions."""
    n = values.shape[0]
    out = values.reshape((n,) + (1,) * len(batch_shape) + tuple(event_shape))
    return out.expand((n,) + tuple(batch_shape) + tuple(event_shape)) if expand else out


def _homogeneous_count(total_count: Tensor, what: str) -> int:
    n = int(total_count.max()) if total_count.numel() else 0
    if total_count.numel() and int(total_count.min()) != n:
        raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
    return n


class Bernoulli(_ProbsOrLogits, ExponentialFamily):
    """Bernoulli distribution: 1 with probability ``probs`` (or ``sigmoid(logits)``), else 0.

    Args:
        probs (Number, Tensor): the probability of 1.
        logits (Number, Tensor): its log-odds.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs: _Param = None, logits: _Param = None, validate_args: bool | None = None) -> None:
        self._take(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    mean = property(lambda self: self.probs, doc="The probability of 1.")
    variance = property(lambda self: self.probs * (1 - self.probs), doc="``p (1 - p)``.")

    @property
    def mode(self) -> Tensor:
        """1 where ``p > 1/2``, 0 where below, NaN at exactly 1/2."""
        p = self.probs
        return T.where(p == 0.5, math.nan, (p > 0.5).to(p.dtype))

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            return T.bernoulli(self.probs.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = self._broadcast_checked(self.logits, value)
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        return _enumerate(T.arange(2, dtype=self._param.dtype), self.batch_shape, Size(), expand)

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (T.logit(self.probs),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return T.log1p(T.exp(x))


class Binomial(_ProbsOrLogits, Distribution):
    """Binomial distribution: the number of successes in ``total_count`` Bernoulli trials.

    Args:
        total_count (int, Tensor): the number of trials.
        probs (Tensor): the success probability of a trial.
        logits (Tensor): its log-odds.
    """

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(
        self,
        total_count: Tensor | int = 1,
        probs: _Param = None,
        logits: _Param = None,
        validate_args: bool | None = None,
    ) -> None:
        (self.total_count,) = self._take(probs, logits, total_count)
        super().__init__(self._param.size(), validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self.total_count)

    mean = property(lambda self: self.total_count * self.probs, doc="``n p``.")
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs), doc="``n p (1 - p)``.")

    @property
    def mode(self) -> Tensor:
        """``floor((n + 1) p)``, at most ``n``."""
        n = self.total_count
        return ((n + 1) * self.probs).floor().clamp(max=n)

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return T.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        n, eta = self.total_count, self.logits
        # log C(n, k) + k eta - n log(1 + e^eta), with log(1 + e^eta) = max(eta, 0) + log1p(e^-|eta|)
        log_choose = T.lgamma(n + 1) - T.lgamma(value + 1) - T.lgamma(n - value + 1)
        softplus = (eta + eta.abs()) / 2 + T.log1p(T.exp(-eta.abs()))  # max(eta, 0) with gradient 1/2 at 0
        return log_choose + value * eta - n * softplus

    def entropy(self) -> Tensor:
        k = self.enumerate_support(False)
        lp = self.log_prob(k)
        return -(lp.exp() * lp).sum(0)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        n = _homogeneous_count(self.total_count, "enumerate_support")
        return _enumerate(T.arange(n + 1, dtype=self._param.dtype), self.batch_shape, Size(), expand)


class Geometric(_ProbsOrLogits, Distribution):
    """Geometric distribution: the number of failures before the first success of Bernoulli(``probs``) trials.

    Args:
        probs (Number, Tensor): the success probability of a trial, in ``(0, 1]``.
        logits (Number, Tensor): its log-odds.
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs: _Param = None, logits: _Param = None, validate_args: bool | None = None) -> None:
        self._take(probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)
        if self._validate_args and probs is not None and not bool((self.probs > 0).all()):
            raise ValueError(
                f"Expected parameter probs ({type(self.probs).__name__} of shape {tuple(self.probs.shape)}) of "
                f"distribution {self!r} to be positive but found invalid values:\n{self.probs[self.probs <= 0]}"
            )

    mean = property(lambda self: 1.0 / self.probs - 1.0, doc="``1/p - 1``.")
    mode = property(lambda self: T.zeros_like(self.probs), doc="Always 0.")
    variance = property(lambda self: (1.0 / self.probs - 1.0) / self.probs, doc="``(1 - p) / p**2``.")

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        with no_grad():
            u = self.probs.new_empty(shape).uniform_(_dtype.finfo(self.probs.dtype).tiny, 1)
            return (u.log() / T.log1p(-self.probs)).floor()  # inversion of the cdf

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        value, p = broadcast_all(value, self.probs)
        p = T.where((p == 1) & (value == 0), 0.0, p)  # 0 failures at p = 1: 0 * log 0 counts as 0
        return value * T.log1p(-p) + self.probs.log()

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / self.probs


class NegativeBinomial(_ProbsOrLogits, Distribution):
    """Negative binomial distribution: the number of successes before ``total_count`` failures of Bernoulli trials
    with success probability ``probs``.

    Args:
        total_count (float, Tensor): the number of failures to stop at (need not be an integer).
        probs (Tensor): the success probability, in ``[0, 1)``.
        logits (Tensor): its log-odds.
    """

    arg_constraints = {
        "total_count": constraints.greater_than_eq(0),
        "probs": constraints.half_open_interval(0.0, 1.0),
        "logits": constraints.real,
    }
    support = constraints.nonnegative_integer

    def __init__(
        self,
        total_count: Tensor | float,
        probs: _Param = None,
        logits: _Param = None,
        validate_args: bool | None = None,
    ) -> None:
        (self.total_count,) = self._take(probs, logits, total_count)
        super().__init__(self._param.size(), validate_args=validate_args)

    mean = property(lambda self: self.total_count * self.logits.exp(), doc="``r p / (1 - p)``.")
    variance = property(lambda self: self.mean / T.sigmoid(-self.logits), doc="``r p / (1 - p)**2``.")

    @property
    def mode(self) -> Tensor:
        """``floor((r - 1) p / (1 - p))``, at least 0."""
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @lazy_property
    def _gamma(self) -> Gamma:
        return Gamma(self.total_count, T.exp(-self.logits), validate_args=False)

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():  # a Poisson whose rate is Gamma(r, (1 - p) / p)
            return T.poisson(self._gamma.sample(sample_shape))

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        r, eta = self.total_count, self.logits
        log_choose = T.lgamma(r + value) - T.lgamma(1.0 + value) - T.lgamma(r)
        log_choose = log_choose.masked_fill(r + value == 0.0, 0.0)
        return r * F.logsigmoid(-eta) + value * F.logsigmoid(eta) + log_choose


class Categorical(_ProbsOrLogits, Distribution):
    """Categorical distribution over ``{0, ..., K-1}`` given by the last dimension of ``probs`` (non-negative,
    normalised here) or ``logits`` (unnormalised log-probabilities).

    Args:
        probs (Tensor): event probabilities.
        logits (Tensor): event log-probabilities.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    has_enumerate_support = True
    _binary = False

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None):
        self._take(probs, logits)
        self._num_events = self._param.size(-1)
        super().__init__(self._param.shape[:-1], validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self) -> constraints.Constraint:
        return constraints.integer_interval(0, self._num_events - 1)

    @property
    def mean(self) -> Tensor:
        """Undefined for categories: NaN."""
        return T.full(self._extended_shape(), math.nan, dtype=self.probs.dtype)

    variance = mean
    mode = property(lambda self: self.probs.argmax(-1), doc="The most probable category.")

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        n = math.prod(shape[: len(shape) - len(self.batch_shape)])
        draws = T.multinomial(self.probs.reshape(-1, self._num_events), n, True)
        return draws.T.reshape(shape)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        index, logits = T.broadcast_tensors(value.long().unsqueeze(-1), self.logits)
        return logits.gather(-1, index[..., :1]).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=_dtype.finfo(self.logits.dtype).min)  # -inf * 0 must count as 0
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        return _enumerate(T.arange(self._num_events, dtype=_dtype.int64), self.batch_shape, Size(), expand)


class OneHotCategorical(Distribution):
    """A :class:`Categorical` whose samples are one-hot vectors of size ``K``.

    Args:
        probs (Tensor): event probabilities.
        logits (Tensor): event log-probabilities.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs: Tensor | None = None, logits: Tensor | None = None, validate_args: bool | None = None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    probs = property(lambda self: self._categorical.probs, doc="Event probabilities.")
    logits = property(lambda self: self._categorical.logits, doc="Event log-probabilities.")
    param_shape = property(lambda self: self._categorical.param_shape, doc="The shape of the parameter given.")
    _param = property(lambda self: self._categorical._param)
    mean = property(lambda self: self.probs, doc="The event probabilities.")
    variance = property(lambda self: self.probs * (1 - self.probs), doc="``p (1 - p)`` per category.")

    def _new(self, *args, **kwargs) -> Tensor:
        return self._categorical._new(*args, **kwargs)

    @property
    def mode(self) -> Tensor:
        """The one-hot vector of the most probable category."""
        return F.one_hot(self.probs.argmax(-1), self.event_shape[0]).to(self.probs.dtype)

    def sample(self, sample_shape=()) -> Tensor:
        return F.one_hot(self._categorical.sample(sample_shape), self.event_shape[0]).to(self.probs.dtype)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.argmax(-1))

    def entropy(self) -> Tensor:
        return self._categorical.entropy()

    def enumerate_support(self, expand: bool = True) -> Tensor:
        k = self.event_shape[0]
        return _enumerate(T.eye(k, dtype=self._param.dtype), self.batch_shape, self.event_shape, expand)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """:class:`OneHotCategorical` with the straight-through gradient estimator: ``rsample`` returns the one-hot
    sample whose gradient is that of ``probs`` (Bengio et al., 2013)."""

    has_rsample = True

    def rsample(self, sample_shape=()) -> Tensor:
        p = self.probs
        return self.sample(sample_shape) + (p - p.detach())


class Multinomial(Distribution):
    """Multinomial distribution: the counts of each of ``K`` categories in ``total_count`` independent draws.

    Args:
        total_count (int): the number of draws (one for the whole batch).
        probs (Tensor): event probabilities.
        logits (Tensor): event log-probabilities.
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    total_count: int

    def __init__(
        self,
        total_count: int = 1,
        probs: Tensor | None = None,
        logits: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:], validate_args)

    probs = property(lambda self: self._categorical.probs, doc="Event probabilities.")
    logits = property(lambda self: self._categorical.logits, doc="Event log-probabilities.")
    param_shape = property(lambda self: self._categorical.param_shape, doc="The shape of the parameter given.")
    mean = property(lambda self: self.probs * self.total_count, doc="``n p``.")
    variance = property(lambda self: self.total_count * self.probs * (1 - self.probs), doc="``n p (1 - p)``.")

    def _new(self, *args, **kwargs) -> Tensor:
        return self._categorical._new(*args, **kwargs)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self) -> constraints.Constraint:
        return constraints.multinomial(self.total_count)

    def sample(self, sample_shape=()) -> Tensor:
        draws = self._categorical.sample((self.total_count,) + tuple(sample_shape))  # [n, *sample, *batch]
        draws = draws.movedim(0, -1)
        counts = draws.new_zeros(self._extended_shape(sample_shape))
        return counts.scatter_add_(-1, draws, T.ones_like(draws)).to(self.probs.dtype)

    def entropy(self) -> Tensor:
        # H = -log n! - n sum p log p + sum_i E[log x_i!], each x_i ~ Binomial(n, p_i)
        n = self.total_count
        per_count = Binomial(n, probs=self.probs, validate_args=False)
        k = T.arange(1, n + 1, dtype=self.probs.dtype).reshape((n,) + (1,) * self.probs.dim())
        expected_log_fact = (per_count.log_prob(k).exp() * T.lgamma(k + 1)).sum(0).sum(-1)
        return n * self._categorical.entropy() - math.lgamma(n + 1) + expected_log_fact

    def log_prob(self, value: Tensor) -> Tensor:
        logits, value = self._broadcast_checked(self.logits, value)
        logits = T.where((value == 0) & (logits == -math.inf), 0.0, logits)  # 0 draws of an impossible category
        return T.lgamma(value.sum(-1) + 1) - T.lgamma(value + 1).sum(-1) + (logits * value).sum(-1)


class Poisson(ExponentialFamily):
    """Poisson distribution with rate ``rate``.

    Args:
        rate (Number, Tensor): the rate (mean), non-negative.
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate: Tensor | Number, validate_args: bool | None = None) -> None:
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.size(), validate_args=validate_args)

    mean = property(lambda self: self.rate, doc="The rate.")
    mode = property(lambda self: self.rate.floor(), doc="``floor(rate)``.")
    variance = property(lambda self: self.rate, doc="The rate.")

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            return T.poisson(self.rate.expand(self._extended_shape(sample_shape)))

    def log_prob(self, value: Tensor) -> Tensor:
        rate, value = self._broadcast_checked(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self) -> tuple[Tensor]:
        return (self.rate.log(),)

    def _log_normalizer(self, x: Tensor) -> Tensor:
        return x.exp()
