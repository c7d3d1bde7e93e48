"""``biject_to`` and ``transform_to``: from a constraint to a transform that maps unconstrained reals onto it.

``biject_to(c)`` is a bijection (what HMC-style samplers need, whose log-det-Jacobian is exact);
``transform_to(c)`` may be any onto map, chosen for optimisation (``softmax`` for the simplex rather than stick
breaking). Both are :class:`ConstraintRegistry` objects: ``register`` adds constraint types, including your own.
The built-in table is the list ``_BUILTIN`` below."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyframe.distributions import constraints as C
from pyframe.distributions import transforms as Tr

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]

_Factory = Callable[[Any], Tr.Transform]


class ConstraintRegistry:
    """A map from constraint types to factories ``constraint -> Transform``."""

    def __init__(self) -> None:
        self._registry: dict[type, _Factory] = {}

    def register(self, constraint: Any, factory: _Factory | None = None) -> Any:
        """Register ``factory`` for ``constraint`` (a Constraint subclass, or an instance standing for its type).
        Without ``factory``, returns a decorator.

        Example::

            @transform_to.register(MyConstraintClass)
            def my_factory(constraint):
                return MyTransform(constraint.param)
        """
        if factory is None:
            return lambda f: self.register(constraint, f)
        kind = type(constraint) if isinstance(constraint, C.Constraint) else constraint
        if not isinstance(kind, type) or not issubclass(kind, C.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got {constraint}")
        self._registry[kind] = factory
        return factory

    def __call__(self, constraint: C.Constraint) -> Tr.Transform:
        """The transform for ``constraint``.

        Raises:
            NotImplementedError: when no factory is registered for its type.
        """
        factory = self._registry.get(type(constraint))
        if factory is None:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints")
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


def _shifted_exp(c: Any, bound: Any, sign: int) -> Tr.Transform:
    return Tr.ComposeTransform([Tr.ExpTransform(), Tr.AffineTransform(bound, sign)])


def _interval(c: Any) -> Tr.Transform:
    lo, hi = c.lower_bound, c.upper_bound
    if isinstance(lo, float) and isinstance(hi, float) and (lo, hi) == (0.0, 1.0):
        return Tr.SigmoidTransform()
    return Tr.ComposeTransform([Tr.SigmoidTransform(), Tr.AffineTransform(lo, hi - lo)])


def _each(registry: ConstraintRegistry) -> Callable[[Any], list[Tr.Transform]]:
    return lambda c: [registry(part) for part in c.cseq]


BOTH, BIJECT, ONTO = (biject_to, transform_to), (biject_to,), (transform_to,)

# (constraint types, registries, factory)
_BUILTIN: list[tuple[tuple[Any, ...], tuple[ConstraintRegistry, ...], _Factory]] = [
    ((C.real,), BOTH, lambda c: Tr.identity_transform),
    ((C.positive, C.nonnegative), BOTH, lambda c: Tr.ExpTransform()),
    ((C.greater_than, C.greater_than_eq), BOTH, lambda c: _shifted_exp(c, c.lower_bound, 1)),
    ((C.less_than,), BOTH, lambda c: _shifted_exp(c, c.upper_bound, -1)),
    ((C.interval, C.half_open_interval), BOTH, _interval),
    ((C.simplex,), BIJECT, lambda c: Tr.StickBreakingTransform()),
    ((C.simplex,), ONTO, lambda c: Tr.SoftmaxTransform()),
    ((C.lower_cholesky,), ONTO, lambda c: Tr.LowerCholeskyTransform()),
    ((C.positive_definite, C.positive_semidefinite), ONTO, lambda c: Tr.PositiveDefiniteTransform()),
    ((C.corr_cholesky,), BOTH, lambda c: Tr.CorrCholeskyTransform()),
]
for _registry in BOTH:
    _parts = _each(_registry)
    _BUILTIN += [
        (
            (C.independent,),
            (_registry,),
            lambda c, r=_registry: Tr.IndependentTransform(r(c.base_constraint), c.reinterpreted_batch_ndims),
        ),
        ((C.cat,), (_registry,), lambda c, p=_parts: Tr.CatTransform(p(c), c.dim, c.lengths)),
        ((C.stack,), (_registry,), lambda c, p=_parts: Tr.StackTransform(p(c), c.dim)),
    ]

for _kinds, _registries, _factory in _BUILTIN:
    for _registry in _registries:
        for _kind in _kinds:
            _registry.register(_kind, _factory)
