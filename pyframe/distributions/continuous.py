"""Normal, Uniform and MultivariateNormal: reparameterised samples, log densities and entropies
built from differentiable pyframe ops, so gradients reach every parameter."""

from __future__ import annotations

import math

from pyframe import _dtype, linalg
from pyframe.distributions.distribution import LOG_SQRT_2PI, Distribution, all_true, as_float, broadcast_all
from pyframe.ops.creation import eye
from pyframe.ops.random import rand, randn
from pyframe.tensor import Tensor

__all__ = ["Normal", "Uniform", "MultivariateNormal"]


class _Gaussian(Distribution):
    """Normal and MultivariateNormal: the mean and the mode are ``loc``."""

    @property
    def mean(self) -> Tensor:
        return self.loc

    mode = mean


class Normal(_Gaussian):
    """Same as torch.distributions.Normal(loc, scale): ``scale > 0``."""

    has_rsample = True
    _param_names = ("loc", "scale")

    def __init__(self, loc, scale, validate_args: bool | None = None) -> None:
        loc = as_float(loc, "loc", scale if isinstance(scale, Tensor) else None)
        self.loc, self.scale = broadcast_all(loc, as_float(scale, "scale", loc))
        super().__init__(self.loc._shape, (), validate_args)

    def _check_parameters(self) -> None:
        if not all_true(self.loc.isfinite()):
            raise self._invalid("loc", self.loc, "Real()")
        if not all_true(self.scale > 0):
            raise self._invalid("scale", self.scale, "GreaterThan(lower_bound=0.0)")

    def _param_dtype(self):
        return self.loc.dtype

    @property
    def stddev(self) -> Tensor:
        return self.scale

    @property
    def variance(self) -> Tensor:
        return self.scale * self.scale

    def rsample(self, sample_shape=()) -> Tensor:
        eps = randn(*self._extended_shape(sample_shape), dtype=self.loc.dtype)
        return self.loc + eps * self.scale

    def log_prob(self, value) -> Tensor:
        value = self._value(value)
        var = self.scale * self.scale
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - LOG_SQRT_2PI

    def cdf(self, value) -> Tensor:
        value = self._value(value)
        return 0.5 * (1 + ((value - self.loc) / (self.scale * math.sqrt(2))).erf())

    def entropy(self) -> Tensor:
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class Uniform(Distribution):
    """Same as torch.distributions.Uniform(low, high): ``low < high``, support ``[low, high)``."""

    has_rsample = True
    _param_names = ("low", "high")
    _support_name = "Interval[low, high)"

    def __init__(self, low, high, validate_args: bool | None = None) -> None:
        low = as_float(low, "low", high if isinstance(high, Tensor) else None)
        self.low, self.high = broadcast_all(low, as_float(high, "high", low))
        super().__init__(self.low._shape, (), validate_args)

    def _check_parameters(self) -> None:
        if not all_true(self.low < self.high):
            raise self._invalid("low", self.low, "LessThan(upper_bound=high)")

    def _param_dtype(self):
        return self.low.dtype

    def _in_support(self, value: Tensor) -> bool:
        return all_true((self.low <= value).logical_and(value < self.high))

    @property
    def mean(self) -> Tensor:
        return (self.high + self.low) / 2

    @property
    def mode(self) -> Tensor:
        return (self.high * float("nan")).detach()

    @property
    def stddev(self) -> Tensor:
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self) -> Tensor:
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape=()) -> Tensor:
        u = rand(*self._extended_shape(sample_shape), dtype=self.low.dtype)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value) -> Tensor:
        value = self._value(value)
        inside = (self.low <= value).logical_and(value < self.high).to(self.low.dtype)
        return inside.log() - (self.high - self.low).log()

    def cdf(self, value) -> Tensor:
        value = self._value(value)
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def entropy(self) -> Tensor:
        return (self.high - self.low).log()


def _diag(m: Tensor) -> Tensor:
    """The diagonal of the last two dims, differentiably (a masked row sum)."""
    return (m * eye(m._shape[-1], dtype=m.dtype)).sum(-1)


class MultivariateNormal(_Gaussian):
    """Same as torch.distributions.MultivariateNormal(loc, covariance_matrix | precision_matrix |
    scale_tril): exactly one of the three; the covariance is kept as its Cholesky factor."""

    has_rsample = True
    _param_names = ("loc",)

    def __init__(
        self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None, validate_args: bool | None = None
    ) -> None:
        given = [m for m in (covariance_matrix, precision_matrix, scale_tril) if m is not None]
        if len(given) != 1:
            raise ValueError(
                "Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified "
                f"(got {len(given)})"
            )
        if not isinstance(loc, Tensor) or loc.ndim < 1:
            raise ValueError("loc must be at least one-dimensional")
        matrix = given[0]
        if not isinstance(matrix, Tensor) or matrix.ndim < 2 or matrix._shape[-1] != matrix._shape[-2]:
            shape = tuple(matrix._shape) if isinstance(matrix, Tensor) else type(matrix).__name__
            raise ValueError(f"the covariance, precision or scale_tril matrix must be at least two-dimensional "
                             f"and square in its last two dims, got {shape}")  # fmt: skip
        k = loc._shape[-1]
        if matrix._shape[-1] != k:
            raise ValueError(f"loc has {k} dims but the matrix is {matrix._shape[-1]} x {matrix._shape[-1]}")
        if not loc.dtype.is_floating_point:
            loc = loc.to(_dtype.get_default_dtype())
        matrix = matrix.to(loc.dtype) if matrix.dtype is not loc.dtype else matrix
        batch = _broadcast_batch(loc._shape[:-1], matrix._shape[:-2])
        self.loc = loc.expand(*batch, k)
        self._matrix_kind = "scale_tril" if scale_tril is not None else (
            "covariance_matrix" if covariance_matrix is not None else "precision_matrix")  # fmt: skip
        self._given = matrix.expand(*batch, k, k)
        self._validate_args = Distribution._validate_default if validate_args is None else bool(validate_args)
        if self._validate_args:
            self._check_matrix()
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = matrix
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = _cholesky(matrix, "covariance_matrix")
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(matrix)
        super().__init__(batch, (k,), validate_args)

    def _check_matrix(self) -> None:
        m, name = self._given, self._matrix_kind
        if not all_true(self.loc.isfinite()):
            raise self._invalid("loc", self.loc, "IndependentConstraint(Real(), 1)")
        if name == "scale_tril":
            ok = all_true(m.isfinite()) and all_true(m.triu(1) == 0) and all_true(_diag(m) > 0)
            if not ok:
                raise self._invalid(name, m, "LowerCholesky()")
        elif not (all_true(m.isfinite()) and all_true((m - m.transpose(-1, -2)).abs() <= 1e-6 * (1 + m.abs()))):
            raise self._invalid(name, m, "PositiveDefinite()")

    def _param_dtype(self):
        return self.loc.dtype

    @property
    def scale_tril(self) -> Tensor:
        """Same as torch.distributions.MultivariateNormal.scale_tril: the lower-triangular Cholesky factor L of the
        covariance (``L @ L.mT``), expanded to ``batch_shape + (k, k)``.
        """
        return self._unbroadcasted_scale_tril.expand(*self._batch_shape, *self._event_shape, *self._event_shape)

    @property
    def covariance_matrix(self) -> Tensor:
        """Same as torch.distributions.MultivariateNormal.covariance_matrix: ``L @ L.mT`` from ``scale_tril``,
        expanded to
        ``batch_shape + (k, k)``.
        """
        L = self._unbroadcasted_scale_tril  # noqa: N806
        cov = L @ L.transpose(-1, -2)
        return cov.expand(*self._batch_shape, *self._event_shape, *self._event_shape)

    @property
    def precision_matrix(self) -> Tensor:
        """Same as torch.distributions.MultivariateNormal.precision_matrix: the inverse of the covariance matrix."""
        return linalg.inv(self.covariance_matrix)

    @property
    def variance(self) -> Tensor:
        L = self._unbroadcasted_scale_tril  # noqa: N806
        return (L * L).sum(-1).expand(*self._batch_shape, *self._event_shape)

    def rsample(self, sample_shape=()) -> Tensor:
        shape = self._extended_shape(sample_shape)
        eps = randn(*shape, dtype=self.loc.dtype)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def _half_log_det(self) -> Tensor:
        return _diag(self._unbroadcasted_scale_tril).log().sum(-1)

    def log_prob(self, value) -> Tensor:
        value = self._value(value)
        diff = value - self.loc
        L = self._unbroadcasted_scale_tril  # noqa: N806
        batch = _broadcast_batch(diff._shape[:-1], L._shape[:-2])
        k = self._event_shape[0]
        z = linalg.solve_triangular(L.expand(*batch, k, k), diff.expand(*batch, k).unsqueeze(-1), upper=False)
        maha = (z.squeeze(-1) ** 2).sum(-1)
        return -0.5 * (k * math.log(2 * math.pi) + maha) - self._half_log_det()

    def entropy(self) -> Tensor:
        k = self._event_shape[0]
        h = 0.5 * k * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h.expand(*self._batch_shape) if self._batch_shape else h


def _broadcast_batch(a: tuple, b: tuple) -> tuple:
    from pyframe.ops._common import broadcast_shapes

    try:
        return tuple(broadcast_shapes(tuple(a), tuple(b)))
    except (ValueError, RuntimeError):
        raise ValueError(f"batch shapes {tuple(a)} and {tuple(b)} do not broadcast") from None


def _cholesky(m: Tensor, name: str) -> Tensor:
    try:
        return linalg.cholesky(m)
    except RuntimeError as e:
        raise ValueError(f"{name} must be positive definite: {e}") from None


def _precision_to_scale_tril(p: Tensor) -> Tensor:
    """torch's route: L of P flipped, inverted, transposed, without forming the covariance."""
    lf = _cholesky(_flip2(p), "precision_matrix")
    l_inv = _flip2(lf).transpose(-2, -1)
    k = p._shape[-1]
    ident = eye(k, dtype=p.dtype).expand(*p._shape)
    return linalg.solve_triangular(l_inv, ident, upper=False)


def _flip2(m: Tensor) -> Tensor:
    """``m`` reversed along its last two dims, as an index gather (differentiable)."""
    from pyframe.ops.creation import arange

    k = m._shape[-1]
    rev = arange(k - 1, -1, -1)
    return m.index_select(-1, rev).index_select(-2, rev)
