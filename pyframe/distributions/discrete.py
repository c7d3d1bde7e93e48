"""Bernoulli and Categorical, parameterised by ``probs`` or ``logits`` (exactly one), with
log_prob and entropy differentiable in either; Categorical draws are ``multinomial``'s (C)."""

from __future__ import annotations

import math

from pyframe import _dtype
from pyframe.distributions.distribution import Distribution, all_true, as_float, broadcast_all
from pyframe.nn import functional as F
from pyframe.ops.creation import arange
from pyframe.ops.random import multinomial, rand
from pyframe.tensor import Size, Tensor, empty_tensor

__all__ = ["Bernoulli", "Categorical"]


def _eps(dtype) -> float:
    return 2.220446049250313e-16 if dtype is _dtype.float64 else 1.1920928955078125e-07


def _min_finite(dtype) -> float:
    return -1.7976931348623157e308 if dtype is _dtype.float64 else -3.4028234663852886e38


def _one_of(probs, logits, who: str):
    if (probs is None) == (logits is None):
        raise ValueError(f"{who}: either `probs` or `logits` must be specified, but not both")
    return probs, logits


class Bernoulli(Distribution):
    """Same as torch.distributions.Bernoulli(probs | logits): values in {0, 1} of the
    parameter's dtype; ``logits`` from ``probs`` clamp them to ``[eps, 1 - eps]`` as torch."""

    has_enumerate_support = True
    _param_names = ("probs", "logits")
    _support_name = "Boolean()"

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        probs, logits = _one_of(probs, logits, "Bernoulli")
        if probs is not None:
            (self.probs,) = broadcast_all(as_float(probs, "probs"))
            self._given = "probs"
        else:
            (self.logits,) = broadcast_all(as_float(logits, "logits"))
            self._given = "logits"
        param = self.probs if probs is not None else self.logits
        super().__init__(param._shape, (), validate_args)

    def __getattr__(self, name: str):
        # the parameter not given is derived on first use, as torch's lazy_property
        if name == "probs":
            self.probs = self.logits.sigmoid()
            return self.probs
        if name == "logits":
            p = self.probs.clamp(_eps(self.probs.dtype), 1 - _eps(self.probs.dtype))
            self.logits = p.log() - (-p).log1p()
            return self.logits
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _check_parameters(self) -> None:
        if self._given == "probs":
            p = self.probs
            if not all_true((p >= 0).logical_and(p <= 1)):
                raise self._invalid("probs", p, "Interval(lower_bound=0.0, upper_bound=1.0)")
        elif not all_true(self.logits.isfinite().logical_or(self.logits.isinf())):
            raise self._invalid("logits", self.logits, "Real()")

    def _param_dtype(self):
        return (self.probs if self._given == "probs" else self.logits).dtype

    def _in_support(self, value: Tensor) -> bool:
        return all_true((value == 0).logical_or(value == 1))

    @property
    def param_shape(self) -> Size:
        """Same as torch.distributions.Bernoulli.param_shape: the shape of ``probs`` / ``logits`` (``batch_shape``)."""
        return Size(self._batch_shape)

    @property
    def mean(self) -> Tensor:
        return self.probs

    @property
    def mode(self) -> Tensor:
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return mode.masked_fill(self.probs == 0.5, float("nan")) if hasattr(mode, "masked_fill") else mode

    @property
    def variance(self) -> Tensor:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()) -> Tensor:
        p = self.probs.detach()
        shape = self._extended_shape(sample_shape)
        return (rand(*shape, dtype=p.dtype) < p.expand(*shape)).to(p.dtype)

    def log_prob(self, value) -> Tensor:
        value = self._value(value)
        logits, value = broadcast_all(self.logits, value.to(self.logits.dtype))
        return -F.binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Tensor:
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Same as torch.distributions.Bernoulli.enumerate_support: the values 0 and 1 along a new first dim,
        expanded to
        ``(2,) + batch_shape`` when ``expand`` (else of shape ``(2, 1, ..., 1)``).
        """
        values = arange(2, dtype=self._param_dtype()).reshape(2, *([1] * len(self._batch_shape)))
        return values.expand(2, *self._batch_shape) if expand else values


class Categorical(Distribution):
    """Same as torch.distributions.Categorical(probs | logits) over the last dim: ``probs``
    are normalised to sum to 1, ``logits`` to log-sum-exp 0; samples are int64 indices."""

    has_enumerate_support = True
    _param_names = ("probs", "logits")
    _support_name = "IntegerInterval(0, num_events - 1)"

    def __init__(self, probs=None, logits=None, validate_args: bool | None = None) -> None:
        probs, logits = _one_of(probs, logits, "Categorical")
        param = as_float(probs if probs is not None else logits, "probs" if probs is not None else "logits")
        if param.ndim < 1:
            raise ValueError("`probs` or `logits` parameter must be at least one-dimensional")
        if probs is not None:
            self._raw = param
            self.probs = param / param.sum(-1, keepdim=True)
            self._given = "probs"
        else:
            self._raw = param
            self.logits = param - param.logsumexp(-1, keepdim=True)
            self._given = "logits"
        self._num_events = param._shape[-1]
        super().__init__(param._shape[:-1], (), validate_args)

    def __getattr__(self, name: str):
        if name == "probs":
            self.probs = self.logits.softmax(-1)
            return self.probs
        if name == "logits":
            p = self.probs.clamp(_eps(self.probs.dtype), 1 - _eps(self.probs.dtype))
            self.logits = p.log()
            return self.logits
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _check_parameters(self) -> None:
        if self._given == "probs":
            p = self._raw
            if not (all_true(p >= 0) and all_true(p.isfinite()) and all_true(p.sum(-1) > 0)):
                raise self._invalid("probs", self.probs, "Simplex()")
        elif not all_true(self.logits.isnan().logical_not()):  # normalized, as torch: all -inf or a +inf is NaN
            raise self._invalid("logits", self.logits, "IndependentConstraint(Real(), 1)")

    def _param_dtype(self):
        return _dtype.int64

    def _in_support(self, value: Tensor) -> bool:
        if value.dtype.is_floating_point and not all_true(value == value.floor()):
            return False
        return all_true((value >= 0).logical_and(value < self._num_events))

    @property
    def param_shape(self) -> Size:
        """Same as torch.distributions.Categorical.param_shape: ``batch_shape + (number of categories,)``."""
        return Size((*self._batch_shape, self._num_events))

    @property
    def mean(self) -> Tensor:
        return (self.probs.sum(-1) * float("nan")).detach()

    @property
    def mode(self) -> Tensor:
        return self.probs.argmax(-1)

    @property
    def variance(self) -> Tensor:
        return self.mean

    def sample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        probs = self.probs.detach().reshape(-1, self._num_events)
        n = math.prod(shape[: len(shape) - len(self._batch_shape)])
        if n == 0 or probs._shape[0] == 0:
            return empty_tensor(shape, _dtype.int64)
        # as torch: n draws with replacement per row, then samples first
        return multinomial(probs, n, replacement=True).t().contiguous().reshape(*shape)

    def log_prob(self, value) -> Tensor:
        if not isinstance(value, Tensor):
            value = as_float(value, "value").to(_dtype.int64)
        value = self._value(value)
        value = value.to(_dtype.int64).unsqueeze(-1)
        value, log_pmf = broadcast_all(value, self.logits)
        return log_pmf.gather(-1, value[..., :1].contiguous()).squeeze(-1)

    def entropy(self) -> Tensor:
        logits = self.logits.clamp(min=_min_finite(self.logits.dtype))
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Same as torch.distributions.Categorical.enumerate_support: the categories ``0..k-1`` (int64) along a new
        first
        dim, expanded to ``(k,) + batch_shape`` when ``expand`` (else of shape ``(k, 1, ..., 1)``).
        """
        values = arange(self._num_events).reshape(self._num_events, *([1] * len(self._batch_shape)))
        return values.expand(self._num_events, *self._batch_shape) if expand else values
