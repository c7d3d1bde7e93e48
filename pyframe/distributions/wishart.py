"""``Wishart``: the distribution of ``sum_k x_k x_k^T`` for ``df`` draws ``x_k ~ N(0, Sigma)``, over positive
definite matrices."""

from __future__ import annotations

import math
import warnings
from numbers import Number

from pyframe import _dtype, linalg
from pyframe import ops as T
from pyframe._aliases import diag_embed
from pyframe.distributions import constraints
from pyframe.distributions.exp_family import ExponentialFamily
from pyframe.distributions.gamma_family import Chi2
from pyframe.distributions.multivariate_normal import _ScaleMatrix
from pyframe.distributions.utils import _standard_normal
from pyframe.linalg.solve import cholesky_solve
from pyframe.tensor import Size, Tensor

__all__ = ["Wishart"]

_LOG2 = math.log(2)


def _mvdigamma(x: Tensor, p: int) -> Tensor:
    """The multivariate digamma ``sum_{i<p} digamma(x - i/2)``, the derivative of ``mvlgamma(x, p)``."""
    return T.digamma(x.unsqueeze(-1) - T.arange(p, dtype=x.dtype) / 2).sum(-1)


class Wishart(_ScaleMatrix, ExponentialFamily):
    r"""Wishart distribution over ``p x p`` positive definite matrices with ``df`` degrees of freedom and scale
    matrix :math:`\Sigma`, given by exactly one of ``covariance_matrix``, ``precision_matrix`` (its inverse) or
    ``scale_tril`` (its lower Cholesky factor).

    ``rsample`` uses the Bartlett decomposition (``X = L A A^T L^T`` with ``A`` lower triangular, chi-distributed
    diagonal and standard normal below it), reparameterised through the Chi2 draws. A draw that rounds to a
    singular matrix (possible for ``df`` near ``p - 1`` in low precision) is drawn again, at most
    ``max_try_correction`` times (default 10), with a warning when that happens.

    Args:
        df (float or Tensor): degrees of freedom, greater than ``p - 1``.
        covariance_matrix (Tensor): the scale matrix, positive definite.
        precision_matrix (Tensor): its inverse.
        scale_tril (Tensor): its lower Cholesky factor.
    """

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        return {
            "covariance_matrix": constraints.positive_definite,
            "precision_matrix": constraints.positive_definite,
            "scale_tril": constraints.lower_cholesky,
            "df": constraints.greater_than(self.event_shape[-1] - 1),
        }

    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(
        self,
        df: Tensor | Number,
        covariance_matrix: Tensor | None = None,
        precision_matrix: Tensor | None = None,
        scale_tril: Tensor | None = None,
        validate_args: bool | None = None,
    ) -> None:
        name, matrix = self._one_matrix(
            covariance_matrix=covariance_matrix, precision_matrix=precision_matrix, scale_tril=scale_tril
        )
        df = T.as_tensor(df, dtype=matrix.dtype)
        batch_shape = T.broadcast_shapes(matrix.shape[:-2], df.shape)
        event_shape = matrix.shape[-2:]
        p = event_shape[-1]
        self.df = df.expand(batch_shape)
        self.__dict__[name] = matrix.expand(batch_shape + event_shape)
        if bool((self.df <= p - 1).any()):
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        super().__init__(batch_shape, event_shape, validate_args=validate_args)
        self._keep_factor(name, matrix)
        # the Bartlett factor's squared diagonal: Chi2(df - i) for row i
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - T.arange(p, dtype=matrix.dtype).expand(batch_shape + (p,)))

    def expand(self, batch_shape, _instance: Wishart | None = None) -> Wishart:
        new = self._expanded(batch_shape, _instance)
        new._dist_chi2 = self._dist_chi2.expand(Size(batch_shape) + self.event_shape[-1:])
        return new

    def _matrix_shape(self) -> Size:
        return self._batch_shape + self._event_shape

    def _p(self) -> int:
        return self._event_shape[-1]

    @property
    def mean(self) -> Tensor:
        """``df * Sigma``."""
        return self.df[..., None, None] * self.covariance_matrix

    @property
    def mode(self) -> Tensor:
        """``(df - p - 1) * Sigma``; NaN where ``df < p + 1`` (no mode inside the support)."""
        factor = self.df - self._p() - 1
        return T.where(factor > 0, factor, math.nan)[..., None, None] * self.covariance_matrix

    @property
    def variance(self) -> Tensor:
        """``Var(X_ij) = df (Sigma_ij**2 + Sigma_ii Sigma_jj)``."""
        S = self.covariance_matrix
        d = S.diagonal(dim1=-2, dim2=-1)
        return self.df[..., None, None] * (S.pow(2) + d.unsqueeze(-1) * d.unsqueeze(-2))

    def _bartlett(self, sample_shape: Size) -> Tensor:
        shape = self._extended_shape(sample_shape)
        chi = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=_dtype.finfo(self.df.dtype).eps)
        below = _standard_normal(shape, dtype=self.df.dtype).tril(-1)
        A = below + diag_embed(chi)
        LA = self._unbroadcasted_scale_tril @ A
        return LA @ LA.mT

    def rsample(self, sample_shape=(), max_try_correction: int | None = None) -> Tensor:
        """A reparameterised draw (see the class notes on singular draws).

        Args:
            sample_shape (Size): leading sample dimensions.
            max_try_correction (int, optional): how many times singular draws are drawn again. Default: 10.
        """
        sample_shape = Size(sample_shape)
        tries = 10 if max_try_correction is None else max_try_correction
        x = self._bartlett(sample_shape)
        bad = ~constraints.positive_definite.check(x)
        if bool(bad.any()):
            warnings.warn("Singular sample detected.", stacklevel=2)
        while bool(bad.any()) and tries > 0:
            x = T.where(bad[..., None, None], self._bartlett(sample_shape), x)
            bad = ~constraints.positive_definite.check(x)
            tries -= 1
        return x

    def log_prob(self, value: Tensor) -> Tensor:
        if self._validate_args:
            self._validate_sample(value)
        nu, p, L = self.df, self._p(), self._unbroadcasted_scale_tril
        half_log_det_sigma = L.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        trace = cholesky_solve(value, L).diagonal(dim1=-2, dim2=-1).sum(-1)  # tr(Sigma^-1 X)
        log_det_x = linalg.slogdet(value).logabsdet
        return (
            (nu - p - 1) / 2 * log_det_x - trace / 2 - nu * (p * _LOG2 / 2 + half_log_det_sigma) - T.mvlgamma(nu / 2, p)
        )

    def entropy(self) -> Tensor:
        nu, p = self.df, self._p()
        half_log_det_sigma = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return (
            (p + 1) * (p * _LOG2 / 2 + half_log_det_sigma)
            + T.mvlgamma(nu / 2, p)
            - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p)
            + nu * p / 2
        )

    @property
    def _natural_params(self) -> tuple[Tensor, Tensor]:
        return -0.5 * self.precision_matrix, 0.5 * (self.df - self._p() - 1)

    def _log_normalizer(self, x: Tensor, y: Tensor) -> Tensor:
        p = self._p()
        half_nu = y + (p + 1) / 2
        return half_nu * (p * _LOG2 - linalg.slogdet(-2 * x).logabsdet) + T.mvlgamma(half_nu, p)
