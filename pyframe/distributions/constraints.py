"""Constraints: the sets a parameter or a sample lives in, with ``check(value)`` answering elementwise (over the
constraint's ``event_dim`` rightmost dimensions at once) whether a value is inside. The objects and their reprs are
torch.distributions.constraints' (``positive`` is ``GreaterThan(lower_bound=0.0)``), so ``biject_to`` and
user code that dispatches on them work unchanged.

Each constraint is a small class: ``event_dim`` and ``is_discrete`` say what it constrains, ``_fields`` names the
bounds its repr shows, ``check`` computes. Parameterised ones (``interval(a, b)``, ``greater_than(x)`` ...) are the
classes themselves; the parameterless ones are module-level instances."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pyframe import _dtype, linalg
from pyframe import ops as T
from pyframe.tensor import Tensor

__all__ = [
    "Constraint", "boolean", "cat", "corr_cholesky", "dependent", "dependent_property", "greater_than",
    "greater_than_eq", "independent", "integer_interval", "interval", "half_open_interval", "is_dependent",
    "less_than", "lower_cholesky", "lower_triangular", "MixtureSameFamilyConstraint", "multinomial", "nonnegative",
    "nonnegative_integer", "one_hot", "positive", "positive_semidefinite", "positive_definite", "positive_integer",
    "real", "real_vector", "simplex", "square", "stack", "symmetric", "unit_interval",
]  # fmt: skip


class Constraint:
    """A region a variable is valid in (and can be optimised over, through ``biject_to``/``transform_to``).

    Attributes:
        is_discrete (bool): whether the region is a discrete set. Default: ``False``.
        event_dim (int): how many rightmost dimensions make one event; :meth:`check` reduces over them.
    """

    is_discrete = False
    event_dim = 0
    _fields: tuple[str, ...] = ()

    def check(self, value: Tensor) -> Tensor:
        """A bool tensor of ``value``'s shape less ``event_dim`` dimensions: which events are inside."""
        raise NotImplementedError

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={getattr(self, k)}" for k in self._fields)
        return f"{type(self).__name__.lstrip('_')}({shown})"


def _all_last(ok: Tensor, n: int) -> Tensor:
    """Reduce the ``n`` rightmost dimensions of a bool tensor with ``all``."""
    return ok.reshape(ok.shape[: ok.dim() - n] + (-1,)).all(-1) if n else ok


class _Bounded(Constraint):
    """A constraint with bounds given at construction, named by ``_fields``."""

    def __init__(self, *bounds: Any) -> None:
        for name, bound in zip(self._fields, bounds, strict=True):
            setattr(self, name, bound)


class _Dependent(Constraint):
    """Placeholder for a parameter whose valid set depends on other parameters (``Binomial.total_count`` bounds
    its support). ``check`` raises; ``is_discrete``/``event_dim`` raise unless given."""

    def __init__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> None:
        self._is_discrete, self._event_dim = is_discrete, event_dim

    def _static(self, value: Any, name: str) -> Any:
        if value is NotImplemented:
            raise NotImplementedError(f".{name} cannot be determined statically")
        return value

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return self._static(self._is_discrete, "is_discrete")

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return self._static(self._event_dim, "event_dim")

    def __call__(self, *, is_discrete: Any = NotImplemented, event_dim: Any = NotImplemented) -> _Dependent:
        """``dependent(is_discrete=True, event_dim=1)``: a copy with those static attributes."""
        return _Dependent(
            is_discrete=self._is_discrete if is_discrete is NotImplemented else is_discrete,
            event_dim=self._event_dim if event_dim is NotImplemented else event_dim,
        )

    def check(self, x: Tensor) -> Tensor:
        raise ValueError("Cannot determine validity of dependent constraint")


def is_dependent(constraint: Any) -> bool:
    """Whether ``constraint`` is a dependent one (``dependent`` or a ``dependent_property``), which validation
    skips."""
    return isinstance(constraint, _Dependent)


class _DependentProperty(property, _Dependent):
    """``@constraints.dependent_property(is_discrete=..., event_dim=...)``: a property on instances (the support
    computed from the parameters) that reads as a dependent constraint on the class."""

    def __init__(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        is_discrete: Any = NotImplemented,
        event_dim: Any = NotImplemented,
    ) -> None:
        property.__init__(self, fn)
        _Dependent.__init__(self, is_discrete=is_discrete, event_dim=event_dim)

    def __call__(self, fn: Callable[..., Any]) -> _DependentProperty:  # type: ignore[override]
        return _DependentProperty(fn, is_discrete=self._is_discrete, event_dim=self._event_dim)


class _IndependentConstraint(Constraint):
    """``independent(c, n)``: ``c`` holding for every element of ``n`` more rightmost dimensions at once."""

    def __init__(self, base_constraint: Constraint, reinterpreted_batch_ndims: int) -> None:
        if not isinstance(base_constraint, Constraint):
            raise TypeError(f"independent() takes a Constraint, got {type(base_constraint).__name__}")
        if not isinstance(reinterpreted_batch_ndims, int) or reinterpreted_batch_ndims < 0:
            raise ValueError(f"reinterpreted_batch_ndims must be an int >= 0, got {reinterpreted_batch_ndims!r}")
        self.base_constraint, self.reinterpreted_batch_ndims = base_constraint, reinterpreted_batch_ndims

    is_discrete = property(lambda self: self.base_constraint.is_discrete)  # type: ignore[assignment]
    event_dim = property(  # type: ignore[assignment]
        lambda self: self.base_constraint.event_dim + self.reinterpreted_batch_ndims
    )

    def check(self, value: Tensor) -> Tensor:
        ok = self.base_constraint.check(value)
        if ok.dim() < self.reinterpreted_batch_ndims:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        return _all_last(ok, self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"IndependentConstraint({self.base_constraint!r}, {self.reinterpreted_batch_ndims})"


class MixtureSameFamilyConstraint(Constraint):
    """The support of a ``MixtureSameFamily``: its component's constraint, checked against every component at
    once (the value gets the mixture dimension back before the check).

    Args:
        base_constraint (Constraint): the component distribution's support.
    """

    def __init__(self, base_constraint: Constraint) -> None:
        if not isinstance(base_constraint, Constraint):
            raise TypeError(f"MixtureSameFamilyConstraint takes a Constraint, got {type(base_constraint).__name__}")
        self.base_constraint = base_constraint

    is_discrete = property(lambda self: self.base_constraint.is_discrete)  # type: ignore[assignment]
    event_dim = property(lambda self: self.base_constraint.event_dim)  # type: ignore[assignment]

    def check(self, value: Tensor) -> Tensor:
        """Whether ``value`` is inside every component's support."""
        if value.dim() < self.event_dim:
            raise ValueError(f"Expected value.dim() >= {self.event_dim} but got {value.dim()}")
        ok = self.base_constraint.check(value.unsqueeze(-1 - self.event_dim))
        return _all_last(ok.reshape(ok.shape[: value.dim() - self.event_dim] + (-1,)), 1)

    def __repr__(self) -> str:
        return f"MixtureSameFamilyConstraint({self.base_constraint!r})"


def _is_integer(value: Tensor) -> Tensor:
    return value % 1 == 0


class _Boolean(Constraint):
    is_discrete = True

    def check(self, value: Tensor) -> Tensor:
        return (value == 0) | (value == 1)


class _OneHot(Constraint):
    is_discrete, event_dim = True, 1

    def check(self, value: Tensor) -> Tensor:
        return ((value == 0) | (value == 1)).all(-1) & (value.sum(-1) == 1)


class _IntegerInterval(_Bounded):
    is_discrete, _fields = True, ("lower_bound", "upper_bound")

    def check(self, value: Tensor) -> Tensor:
        return _is_integer(value) & (value >= self.lower_bound) & (value <= self.upper_bound)


class _IntegerLessThan(_Bounded):
    is_discrete, _fields = True, ("upper_bound",)

    def check(self, value: Tensor) -> Tensor:
        return _is_integer(value) & (value <= self.upper_bound)


class _IntegerGreaterThan(_Bounded):
    is_discrete, _fields = True, ("lower_bound",)

    def check(self, value: Tensor) -> Tensor:
        return _is_integer(value) & (value >= self.lower_bound)


class _Real(Constraint):
    def check(self, value: Tensor) -> Tensor:
        return value == value  # every real and both infinities; NaN is outside


class _GreaterThan(_Bounded):
    _fields = ("lower_bound",)

    def check(self, value: Tensor) -> Tensor:
        return value > self.lower_bound


class _GreaterThanEq(_Bounded):
    _fields = ("lower_bound",)

    def check(self, value: Tensor) -> Tensor:
        return value >= self.lower_bound


class _LessThan(_Bounded):
    _fields = ("upper_bound",)

    def check(self, value: Tensor) -> Tensor:
        return value < self.upper_bound


class _Interval(_Bounded):
    _fields = ("lower_bound", "upper_bound")

    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value <= self.upper_bound)


class _HalfOpenInterval(_Bounded):
    _fields = ("lower_bound", "upper_bound")

    def check(self, value: Tensor) -> Tensor:
        return (value >= self.lower_bound) & (value < self.upper_bound)


class _Simplex(Constraint):
    event_dim = 1

    def check(self, value: Tensor) -> Tensor:
        return (value >= 0).all(-1) & ((value.sum(-1) - 1).abs() < 1e-6)


class _Multinomial(Constraint):
    """Counts: nonnegative, summing to at most ``upper_bound`` (torch checks the same weaker condition)."""

    is_discrete, event_dim = True, 1

    def __init__(self, upper_bound: Any) -> None:
        self.upper_bound = upper_bound

    def check(self, x: Tensor) -> Tensor:
        return (x >= 0).all(-1) & (x.sum(-1) <= self.upper_bound)


def _is_tril(value: Tensor) -> Tensor:
    return _all_last(value.tril() == value, 2)


class _LowerTriangular(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return _is_tril(value)


class _LowerCholesky(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return _is_tril(value) & (value.diagonal(dim1=-2, dim2=-1) > 0).all(-1)


class _CorrCholesky(Constraint):
    """Cholesky factors of correlation matrices: lower Cholesky with rows of unit length (to 10 eps per row)."""

    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        tol = _dtype.finfo(value.dtype).eps * value.size(-1) * 10
        unit_rows = ((linalg.norm(value.detach(), dim=-1) - 1.0).abs() <= tol).all(-1)
        return lower_cholesky.check(value) & unit_rows


class _Square(Constraint):
    event_dim = 2

    def check(self, value: Tensor) -> Tensor:
        return T.full(tuple(value.shape[:-2]), value.shape[-2] == value.shape[-1], dtype=_dtype.bool_)


class _Symmetric(_Square):
    def check(self, value: Tensor) -> Tensor:
        ok = super().check(value)
        return ok if not bool(ok.all()) else T.isclose(value, value.mT, atol=1e-6).all(-1).all(-1)


class _PositiveSemidefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        ok = super().check(value)
        return ok if not bool(ok.all()) else (linalg.eigvalsh(value) >= 0).all(-1)


class _PositiveDefinite(_Symmetric):
    def check(self, value: Tensor) -> Tensor:
        ok = super().check(value)
        return ok if not bool(ok.all()) else linalg.eigvalsh(value)[..., 0] > 0  # the smallest eigenvalue


class _Pieces(Constraint):
    """A sequence of constraints applied to pieces of a value along ``dim`` (``cat`` and ``stack``)."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0) -> None:
        self.cseq = list(cseq)
        if not all(isinstance(c, Constraint) for c in self.cseq):
            raise TypeError("cat/stack constraints take a sequence of Constraint objects")
        self.dim = dim

    @property
    def is_discrete(self) -> bool:  # type: ignore[override]
        return any(c.is_discrete for c in self.cseq)

    def _dim_of(self, value: Tensor) -> None:
        if not -value.dim() <= self.dim < value.dim():
            raise ValueError(f"dim {self.dim} out of range for value with {value.dim()} dimensions")


class _Cat(_Pieces):
    """``cat(cseq, dim, lengths)``: ``cseq[i]`` holds on the i-th slice of ``lengths[i]`` along ``dim``."""

    def __init__(self, cseq: Sequence[Constraint], dim: int = 0, lengths: Sequence[int] | None = None) -> None:
        super().__init__(cseq, dim)
        self.lengths = [1] * len(self.cseq) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.cseq):
            raise ValueError(f"lengths ({len(self.lengths)}) must match cseq ({len(self.cseq)})")

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        return max(c.event_dim for c in self.cseq)

    def check(self, value: Tensor) -> Tensor:
        self._dim_of(value)
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        parts = [c.check(value.narrow(self.dim, s, n)) for c, s, n in zip(self.cseq, starts, self.lengths, strict=True)]
        return T.cat(parts, self.dim)


class _Stack(_Pieces):
    """``stack(cseq, dim)``: ``cseq[i]`` holds on ``value.select(dim, i)``."""

    @property
    def event_dim(self) -> int:  # type: ignore[override]
        inner = max(c.event_dim for c in self.cseq)
        return inner + 1 if self.dim + inner < 0 else inner

    def check(self, value: Tensor) -> Tensor:
        self._dim_of(value)
        n = value.size(self.dim)
        return T.stack([c.check(value.select(self.dim, i)) for i, c in zip(range(n), self.cseq, strict=True)], self.dim)


dependent = _Dependent()
dependent_property = _DependentProperty
independent = _IndependentConstraint
boolean = _Boolean()
one_hot = _OneHot()
nonnegative_integer = _IntegerGreaterThan(0)
positive_integer = _IntegerGreaterThan(1)
integer_interval = _IntegerInterval
real = _Real()
real_vector = independent(real, 1)
positive = _GreaterThan(0.0)
nonnegative = _GreaterThanEq(0.0)
greater_than = _GreaterThan
greater_than_eq = _GreaterThanEq
less_than = _LessThan
multinomial = _Multinomial
unit_interval = _Interval(0.0, 1.0)
interval = _Interval
half_open_interval = _HalfOpenInterval
simplex = _Simplex()
lower_triangular = _LowerTriangular()
lower_cholesky = _LowerCholesky()
corr_cholesky = _CorrCholesky()
square = _Square()
symmetric = _Symmetric()
positive_semidefinite = _PositiveSemidefinite()
positive_definite = _PositiveDefinite()
cat = _Cat
stack = _Stack
