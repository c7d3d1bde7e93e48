"""Same as torch.special, for the functions pyframe has: the rows of ``pyframe/ops/special.py`` (computed in
the C core) and torch's aliases and compositions of pyframe's ops."""

from __future__ import annotations

import math

from pyframe import _dtype, ops
from pyframe._aliases import sinc
from pyframe.nn import functional as _F
from pyframe.ops.special import (
    airy_ai,
    bessel_j0,
    bessel_j1,
    bessel_y0,
    bessel_y1,
    digamma,
    erfcx,
    erfinv,
    i0,
    i0e,
    i1,
    i1e,
    igamma,
    igammac,
    lgamma,
    modified_bessel_k0,
    modified_bessel_k1,
    mvlgamma,
    ndtri,
    polygamma,
    polynomials,
    scaled_modified_bessel_k0,
    scaled_modified_bessel_k1,
    zeta,
)
from pyframe.tensor import Tensor

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "digamma", "psi", "entr", "erf", "erfc", "erfcx",
    "erfinv", "exp2", "expit", "expm1", "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax",
    "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "multigammaln", "ndtr", "ndtri", "polygamma", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
    "sinc", "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta", "gammainc", "gammaincc",
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l",
    "legendre_polynomial_p",
]  # fmt: skip

chebyshev_polynomial_t = polynomials["chebyshev_polynomial_t"]
chebyshev_polynomial_u = polynomials["chebyshev_polynomial_u"]
chebyshev_polynomial_v = polynomials["chebyshev_polynomial_v"]
chebyshev_polynomial_w = polynomials["chebyshev_polynomial_w"]
shifted_chebyshev_polynomial_t = polynomials["shifted_chebyshev_polynomial_t"]
shifted_chebyshev_polynomial_u = polynomials["shifted_chebyshev_polynomial_u"]
shifted_chebyshev_polynomial_v = polynomials["shifted_chebyshev_polynomial_v"]
shifted_chebyshev_polynomial_w = polynomials["shifted_chebyshev_polynomial_w"]
hermite_polynomial_h = polynomials["hermite_polynomial_h"]
hermite_polynomial_he = polynomials["hermite_polynomial_he"]
laguerre_polynomial_l = polynomials["laguerre_polynomial_l"]
legendre_polynomial_p = polynomials["legendre_polynomial_p"]
multigammaln = mvlgamma

psi = digamma
gammainc, gammaincc = igamma, igammac
gammaln = lgamma
modified_bessel_i0, modified_bessel_i1 = i0, i1
erf, erfc, exp2, expm1, log1p, logit, round = ops.erf, ops.erfc, ops.exp2, ops.expm1, ops.log1p, ops.logit, ops.round
expit, logsumexp, xlogy = ops.sigmoid, ops.logsumexp, ops.xlogy


def _float(x: Tensor) -> Tensor:
    return x if x.dtype.is_floating_point else x.to(_dtype.get_default_dtype())


def ndtr(input: Tensor) -> Tensor:
    """Same as torch.special.ndtr: the standard normal CDF, ``erfc(-x / sqrt(2)) / 2``."""
    return ops.erfc(_float(input) * -math.sqrt(0.5)) * 0.5


def log_ndtr(input: Tensor) -> Tensor:
    """Same as torch.special.log_ndtr: ``log(ndtr(x))`` (``log1p(-ndtr(-x))`` above -1)."""
    x = _float(input)
    return ops.where(ops.lt(x, -1), ops.log(ndtr(x)), ops.log1p(-ndtr(-x)))


def entr(input: Tensor) -> Tensor:
    """Same as torch.special.entr: ``-x log x`` (0 at 0, -inf below)."""
    x = _float(input)
    safe = ops.where(ops.gt(x, 0), x, ops.ones_like(x))
    out = ops.where(ops.eq(x, 0), ops.zeros_like(x), -x * ops.log(safe))
    return ops.where(ops.lt(x, 0), ops.full_like(x, -math.inf), out)


def xlog1py(input, other) -> Tensor:
    """Same as torch.special.xlog1py: ``x * log1p(y)``, 0 where x is 0 (unless y is NaN)."""
    x = input if isinstance(input, Tensor) else ops.tensor(float(input), dtype=_float(other).dtype)
    y = other if isinstance(other, Tensor) else ops.tensor(float(other), dtype=_float(x).dtype)
    x, y = _float(x), _float(y)
    out = x * ops.log1p(y)
    return ops.where(ops.logical_and(ops.eq(x, 0), ops.logical_not(ops.isnan(y))), ops.zeros_like(out), out)


def spherical_bessel_j0(input: Tensor) -> Tensor:
    """Same as torch.special.spherical_bessel_j0: ``sin(x) / x``, 1 at 0."""
    x = _float(input)
    zero = ops.eq(x, 0)
    safe = ops.where(zero, ops.ones_like(x), x)
    return ops.where(zero, ops.ones_like(x), ops.sin(safe) / safe)


def softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Same as torch.special.softmax."""
    return _F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """Same as torch.special.log_softmax."""
    return _F.log_softmax(input, dim, dtype=dtype)
