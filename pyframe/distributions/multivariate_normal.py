"""``MultivariateNormal``, parameterised by a covariance, a precision or a lower Cholesky factor; every computation
goes through the Cholesky factor ``L`` of the covariance (``Sigma = L L^T``)."""

from __future__ import annotations

import math

from pyframe import linalg
from pyframe import ops as T
from pyframe.distributions import constraints
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.utils import _standard_normal, lazy_property
from pyframe.tensor import Size, Tensor

__all__ = ["MultivariateNormal"]


def _batch_mv(bmat: Tensor, bvec: Tensor) -> Tensor:
    """Matrix-vector products over broadcast batch dimensions."""
    return (bmat @ bvec.unsqueeze(-1)).squeeze(-1)


def _batch_mahalanobis(bL: Tensor, bx: Tensor) -> Tensor:
    """``|L^-1 x|**2`` over the last dimension. The leading dimensions of ``x`` that ``L`` lacks (sample
    dimensions) become columns of one triangular solve per matrix, so ``L`` is never copied per sample."""
    n = bx.size(-1)
    shape = T.broadcast_shapes(bL.shape[:-2], bx.shape[:-1])
    lead = len(shape) - (bL.dim() - 2)
    cols = bx.expand(shape + (n,)).reshape((-1,) + tuple(shape[lead:]) + (n,)).movedim(0, -1)
    sol = linalg.solve_triangular(bL.expand(shape[lead:] + (n, n)), cols, upper=False)
    return sol.pow(2).sum(-2).movedim(-1, 0).reshape(shape)


def _precision_to_scale_tril(P: Tensor) -> Tensor:
    """The lower Cholesky factor of ``P^-1`` without forming ``P^-1``: with ``J`` the exchange matrix,
    ``J P J = U U^T`` (Cholesky) gives ``P^-1 = (J U^-T J)(J U^-T J)^T``, and ``J U^-T J`` is lower triangular."""
    flipped = linalg.cholesky(P.flip(-2, -1)).flip(-2, -1).mT  # J U J transposed: lower triangular
    eye = T.eye(P.shape[-1], dtype=P.dtype).expand(flipped.shape)
    return linalg.solve_triangular(flipped, eye, upper=False)


def _cholesky_inverse(L: Tensor) -> Tensor:
    """``(L L^T)^-1`` from the lower factor ``L``."""
    inv = linalg.solve_triangular(L, T.eye(L.shape[-1], dtype=L.dtype).expand(L.shape), upper=False)
    return inv.mT @ inv


class _ScaleMatrix:
    """Mixin of the families given one of ``covariance_matrix``, ``precision_matrix`` or ``scale_tril``: the one
    given is kept (broadcast), every computation uses its unbroadcast lower Cholesky factor, and the other two are
    derived on first use at the shape ``_matrix_shape()``."""

    _unbroadcasted_scale_tril: Tensor

    def _matrix_shape(self) -> Size:
        raise NotImplementedError

    @staticmethod
    def _one_matrix(**given: Tensor | None) -> tuple[str, Tensor]:
        """The single parameterisation given, checked to be a (batch of) matrix."""
        present = [(k, v) for k, v in given.items() if v is not None]
        if len(present) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        name, matrix = present[0]
        if matrix.dim() < 2:
            what = f"{name} matrix" if name == "scale_tril" else name
            raise ValueError(f"{what} must be at least two-dimensional, with optional leading batch dimensions")
        return name, matrix

    def _keep_factor(self, name: str, matrix: Tensor) -> None:
        if name == "scale_tril":
            self._unbroadcasted_scale_tril = matrix
        elif name == "covariance_matrix":
            self._unbroadcasted_scale_tril = linalg.cholesky(matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor ``L`` of the covariance (scale) matrix."""
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """The covariance (scale) matrix ``L L^T``."""
        L = self._unbroadcasted_scale_tril
        return (L @ L.mT).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """The inverse of the covariance (scale) matrix."""
        return _cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())


class MultivariateNormal(_ScaleMatrix, Distribution):
    """Multivariate normal distribution with mean ``loc`` and exactly one of ``covariance_matrix``,
    ``precision_matrix`` or ``scale_tril`` (the lower Cholesky factor of the covariance, the cheapest to give).

    Args:
        loc (Tensor): the mean, of shape ``batch_shape + (D,)``.
        covariance_matrix (Tensor): positive definite, ``(..., D, D)``.
        precision_matrix (Tensor): positive definite, ``(..., D, D)``.
        scale_tril (Tensor): lower triangular with a positive diagonal, ``(..., D, D)``.
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "covariance_matrix": constraints.positive_definite,
        "precision_matrix": constraints.positive_definite,
        "scale_tril": constraints.lower_cholesky,
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(
        self,
        loc: Tensor,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        name, matrix = self._one_matrix(
            covariance_matrix=covariance_matrix, precision_matrix=precision_matrix, scale_tril=scale_tril
        )
        batch_shape = T.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        self.__dict__[name] = matrix.expand(batch_shape + (-1, -1))
        self.loc = loc.expand(batch_shape + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._keep_factor(name, matrix)

    def _matrix_shape(self) -> Size:
        return self._batch_shape + self._event_shape + self._event_shape

    mean = property(lambda self: self.loc, doc="``loc``.")
    mode = property(lambda self: self.loc, doc="``loc``.")

    @property
    def variance(self) -> Tensor:
        """The diagonal of the covariance."""
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        eps = _standard_normal(self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + _batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self) -> Tensor:
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        m = _batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self) -> Tensor:
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(self._batch_shape) if len(self._batch_shape) else h
