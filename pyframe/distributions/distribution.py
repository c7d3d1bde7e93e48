"""``Distribution``, the base of every family: shapes, validation of parameters and values, and a generic
``expand``. A family declares its parameters once, in ``arg_constraints`` (name -> constraint, whose ``event_dim``
says how many rightmost dimensions of the parameter are not batch dimensions); the base checks them at construction,
and ``expand`` broadcasts exactly those tensors (and sub-distributions of the same batch shape) to a new batch
shape, so families need no expand of their own unless they hold something else."""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

from pyframe import ops as T
from pyframe._grad_mode import no_grad
from pyframe.distributions import constraints
from pyframe.distributions.utils import broadcast_all, lazy_property
from pyframe.tensor import Size, Tensor

__all__ = ["Distribution"]

_ShapeLike = Size | tuple[int, ...] | list[int]


def _param_event_dim(c: constraints.Constraint) -> int:
    try:
        return c.event_dim
    except NotImplementedError:  # a dependent constraint without a static event_dim
        return 0


class Distribution:
    r"""Abstract base class for probability distributions.

    Args:
        batch_shape (Size): the shape over which parameters are batched.
        event_shape (Size): the shape of a single sample (without batching).
        validate_args (bool, optional): check parameters at construction and values given to ``log_prob`` and
            friends. Default: the class default, on unless Python runs with ``-O``
            (see :meth:`set_default_validate_args`).
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Turn validation on or off for every distribution created afterwards without ``validate_args=``.

        Args:
            value (bool): whether to validate.
        """
        if value not in (True, False):
            raise ValueError(f"set_default_validate_args takes True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(
        self, batch_shape: _ShapeLike = (), event_shape: _ShapeLike = (), validate_args: bool | None = None
    ) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_parameters()

    def _check_parameters(self) -> None:
        try:
            declared = self.arg_constraints
        except NotImplementedError:
            warnings.warn(
                f"{type(self)} does not define `arg_constraints`. Please set `arg_constraints = {{}}` or "
                "initialize the distribution with `validate_args=False` to turn off validation.",
                stacklevel=3,
            )
            return
        for name, constraint in declared.items():
            if constraints.is_dependent(constraint):
                continue
            if name not in self.__dict__ and isinstance(getattr(type(self), name, None), lazy_property):
                continue  # the other parameterisation, derived only when asked for
            value = getattr(self, name)
            if not bool(constraint.check(value).all()):
                raise ValueError(
                    f"Expected parameter {name} ({type(value).__name__} of shape {tuple(value.shape)}) of "
                    f"distribution {self!r} to satisfy the constraint {constraint!r}, but found invalid "
                    f"values:\n{value}"
                )

    def expand(self, batch_shape: _ShapeLike, _instance: Distribution | None = None) -> Distribution:
        """A new distribution of the same family with its batch dimensions expanded to ``batch_shape`` (the
        parameters are ``expand``-ed views: no copy, and no new validation).

        Args:
            batch_shape (Size): the new batch shape.
            _instance: an instance for a subclass to fill in.
        """
        declared = self._declared_params()
        if not declared:
            raise NotImplementedError(f"{type(self).__name__} declares no arg_constraints, so it cannot expand")
        return self._expanded(batch_shape, _instance, declared)

    def _declared_params(self) -> dict[str, constraints.Constraint]:
        """Every parameter declared in ``arg_constraints`` along the class hierarchy (Chi2's ``df`` beside Gamma's
        ``concentration`` and ``rate``), and the instance's own when they are computed (Uniform's)."""
        declared: dict[str, constraints.Constraint] = {}
        for klass in reversed(type(self).__mro__):
            own = klass.__dict__.get("arg_constraints")
            declared.update(own if isinstance(own, dict) else {})
        with contextlib.suppress(NotImplementedError):
            declared.update(self.arg_constraints)
        return declared

    def _expanded(
        self, batch_shape: _ShapeLike, _instance: Distribution | None = None, declared: dict | None = None
    ) -> Distribution:
        """A copy of this distribution with batch shape ``batch_shape``: declared tensor parameters and
        sub-distributions of the same batch shape expanded, every other attribute shared (what ``_instance``
        already holds is kept)."""
        declared = self._declared_params() if declared is None else declared
        batch_shape = Size(batch_shape)
        new = type(self).__new__(type(self)) if _instance is None else _instance
        for name, value in self.__dict__.items():
            if name in new.__dict__:  # a subclass's expand filled it in already
                continue
            if name not in declared and isinstance(getattr(type(self), name, None), lazy_property):
                continue  # a cached derived value of the old shape: recomputed on demand
            new.__dict__[name] = value
            if isinstance(value, Tensor) and name in declared:
                nd = _param_event_dim(declared[name])
                new.__dict__[name] = value.expand(batch_shape + value.shape[value.dim() - nd :])
            elif isinstance(value, Distribution) and value.batch_shape == self.batch_shape:
                new.__dict__[name] = value.expand(batch_shape)
        new._batch_shape = batch_shape
        new._validate_args = self._validate_args
        return new

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """Each parameter's name mapped to the :class:`~pyframe.distributions.constraints.Constraint` it must
        satisfy."""
        raise NotImplementedError

    @property
    def support(self) -> constraints.Constraint | None:
        """The :class:`~pyframe.distributions.constraints.Constraint` the samples lie in."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        """The mean of the distribution."""
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        """The mode of the distribution."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        """The variance of the distribution."""
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        """The standard deviation of the distribution."""
        return self.variance.sqrt()

    def sample(self, sample_shape: _ShapeLike = ()) -> Tensor:
        """Draw a sample of shape ``sample_shape + batch_shape + event_shape``, outside autograd."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: _ShapeLike = ()) -> Tensor:
        """Draw a reparameterised sample (differentiable in the parameters) of shape
        ``sample_shape + batch_shape + event_shape``."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        """Draw ``n`` samples (deprecated, as torch's: use ``sample((n,))``)."""
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.", FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """The log of the density (or mass) function at ``value``."""
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        """The cumulative distribution function at ``value``."""
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        """The inverse cumulative distribution function at ``value``."""
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution's support along a new dimension 0, of shape
        ``(cardinality,) + batch_shape + event_shape`` (with size-1 batch dimensions when ``expand=False``)."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy, of shape ``batch_shape``."""
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        """``exp(entropy())``, of shape ``batch_shape``."""
        return T.exp(self.entropy())

    def _extended_shape(self, sample_shape: _ShapeLike = ()) -> Size:
        """``sample_shape + batch_shape + event_shape``, after checking ``sample_shape``."""
        if isinstance(sample_shape, int) and not isinstance(sample_shape, bool):
            sample_shape = (sample_shape,)
        if not isinstance(sample_shape, (tuple, list)) or any(
            isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in sample_shape
        ):
            raise TypeError(f"sample_shape must be a tuple of non-negative ints, got {sample_shape!r}")
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _broadcast_checked(self, param: Tensor, value) -> tuple:
        """``log_prob``'s opening for a one-parameter family: ``(param, value)`` broadcast together, ``value``
        validated first when validation is on."""
        if self._validate_args:
            self._validate_sample(value)
        return broadcast_all(param, value)

    def _validate_sample(self, value: Tensor) -> None:
        """Check a value given to ``log_prob``/``cdf``/``icdf``: a tensor whose rightmost dimensions are the
        event shape, broadcastable with ``batch_shape + event_shape``, inside the support.

        Raises:
            ValueError: naming the first of these that fails.
        """
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        shape, ev = value.size(), self._event_shape
        if shape[len(shape) - len(ev) :] != ev:
            raise ValueError(f"The right-most size of value must match event_shape: {shape} vs {ev}.")
        expected = self._batch_shape + ev
        if any(i != j and 1 not in (i, j) for i, j in zip(reversed(shape), reversed(expected), strict=False)):
            raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: {shape} vs {expected}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{type(self)} does not define `support` to enable sample validation. Please initialize the "
                "distribution with `validate_args=False` to turn off validation.",
                stacklevel=3,
            )
            return
        if support is None:
            raise TypeError(f"{type(self).__name__}.support is None, so values cannot be validated")
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be within the "
                f"support ({support!r}) of the distribution {self!r}, but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        """An empty instance of ``type(self)`` for an ``expand`` of ``cls`` to fill in (``_instance`` if given)."""
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {type(self).__name__} of {cls.__name__} that defines a custom __init__ method "
                "must also define a custom .expand() method."
            )
        return type(self).__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        try:
            names = [k for k in self.arg_constraints if k in self.__dict__]
        except NotImplementedError:
            names = []
        shown = (f"{k}: {v if v.numel() == 1 else v.size()}" for k in names for v in [self.__dict__[k]])
        return f"{type(self).__name__}({', '.join(shown)})"
