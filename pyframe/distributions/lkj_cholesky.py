"""``LKJCholesky``: the LKJ distribution over correlation matrices, on their lower Cholesky factors."""

from __future__ import annotations

import math
from numbers import Number

from pyframe import _dtype
from pyframe import ops as T
from pyframe._aliases import diag_embed
from pyframe._grad_mode import no_grad
from pyframe.distributions import constraints
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.gamma_family import Beta
from pyframe.distributions.utils import _standard_normal, broadcast_all
from pyframe.tensor import Size, Tensor

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    r"""LKJ distribution (Lewandowski, Kurowicka and Joe, 2009) over lower Cholesky factors ``L`` of ``dim x dim``
    correlation matrices ``L L^T``: the correlation matrix has density proportional to
    :math:`\det(L L^T)^{\eta - 1}`, with ``concentration`` :math:`\eta` (1 is uniform over correlation matrices;
    larger values favour the identity). Draws use the onion method: row ``i``'s squared length off the diagonal
    is a Beta draw, its direction uniform on the sphere. There is no ``rsample``.

    Args:
        dim (int): the matrix size, at least 2.
        concentration (float or Tensor): :math:`\eta`, positive. Default: 1.
    """

    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration: Tensor | Number = 1.0, validate_args: bool | None = None) -> None:
        if not isinstance(dim, int) or isinstance(dim, bool) or dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        # row i (i >= 1) of L: its squared off-diagonal length is Beta(i/2, eta + (dim - 2)/2 - (i - 1)/2); row 0
        # has none (its Beta is drawn and ignored, which keeps one Beta of batch_shape + (dim,))
        i = T.arange(dim, dtype=self.concentration.dtype)
        half_i = T.where(i > 0, (i - 1) / 2, 0.0)
        a = half_i + 0.5
        b = (self.concentration + 0.5 * (dim - 2)).unsqueeze(-1) - half_i
        self._beta = Beta(a, b)
        super().__init__(batch_shape, Size((dim, dim)), validate_args=validate_args)

    def expand(self, batch_shape, _instance: LKJCholesky | None = None) -> LKJCholesky:
        new = self._expanded(batch_shape, _instance)
        new._beta = self._beta.expand(Size(batch_shape) + (self.dim,))
        return new

    def sample(self, sample_shape=()) -> Tensor:
        with no_grad():
            shape = self._extended_shape(sample_shape)
            length_sq = self._beta.sample(sample_shape).unsqueeze(-1)  # [..., dim, 1]
            direction = _standard_normal(shape, dtype=length_sq.dtype).tril(-1)
            norms = direction.norm(dim=-1, keepdim=True)
            direction = T.where(norms > 0, direction / T.where(norms > 0, norms, 1.0), 0.0)  # row 0 stays 0
            off = length_sq.sqrt() * direction
            tiny = _dtype.finfo(off.dtype).tiny
            return off + diag_embed((1 - off.pow(2).sum(-1)).clamp(min=tiny).sqrt())

    def log_prob(self, value: Tensor) -> Tensor:
        """``sum_{i>=1} (2 (eta - 1) + dim - 1 - i) log L_ii`` less the log normaliser."""
        if self._validate_args:
            self._validate_sample(value)
        d, eta = self.dim, self.concentration
        diag = value.diagonal(dim1=-2, dim2=-1)[..., 1:]
        powers = 2 * (eta - 1).unsqueeze(-1) + d - T.arange(2, d + 1, dtype=eta.dtype)
        unnormalised = (powers * diag.log()).sum(-1)
        # log normaliser (LKJ 2009, p. 1999): (d-1)/2 log pi + log Gamma_{d-1}(alpha - 1/2) - (d-1) lgamma(alpha)
        alpha = eta + 0.5 * (d - 1)
        log_norm = 0.5 * (d - 1) * math.log(math.pi) + T.mvlgamma(alpha - 0.5, d - 1) - (d - 1) * T.lgamma(alpha)
        return unnormalised - log_norm
