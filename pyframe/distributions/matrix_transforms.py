"""Transforms between unconstrained vectors or matrices and structured sets: the simplex (``SoftmaxTransform``,
``StickBreakingTransform``), lower Cholesky factors, positive definite matrices, and Cholesky factors of
correlation matrices (``CorrCholeskyTransform``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pyframe import _dtype, linalg
from pyframe import ops as T
from pyframe._aliases import diag_embed
from pyframe.distributions import constraints
from pyframe.distributions.elementwise_transforms import _clipped_sigmoid
from pyframe.distributions.transform import Transform
from pyframe.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix
from pyframe.nn import functional as F
from pyframe.tensor import Size, Tensor

__all__ = [
    "SoftmaxTransform", "StickBreakingTransform", "LowerCholeskyTransform", "PositiveDefiniteTransform",
    "CorrCholeskyTransform",
]  # fmt: skip


def _needs_dims(shape: Sequence[int], n: int) -> None:
    if len(shape) < n:
        raise ValueError("Too few dimensions on input")


def _prepend_one(x: Tensor) -> Tensor:
    """``[1, x_0, ..., x_{n-2}]`` along the last dimension: the exclusive running product's start."""
    return T.cat([T.ones_like(x[..., :1]), x[..., :-1]], -1)


class _Stateless(Transform):
    """A transform without parameters: all instances are equal."""

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    __hash__ = Transform.__hash__


class SoftmaxTransform(_Stateless):
    """Unconstrained vectors onto the simplex by ``softmax`` over the last dimension. Not a bijection (adding a
    constant changes nothing); the inverse returns ``log y``, one preimage. For HMC use
    :class:`StickBreakingTransform`."""

    domain = constraints.real_vector
    codomain = constraints.simplex

    def _call(self, x: Tensor) -> Tensor:
        return F.softmax(x, dim=-1)

    def _inverse(self, y: Tensor) -> Tensor:
        return y.log()

    def forward_shape(self, shape: Sequence[int]) -> Sequence[int]:
        _needs_dims(shape, 1)
        return shape

    inverse_shape = forward_shape


def _stick_offsets(k: int, like: Tensor) -> Tensor:
    """``log(k - i)`` for ``i = 0 .. k-1``: centring each stick's logit so that ``x = 0`` maps to the simplex's
    centre."""
    return T.arange(k, 0, -1, dtype=like.dtype).log()


class StickBreakingTransform(_Stateless):
    """A bijection from ``R^(K-1)`` onto the ``K``-simplex: the ``i``-th coordinate takes the fraction
    ``sigmoid(x_i - log(K-1-i))`` of what the previous ones left; the last takes the rest."""

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        frac = _clipped_sigmoid(x - _stick_offsets(x.shape[-1], x))
        left = (1 - frac).cumprod(-1)  # what remains after each break
        return T.cat([frac, T.ones_like(frac[..., :1])], -1) * T.cat([T.ones_like(left[..., :1]), left], -1)

    def _inverse(self, y: Tensor) -> Tensor:
        head = y[..., :-1]
        rest = (1 - head.cumsum(-1)).clamp(min=_dtype.finfo(y.dtype).tiny)
        return head.log() - rest.log() + _stick_offsets(head.shape[-1], y)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor) -> Tensor:
        z = x - _stick_offsets(x.shape[-1], x)
        return (F.logsigmoid(z) - z + y[..., :-1].log()).sum(-1)

    def forward_shape(self, shape: Sequence[int]) -> Sequence[int]:
        _needs_dims(shape, 1)
        return Size(tuple(shape[:-1]) + (shape[-1] + 1,))

    def inverse_shape(self, shape: Sequence[int]) -> Sequence[int]:
        _needs_dims(shape, 1)
        return Size(tuple(shape[:-1]) + (shape[-1] - 1,))


def _map_diagonal(m: Tensor, fn) -> Tensor:  # noqa: ANN001 - a unary tensor function
    return m.tril(-1) + diag_embed(fn(m.diagonal(dim1=-2, dim2=-1)))


class LowerCholeskyTransform(_Stateless):
    """Square matrices onto lower triangular ones with a positive diagonal: the strictly lower triangle is kept,
    the diagonal exponentiated (the upper triangle is dropped, so this is not a bijection)."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def _call(self, x: Tensor) -> Tensor:
        return _map_diagonal(x, T.exp)

    def _inverse(self, y: Tensor) -> Tensor:
        return _map_diagonal(y, T.log)


class PositiveDefiniteTransform(_Stateless):
    """Square matrices onto positive definite ones: ``L L^T`` for ``L = LowerCholeskyTransform()(x)``."""

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def _call(self, x: Tensor) -> Tensor:
        L = _map_diagonal(x, T.exp)
        return L @ L.mT

    def _inverse(self, y: Tensor) -> Tensor:
        return _map_diagonal(linalg.cholesky(y), T.log)


class CorrCholeskyTransform(_Stateless):
    """A bijection from ``R^(D(D-1)/2)`` onto Cholesky factors of ``D x D`` correlation matrices (lower
    triangular, positive diagonal, rows of unit length), as in Stan: ``tanh`` gives partial correlations in
    ``(-1, 1)`` filling the strictly lower triangle row by row, then each row is stick-broken so that its squares
    sum to 1."""

    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x: Tensor) -> Tensor:
        eps = _dtype.finfo(x.dtype).eps
        r = vec_to_tril_matrix(T.tanh(x).clamp(min=-1 + eps, max=1 - eps), diag=-1)
        left = (1 - r * r).sqrt().cumprod(-1)  # the length each row still has after each entry
        return (r + T.eye(r.shape[-1], dtype=r.dtype)) * _prepend_one(left)

    def _inverse(self, y: Tensor) -> Tensor:
        left_sq = _prepend_one(1 - (y * y).cumsum(-1))
        r = tril_matrix_to_vec(y, diag=-1) / tril_matrix_to_vec(left_sq, diag=-1).sqrt()
        return T.atanh(r)

    def log_abs_det_jacobian(self, x: Tensor, y: Tensor, intermediates: object = None) -> Tensor:
        # the stick breaking's part, then tanh's: log(1 - tanh(x)^2) = 2 (log 2 - x - softplus(-2x))
        left_sq = tril_matrix_to_vec(1 - (y * y).cumsum(-1), diag=-2)
        return 0.5 * left_sq.log().sum(-1) + (2 * (math.log(2.0) - x - F.softplus(-2 * x))).sum(-1)

    def forward_shape(self, shape: Sequence[int]) -> Sequence[int]:
        _needs_dims(shape, 1)
        n = shape[-1]
        d = round(math.sqrt(0.25 + 2 * n) + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return Size(tuple(shape[:-1]) + (d, d))

    def inverse_shape(self, shape: Sequence[int]) -> Sequence[int]:
        _needs_dims(shape, 2)
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return Size(tuple(shape[:-2]) + (d * (d - 1) // 2,))
