"""The ``Distribution`` base: batch and event shapes, argument validation, sample shapes.
Same as torch.distributions.Distribution."""

from __future__ import annotations

import math
from typing import Any

from pyframe import _dtype, _grad_mode
from pyframe.ops._common import broadcast_shapes
from pyframe.ops.creation import tensor
from pyframe.tensor import Size, Tensor

__all__ = ["Distribution"]


def as_float(value, name: str, like: Tensor | None = None) -> Tensor:
    """A distribution parameter as a floating tensor: a number takes the dtype of ``like`` (a floating tensor
    among the parameters) or the default dtype, an integer tensor the default dtype (torch's broadcast_all)."""
    if isinstance(value, Tensor):
        if not value.dtype.is_floating_point:
            return value.to(_dtype.get_default_dtype())
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a Tensor or a number, got {type(value).__name__}")
    floating = like is not None and like.dtype.is_floating_point
    return tensor(float(value), dtype=like.dtype if floating else _dtype.scalar_dtype(float(value)))


def broadcast_all(*values: Tensor) -> list[Tensor]:
    """The tensors expanded to their common broadcast shape (views, so gradients flow)."""
    shape = broadcast_shapes(*(v._shape for v in values))
    return [v if v._shape == shape else v.expand(*shape) for v in values]


def all_true(mask: Tensor) -> bool:
    return bool(mask.all().item()) if mask._numel else True


class Distribution:
    """Same as torch.distributions.Distribution: ``batch_shape`` (independent draws) and
    ``event_shape`` (one draw's shape); ``validate_args`` (default on, as torch under
    ``__debug__``) checks parameters at construction and values given to ``log_prob``.
    Subclasses set ``has_rsample`` when ``rsample`` is reparameterised."""

    has_rsample = False
    has_enumerate_support = False
    _validate_default = True

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Same as torch.distributions.Distribution.set_default_validate_args: turns argument validation on or off for
        distributions created afterwards without ``validate_args=`` (a bool; ValueError otherwise).
        """
        if value not in (True, False):
            raise ValueError(f"validate_args must be True or False, got {value!r}")
        Distribution._validate_default = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args: bool | None = None) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = bool(validate_args)
        else:
            self._validate_args = Distribution._validate_default
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self) -> None:
        """Raises ValueError for parameters outside their constraint (subclasses)."""

    def _invalid(self, name: str, value: Tensor, constraint: str) -> ValueError:
        return ValueError(
            f"Expected parameter {name} (Tensor of shape {tuple(value._shape)}) of distribution {self!r} "
            f"to satisfy the constraint {constraint}, but found invalid values:\n{value}"
        )

    @property
    def batch_shape(self) -> Size:
        """Same as torch.distributions.Distribution.batch_shape: the shape of the independent distributions this object
        holds (broadcast from its parameters).
        """
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """Same as torch.distributions.Distribution.event_shape: the shape of one draw (``()`` for a scalar
        distribution,
        ``(k,)`` for a k-dimensional multivariate normal).
        """
        return self._event_shape

    @property
    def mean(self) -> Tensor:
        """Same as torch.distributions.Distribution.mean: the mean, of shape ``batch_shape + event_shape``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        """Same as torch.distributions.Distribution.mode: the most likely value, of shape ``batch_shape +
        event_shape``.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """Same as torch.distributions.Distribution.variance: the variance, of shape ``batch_shape + event_shape``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        """Same as torch.distributions.Distribution.stddev: the standard deviation, ``variance.sqrt()``."""
        return self.variance.sqrt()

    def _extended_shape(self, sample_shape=()) -> tuple:
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        if not isinstance(sample_shape, (tuple, list, Size)) or any(
            isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in sample_shape
        ):
            raise TypeError(f"sample_shape must be a tuple of non-negative ints, got {sample_shape!r}")
        return tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape)

    def sample(self, sample_shape=()) -> Tensor:
        """A draw of shape ``sample_shape + batch_shape + event_shape``, outside autograd."""
        with _grad_mode.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        """Same as torch.distributions.Distribution.rsample: a reparameterised draw of shape
        ``sample_shape + batch_shape + event_shape`` through which gradients flow to the parameters.

        Only distributions with ``has_rsample`` implement it (NotImplementedError otherwise). The numbers come from
        pyframe's generator (``manual_seed``): same distribution as torch, other draws.
        """
        raise NotImplementedError(f"{type(self).__name__} has no reparameterised sampler (rsample)")

    def sample_n(self, n: int) -> Tensor:
        """Same as torch.distributions.Distribution.sample_n: ``sample((n,))``."""
        return self.sample((n,))

    def log_prob(self, value: Tensor) -> Tensor:
        """Same as torch.distributions.Distribution.log_prob: the log of the density (or mass) at ``value``.

        Args:
            value: a tensor (or a number) broadcastable with ``batch_shape + event_shape``; with validation on, a
                value outside the support raises ValueError, as torch.

        Returns:
            One log-density per event, of the broadcast shape without the event dims.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        """Same as torch.distributions.Distribution.cdf: the cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement cdf")

    def entropy(self) -> Tensor:
        """Same as torch.distributions.Distribution.entropy: the entropy in nats, of shape ``batch_shape``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement entropy")

    def perplexity(self) -> Tensor:
        """Same as torch.distributions.Distribution.perplexity: ``entropy().exp()``."""
        return self.entropy().exp()

    def _value(self, value: Any) -> Tensor:
        """``value`` as a tensor for log_prob, checked against the event shape and support."""
        if not isinstance(value, Tensor):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"log_prob expects a Tensor or a number, got {type(value).__name__}")
            value = tensor(float(value), dtype=self._param_dtype())
        if self._validate_args:
            n = len(self._event_shape)
            if n and tuple(value._shape[-n:]) != tuple(self._event_shape):
                raise ValueError(
                    f"The right-most size of value must match event_shape: {tuple(value._shape)} vs "
                    f"{tuple(self._event_shape)}"
                )
            try:
                broadcast_shapes(value._shape, tuple(self._batch_shape) + tuple(self._event_shape))
            except (ValueError, RuntimeError):
                raise ValueError(
                    f"Value of shape {tuple(value._shape)} is not broadcastable with batch_shape+event_shape: "
                    f"{tuple(self._batch_shape) + tuple(self._event_shape)}"
                ) from None
            if not self._in_support(value):
                raise ValueError(
                    f"Expected value argument (Tensor of shape {tuple(value._shape)}) to be within the support "
                    f"({self._support_name}) of the distribution {self!r}, but found invalid values:\n{value}"
                )
        return value

    _support_name = "real"

    def _in_support(self, value: Tensor) -> bool:  # torch's constraints.real: anything but NaN (+-inf included)
        return all_true(value == value) if value.dtype.is_floating_point else True

    def _param_dtype(self):
        return _dtype.get_default_dtype()

    def __repr__(self) -> str:
        params = ", ".join(
            f"{k}: {v if v._numel == 1 else Size(v._shape)}"
            for k in self._param_names
            if isinstance(v := self.__dict__.get(k), Tensor)
        )
        return f"{type(self).__name__}({params})"

    _param_names: tuple[str, ...] = ()


LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))
