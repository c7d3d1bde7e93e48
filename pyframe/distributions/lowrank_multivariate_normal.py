"""``LowRankMultivariateNormal``: a normal whose covariance is ``W W^T + diag(D)`` with ``W`` of rank ``m``.
Determinants and solves go through the ``m x m`` capacitance matrix ``I + W^T D^-1 W`` (Woodbury), so the cost
grows with ``m``, not with the event size."""

from __future__ import annotations

import math

from pyframe import linalg
from pyframe import ops as T
from pyframe._aliases import diag_embed
from pyframe.distributions import constraints
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.multivariate_normal import _batch_mahalanobis, _batch_mv
from pyframe.distributions.utils import _standard_normal, lazy_property
from pyframe.tensor import Size, Tensor

__all__ = ["LowRankMultivariateNormal"]


def _batch_capacitance_tril(W: Tensor, D: Tensor) -> Tensor:
    """The lower Cholesky factor of ``I + W^T D^-1 W``."""
    wt_dinv = W.mT / D.unsqueeze(-2)
    return linalg.cholesky(wt_dinv @ W + T.eye(W.size(-1), dtype=W.dtype))


def _batch_lowrank_logdet(W: Tensor, D: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``log det(W W^T + D) = log det(capacitance) + log det(D)``."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W: Tensor, D: Tensor, x: Tensor, capacitance_tril: Tensor) -> Tensor:
    """``x^T (W W^T + D)^-1 x = x^T D^-1 x - |C^-1 W^T D^-1 x|**2`` (Woodbury)."""
    projected = _batch_mv(W.mT / D.unsqueeze(-2), x)
    return (x.pow(2) / D).sum(-1) - _batch_mahalanobis(capacitance_tril, projected)


class LowRankMultivariateNormal(Distribution):
    """Multivariate normal with covariance ``cov_factor @ cov_factor.mT + diag(cov_diag)``.

    Args:
        loc (Tensor): the mean, ``batch_shape + (D,)``.
        cov_factor (Tensor): ``W``, ``batch_shape + (D, m)``.
        cov_diag (Tensor): the diagonal ``D``, positive, ``batch_shape + (D,)``.
    """

    arg_constraints = {
        "loc": constraints.real_vector,
        "cov_factor": constraints.independent(constraints.real, 2),
        "cov_diag": constraints.independent(constraints.positive, 1),
    }
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc: Tensor, cov_factor: Tensor, cov_diag: Tensor, validate_args: bool | None = None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape {event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            batch_shape = T.broadcast_shapes(loc.shape[:-1], cov_factor.shape[:-2], cov_diag.shape[:-1])
        except (RuntimeError, ValueError) as e:
            raise ValueError(
                f"Incompatible batch shapes: loc {loc.shape}, cov_factor {cov_factor.shape}, cov_diag {cov_diag.shape}"
            ) from e
        self.loc = loc.expand(batch_shape + event_shape)
        self.cov_factor = cov_factor.expand(batch_shape + cov_factor.shape[-2:])
        self.cov_diag = cov_diag.expand(batch_shape + event_shape)
        self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag = cov_factor, cov_diag
        self._capacitance_tril = _batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def _matrix_shape(self) -> Size:
        return self._batch_shape + self._event_shape + self._event_shape

    mean = property(lambda self: self.loc, doc="``loc``.")
    mode = property(lambda self: self.loc, doc="``loc``.")

    @lazy_property
    def variance(self) -> Tensor:
        """The covariance's diagonal: ``sum_j W_ij**2 + D_i``."""
        v = self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return v.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self) -> Tensor:
        """The lower Cholesky factor of the covariance: ``D^1/2 chol(I + D^-1/2 W W^T D^-1/2)``."""
        n = self._event_shape[0]
        d_sqrt = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        scaled = self._unbroadcasted_cov_factor / d_sqrt
        inner = scaled @ scaled.mT + T.eye(n, dtype=scaled.dtype)
        return (d_sqrt * linalg.cholesky(inner)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self) -> Tensor:
        """``W W^T + diag(D)``."""
        W = self._unbroadcasted_cov_factor
        return (W @ W.mT + diag_embed(self._unbroadcasted_cov_diag)).expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self) -> Tensor:
        """``D^-1 - D^-1 W C^-1 W^T D^-1`` (Woodbury) with the capacitance ``C``."""
        wt_dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        a = linalg.solve_triangular(self._capacitance_tril, wt_dinv, upper=False)
        return (diag_embed(self._unbroadcasted_cov_diag.reciprocal()) - a.mT @ a).expand(self._matrix_shape())

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps_w = _standard_normal(shape[:-1] + self.cov_factor.shape[-1:], dtype=self.loc.dtype)
        eps_d = _standard_normal(shape, dtype=self.loc.dtype)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return self.loc + _batch_mv(W, eps_w) + D.sqrt() * eps_d

    def _log_det(self) -> Tensor:
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        return _batch_lowrank_logdet(W, D, self._capacitance_tril)

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        W, D = self._unbroadcasted_cov_factor, self._unbroadcasted_cov_diag
        m = _batch_lowrank_mahalanobis(W, D, value - self.loc, self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + m)

    def entropy(self) -> Tensor:
        h = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return h.expand(self._batch_shape) if len(self._batch_shape) else h
