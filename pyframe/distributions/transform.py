"""``Transform`` and the transforms that combine others: composition, reinterpreting batch dimensions, reshaping,
and applying transforms to pieces of a tensor (``CatTransform``, ``StackTransform``).

A transform maps ``domain`` onto ``codomain`` and knows ``log|det J|``. Subclasses implement ``_call`` (and
``_inverse`` for bijections); ``__call__`` adds the optional one-entry cache (``cache_size=1``) that lets a
``TransformedDistribution`` score its own samples without inverting. ``t.inv`` is the inverse, built once."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from pyframe import ops as T
from pyframe.distributions import constraints
from pyframe.distributions.utils import _sum_rightmost
from pyframe.tensor import Size, Tensor

__all__ = [
    "Transform", "ComposeTransform", "IndependentTransform", "ReshapeTransform", "CatTransform", "StackTransform",
    "identity_transform",
]  # fmt: skip


class Transform:
    """An invertible (or at least computable) map with a computable log absolute Jacobian determinant.

    Args:
        cache_size (int): 0 for no cache, 1 to remember the last ``(x, y)`` pair, so that ``t.inv(t(x))`` returns
            ``x`` itself (the same object) without computing the inverse.

    Attributes:
        domain (Constraint): where inputs lie. codomain (Constraint): where outputs lie.
        bijective (bool): whether the map is invertible. sign: the sign of the Jacobian of monotone univariate
            transforms.
    """

    bijective = False
    domain: constraints.Constraint
    codomain: constraints.Constraint

    def __init__(self, cache_size: int = 0) -> None:
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv: Transform | None = None
        self._cached_x_y: tuple[Any, Any] = (None, None)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_inv": None}  # the inverse refers back to us: rebuild it after unpickling

    @property
    def event_dim(self) -> int:
        """The event dimension of both domain and codomain (an error when they differ)."""
        if self.domain.event_dim != self.codomain.event_dim:
            raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")
        return self.domain.event_dim

    @property
    def inv(self) -> Transform:
        """The inverse transform (the same object on every access; its ``inv`` is this one)."""
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    @property
    def sign(self) -> int:
        """+1 or -1: whether this monotone univariate transform increases or decreases."""
        raise NotImplementedError

    def with_cache(self, cache_size: int = 1) -> Transform:
        """This transform with ``cache_size`` (itself when it already has that size)."""
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        if getattr(self, "_copy_recaches", False):
            return self._recached(cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def _recached(self, cache_size: int) -> Transform:
        """A shallow copy with a fresh cache of ``cache_size`` (for transforms whose state is their attributes)."""
        new = copy.copy(self)
        Transform.__init__(new, cache_size)
        return new

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x: Tensor) -> Tensor:
        if not self._cache_size:
            return self._call(x)
        if x is self._cached_x_y[0]:
            return self._cached_x_y[1]
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y: Tensor) -> Tensor:
        if not self._cache_size:
            return self._inverse(y)
        if y is self._cached_x_y[1]:
            return self._cached_x_y[0]
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x: Tensor) -> Tensor:
        raise NotImplementedError

    def _inverse(self, y: Tensor) -> Tensor:
        raise NotImplementedError

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        """``log |dy/dx|`` at the pair ``(x, y = self(x))``."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def forward_shape(self, shape: Sequence[int]) -> Sequence[int]:
        """The output shape for an input of ``shape``."""
        return shape

    def inverse_shape(self, shape: Sequence[int]) -> Sequence[int]:
        """The input shape for an output of ``shape``."""
        return shape


class _InverseTransform(Transform):
    """The inverse of a transform, computed by that transform's ``_inverse`` (sharing its cache)."""

    def __init__(self, transform: Transform) -> None:
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return self._inv.codomain

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return self._inv.domain

    bijective = property(lambda self: self._inv.bijective)  # type: ignore[assignment]
    sign = property(lambda self: self._inv.sign)  # type: ignore[assignment]
    inv = property(lambda self: self._inv)  # type: ignore[assignment]

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self._inv.with_cache(cache_size).inv

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._inv!r})"

    def __call__(self, x: Tensor) -> Tensor:
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape: Sequence[int]) -> Sequence[int]:
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> Sequence[int]:
        return self._inv.forward_shape(shape)


def _widened(c: constraints.Constraint, event_dim: int) -> constraints.Constraint:
    """``c`` reinterpreted over ``event_dim`` dimensions (``independent`` over the extra ones)."""
    if event_dim < c.event_dim:
        raise ValueError(f"event_dim {event_dim} is below the constraint's own {c.event_dim}")
    return constraints.independent(c, event_dim - c.event_dim) if event_dim > c.event_dim else c


class ComposeTransform(Transform):
    """Apply ``parts`` in order, ``parts[0]`` first. The empty composition is the identity.

    Args:
        parts (list of Transform): the transforms to chain.
        cache_size (int): the cache of the composition and of every part. Default: 0.
    """

    def __init__(self, parts: list[Transform], cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.parts = [p.with_cache(cache_size) for p in parts] if cache_size else list(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    def _event_dims(self) -> list[int]:
        """The event dimension of the value between consecutive parts (``len(parts) + 1`` entries): the largest
        any part needs, carried through the change each part makes."""
        dim = 0
        for p in reversed(self.parts):  # what the input must have so that every later part sees enough
            dim = max(dim + p.domain.event_dim - p.codomain.event_dim, p.domain.event_dim)
        dims = [dim]
        for p in self.parts:
            dims.append(max(dims[-1] + p.codomain.event_dim - p.domain.event_dim, p.codomain.event_dim))
        return dims

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return _widened(self.parts[0].domain, self._event_dims()[0]) if self.parts else constraints.real

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return _widened(self.parts[-1].codomain, self._event_dims()[-1]) if self.parts else constraints.real

    bijective = property(lambda self: all(p.bijective for p in self.parts))  # type: ignore[assignment]

    @property
    def sign(self) -> int:  # type: ignore[override]
        s = 1
        for p in self.parts:
            s *= p.sign
        return s

    @property
    def inv(self) -> Transform:
        if self._inv is None:
            self._inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv._inv = self
        return self._inv

    def with_cache(self, cache_size: int = 1) -> Transform:
        return self if self._cache_size == cache_size else ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x: Tensor) -> Tensor:
        for p in self.parts:
            x = p(x)
        return x

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        if not self.parts:
            return T.zeros_like(x)
        values = [x]
        for p in self.parts[:-1]:
            values.append(p(values[-1]))
        values.append(y)
        dim, total = self.domain.event_dim, None
        for p, a, b in zip(self.parts, values, values[1:], strict=False):
            term = _sum_rightmost(p.log_abs_det_jacobian(a, b), dim - p.domain.event_dim)
            total = term if total is None else total + term
            dim += p.codomain.event_dim - p.domain.event_dim
        return total

    def forward_shape(self, shape: Sequence[int]) -> Sequence[int]:
        for p in self.parts:
            shape = p.forward_shape(shape)
        return shape

    def inverse_shape(self, shape: Sequence[int]) -> Sequence[int]:
        for p in reversed(self.parts):
            shape = p.inverse_shape(shape)
        return shape

    def __repr__(self) -> str:
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{type(self).__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """``base_transform`` with ``reinterpreted_batch_ndims`` more rightmost dimensions counted as the event: the
    map is the same, the log-det-Jacobian is summed over those dimensions.

    Args:
        base_transform (Transform): the transform to wrap.
        reinterpreted_batch_ndims (int): how many more dimensions belong to the event.
    """

    def __init__(self, base_transform: Transform, reinterpreted_batch_ndims: int, cache_size: int = 0) -> None:
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size: int = 1) -> Transform:
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size)

    @constraints.dependent_property(is_discrete=False)
    def domain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @constraints.dependent_property(is_discrete=False)
    def codomain(self) -> constraints.Constraint:
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    bijective = property(lambda self: self.base_transform.bijective)  # type: ignore[assignment]
    sign = property(lambda self: self.base_transform.sign)  # type: ignore[assignment]

    def _call(self, x: Tensor) -> Tensor:
        if x.dim() < self.domain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform(x)

    def _inverse(self, y: Tensor) -> Tensor:
        if y.dim() < self.codomain.event_dim:
            raise ValueError("Too few dimensions on input")
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return _sum_rightmost(self.base_transform.log_abs_det_jacobian(x, y), self.reinterpreted_batch_ndims)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_transform!r}, {self.reinterpreted_batch_ndims})"

    def forward_shape(self, shape: Sequence[int]) -> Sequence[int]:
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape: Sequence[int]) -> Sequence[int]:
        return self.base_transform.inverse_shape(shape)


class ReshapeTransform(Transform):
    """Reshape the rightmost ``in_shape`` dimensions to ``out_shape`` (same number of elements).

    Args:
        in_shape (Size): the event shape of inputs.
        out_shape (Size): the event shape of outputs.
    """

    bijective = True
    _copy_recaches = True

    def __init__(self, in_shape: Sequence[int], out_shape: Sequence[int], cache_size: int = 0) -> None:
        self.in_shape, self.out_shape = Size(in_shape), Size(out_shape)
        if self.in_shape.numel() != self.out_shape.numel():
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    domain = constraints.dependent_property(lambda self: constraints.independent(constraints.real, len(self.in_shape)))
    codomain = constraints.dependent_property(
        lambda self: constraints.independent(constraints.real, len(self.out_shape))
    )

    @staticmethod
    def _swap(t: Tensor, old: Size, new: Size) -> Tensor:
        return t.reshape(t.shape[: t.dim() - len(old)] + new)

    def _call(self, x: Tensor) -> Tensor:
        return self._swap(x, self.in_shape, self.out_shape)

    def _inverse(self, y: Tensor) -> Tensor:
        return self._swap(y, self.out_shape, self.in_shape)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        return x.new_zeros(x.shape[: x.dim() - len(self.in_shape)])

    @staticmethod
    def _reshaped(shape: Sequence[int], old: Size, new: Size) -> Sequence[int]:
        if len(shape) < len(old):
            raise ValueError("Too few dimensions on input")
        cut = len(shape) - len(old)
        if tuple(shape[cut:]) != tuple(old):
            raise ValueError(f"Shape mismatch: expected {tuple(shape[cut:])} but got {tuple(old)}")
        return Size(tuple(shape[:cut]) + tuple(new))

    def forward_shape(self, shape: Sequence[int]) -> Sequence[int]:
        return self._reshaped(shape, self.in_shape, self.out_shape)

    def inverse_shape(self, shape: Sequence[int]) -> Sequence[int]:
        return self._reshaped(shape, self.out_shape, self.in_shape)


class _Piecewise(Transform):
    """Transforms applied to pieces of a tensor along ``dim``; subclasses say how to cut and join."""

    _copy_recaches = True

    def __init__(self, tseq: Sequence[Transform], dim: int, cache_size: int) -> None:
        if not all(isinstance(t, Transform) for t in tseq):
            raise TypeError(f"{type(self).__name__} takes a sequence of Transform objects")
        super().__init__(cache_size=cache_size)
        self.transforms = [t.with_cache(cache_size) for t in tseq] if cache_size else list(tseq)
        self.dim = dim

    def _recached(self, cache_size: int) -> Transform:
        new = super()._recached(cache_size)
        new.transforms = [t.with_cache(cache_size) for t in self.transforms]
        return new

    bijective = property(lambda self: all(t.bijective for t in self.transforms))  # type: ignore[assignment]

    def _pieces(self, t: Tensor, what: str) -> list[Tensor]:
        if not -t.dim() <= self.dim < t.dim():
            raise ValueError(f"dim {self.dim} out of range for {what} with {t.dim()} dimensions")
        if t.size(self.dim) != self._length():
            raise ValueError(f"{what}.size({self.dim}) = {t.size(self.dim)} must equal {self._length()}")
        return self._cut(t)

    def _call(self, x: Tensor) -> Tensor:
        return self._join([t(p) for t, p in zip(self.transforms, self._pieces(x, "x"), strict=True)])

    def _inverse(self, y: Tensor) -> Tensor:
        return self._join([t.inv(p) for t, p in zip(self.transforms, self._pieces(y, "y"), strict=True)])


class CatTransform(_Piecewise):
    """``tseq[i]`` applied to the i-th slice of ``lengths[i]`` along ``dim``, results concatenated (as
    ``pyframe.cat``).

    Args:
        tseq (sequence of Transform): one transform a slice.
        dim (int): the dimension to cut. Default: 0.
        lengths (sequence of int): the slices' sizes. Default: 1 each.
    """

    def __init__(
        self, tseq: Sequence[Transform], dim: int = 0, lengths: Sequence[int] | None = None, cache_size: int = 0
    ) -> None:
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise ValueError(f"lengths ({len(self.lengths)}) must match transforms ({len(self.transforms)})")

    event_dim = property(lambda self: max(t.event_dim for t in self.transforms))  # type: ignore[assignment]
    length = property(lambda self: sum(self.lengths), doc="The total size along ``dim``.")

    def _length(self) -> int:
        return self.length

    def _cut(self, t: Tensor) -> list[Tensor]:
        starts = [sum(self.lengths[:i]) for i in range(len(self.lengths))]
        return [t.narrow(self.dim, s, n) for s, n in zip(starts, self.lengths, strict=True)]

    def _join(self, parts: list[Tensor]) -> Tensor:
        return T.cat(parts, dim=self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        ev = self.event_dim
        terms = [
            _sum_rightmost(t.log_abs_det_jacobian(a, b), ev - t.event_dim)
            for t, a, b in zip(self.transforms, self._pieces(x, "x"), self._pieces(y, "y"), strict=True)
        ]
        dim = (self.dim - x.dim() if self.dim >= 0 else self.dim) + ev  # where dim falls after the event sums
        return T.cat(terms, dim=dim) if dim < 0 else sum(terms)

    domain = constraints.dependent_property(
        lambda self: constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)
    )
    codomain = constraints.dependent_property(
        lambda self: constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)
    )


class StackTransform(_Piecewise):
    """``tseq[i]`` applied to ``x.select(dim, i)``, results stacked (as ``pyframe.stack``).

    Args:
        tseq (sequence of Transform): one transform per index along ``dim``.
        dim (int): the dimension to split. Default: 0.
    """

    def __init__(self, tseq: Sequence[Transform], dim: int = 0, cache_size: int = 0) -> None:
        super().__init__(tseq, dim, cache_size)

    def _length(self) -> int:
        return len(self.transforms)

    def _cut(self, t: Tensor) -> list[Tensor]:
        return [t.select(self.dim, i) for i in range(t.size(self.dim))]

    def _join(self, parts: list[Tensor]) -> Tensor:
        return T.stack(parts, dim=self.dim)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        pairs = zip(self.transforms, self._pieces(x, "x"), self._pieces(y, "y"), strict=True)
        return T.stack([t.log_abs_det_jacobian(a, b) for t, a, b in pairs], dim=self.dim)

    domain = constraints.dependent_property(
        lambda self: constraints.stack([t.domain for t in self.transforms], self.dim)
    )
    codomain = constraints.dependent_property(
        lambda self: constraints.stack([t.codomain for t in self.transforms], self.dim)
    )
