"""The KL divergence registry: ``kl_divergence(p, q)`` and ``register_kl(P, Q)``.

Most pairs are not written out one by one. ``KL(p || q) = H(p, q) - H(p)``, and the cross-entropy ``H(p, q) =
-E_p[log q(X)]`` of each target family needs only a few expectations under ``p`` (its mean and variance,
``E[log X]``, a moment generating function ...) and whether ``p``'s support lies inside ``q``'s. So the module
has two tables: ``_EXPECT``, what each source family offers, and ``_CROSS``, each target's cross-entropy in terms
of those; a pair is registered by naming it in ``_PAIRS``. Pairs whose formula is not of that shape (the discrete
families, the multivariate normals, the composites) are written below the tables."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from pyframe import autograd, linalg, special
from pyframe import ops as T
from pyframe._aliases import diag_embed
from pyframe.distributions.continuous_bernoulli import ContinuousBernoulli
from pyframe.distributions.discrete import Bernoulli, Binomial, Categorical, Geometric, OneHotCategorical, Poisson
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.exp_family import ExponentialFamily
from pyframe.distributions.gamma_family import Beta, Dirichlet, Exponential, Gamma
from pyframe.distributions.independent import Independent
from pyframe.distributions.location_scale import Cauchy, Laplace, Normal, Uniform
from pyframe.distributions.lowrank_multivariate_normal import (
    LowRankMultivariateNormal,
    _batch_lowrank_logdet,
    _batch_lowrank_mahalanobis,
)
from pyframe.distributions.multivariate_normal import MultivariateNormal, _batch_mahalanobis
from pyframe.distributions.transformed_distribution import TransformedDistribution
from pyframe.distributions.transformed_families import Gumbel, HalfNormal, Pareto
from pyframe.distributions.utils import _sum_rightmost, euler_constant
from pyframe.nn import functional as F
from pyframe.tensor import Tensor

__all__ = ["register_kl", "kl_divergence"]

_KL = Callable[[Any, Any], Tensor]
_KL_REGISTRY: dict[tuple[type, type], _KL] = {}
_KL_MEMOIZE: dict[tuple[type, type], Any] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[_KL], _KL]:
    """Decorator registering ``fn(p, q)`` as ``KL(p || q)`` for ``p`` of type ``type_p`` and ``q`` of type
    ``type_q`` (subclasses included; the most specific registered pair wins).

    Example::

        @register_kl(Normal, Normal)
        def kl_normal_normal(p, q):
            ...
    """
    for t in (type_p, type_q):
        if not (isinstance(t, type) and issubclass(t, Distribution)):
            raise TypeError(f"register_kl takes Distribution subclasses, got {t!r}")

    def add(fn: _KL) -> _KL:
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn

    return add


def _lookup(type_p: type, type_q: type) -> Any:
    """The registered function for the most specific pair above ``(type_p, type_q)``: ranked by ``p``'s class
    first and, separately, by ``q``'s first; when the two rankings disagree the pair is ambiguous (a warning, and
    the ``p``-first choice)."""
    mro_p, mro_q = type_p.__mro__, type_q.__mro__
    matches = [(a, b) for a, b in _KL_REGISTRY if a in mro_p and b in mro_q]
    if not matches:
        return NotImplemented
    by_p = min(matches, key=lambda m: (mro_p.index(m[0]), mro_q.index(m[1])))
    by_q = min(matches, key=lambda m: (mro_q.index(m[1]), mro_p.index(m[0])))
    if _KL_REGISTRY[by_p] is not _KL_REGISTRY[by_q]:
        warnings.warn(
            f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). "
            f"Please register_kl({by_p[0].__name__}, {by_q[1].__name__})",
            RuntimeWarning,
            stacklevel=3,
        )
    return _KL_REGISTRY[by_p]


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    r"""The Kullback-Leibler divergence :math:`KL(p \| q) = \int p(x) \log \frac{p(x)}{q(x)} dx`, batched over
    the two distributions' broadcast batch shape; infinite where ``q`` rules out what ``p`` allows.

    Raises:
        NotImplementedError: when no formula is registered for the two types.
    """
    key = (type(p), type(q))
    if key not in _KL_MEMOIZE:
        _KL_MEMOIZE[key] = _lookup(*key)
    fn = _KL_MEMOIZE[key]
    if fn is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {type(p).__name__} and q type {type(q).__name__}"
        )
    return fn(p, q)


def _infinite(p: Distribution, q: Distribution) -> Tensor:
    return T.full(tuple(p.batch_shape), math.inf, dtype=p.mean.dtype)


def _inf_where(outside: Any, value: Tensor) -> Tensor:
    return T.where(outside, math.inf, value) if isinstance(outside, Tensor) else value


def _xlogx(x: Tensor) -> Tensor:
    return special.xlogy(x, x)


# ---- what each source family offers: support bounds and expectations under p ----------------------------------
def _uniform_log_mean(p: Uniform) -> Tensor:  # E[log X] = (h log h - h - l log l + l) / (h - l)
    return (_xlogx(p.high) - _xlogx(p.low)) / (p.high - p.low) - 1


def _uniform_log1m_mean(p: Uniform) -> Tensor:  # E[log(1 - X)]
    return (_xlogx(1 - p.low) - _xlogx(1 - p.high)) / (p.high - p.low) - 1


def _normal_abs_dev(p: Normal, c: Tensor) -> Tensor:  # E|X - c|
    d = p.loc - c
    return p.scale * math.sqrt(2 / math.pi) * T.exp(-0.5 * (d / p.scale) ** 2) + d * T.erf(d / (p.scale * math.sqrt(2)))


_EXPECT: dict[type, dict[str, Callable[..., Any]]] = {
    Beta: {
        "bounds": lambda p: (0.0, 1.0),
        "log": lambda p: p.concentration1.digamma() - (p.concentration1 + p.concentration0).digamma(),
        "log1m": lambda p: p.concentration0.digamma() - (p.concentration1 + p.concentration0).digamma(),
    },
    ContinuousBernoulli: {"bounds": lambda p: (0.0, 1.0)},
    Exponential: {
        "bounds": lambda p: (0.0, math.inf),
        "log": lambda p: -euler_constant - p.rate.log(),
        "mgf": lambda p, t: p.rate / (p.rate - t),
    },
    Gamma: {
        "bounds": lambda p: (0.0, math.inf),
        "log": lambda p: p.concentration.digamma() - p.rate.log(),
        "mgf": lambda p, t: (1 - t / p.rate).pow(-p.concentration),
    },
    Gumbel: {
        "bounds": lambda p: (-math.inf, math.inf),
        "mgf": lambda p, t: T.exp(p.loc * t + T.lgamma(1 - p.scale * t)),
    },
    Laplace: {
        "bounds": lambda p: (-math.inf, math.inf),
        "abs_dev": lambda p, c: (p.loc - c).abs() + p.scale * T.exp(-(p.loc - c).abs() / p.scale),
    },
    Normal: {
        "bounds": lambda p: (-math.inf, math.inf),
        "mgf": lambda p, t: T.exp(p.loc * t + 0.5 * (p.scale * t) ** 2),
        "abs_dev": _normal_abs_dev,
    },
    Pareto: {"bounds": lambda p: (p.scale, math.inf), "log": lambda p: p.scale.log() + p.alpha.reciprocal()},
    Uniform: {
        "bounds": lambda p: (p.low, p.high),
        "log": _uniform_log_mean,
        "log1m": _uniform_log1m_mean,
        "mgf": lambda p, t: (T.exp(t * p.high) - T.exp(t * p.low)) / (t * (p.high - p.low)),
    },
}


class _NotOffered(AttributeError):
    """A source family lacks an expectation a target needs: registered only for pairs whose supports always
    disagree (a real-valued ``p`` against a ``q`` on ``[0, 1]`` ...), where the divergence is infinite."""


class _Under:
    """The expectations of one ``p``: ``E.mean``, ``E.log`` ... read from ``_EXPECT`` (mean and variance from
    the distribution itself)."""

    def __init__(self, p: Distribution) -> None:
        self.p, self._table = p, _EXPECT[type(p)]

    def __getattr__(self, name: str) -> Any:
        if name in ("mean", "variance"):
            return getattr(self.p, name)
        if name not in self._table:
            raise _NotOffered(f"{type(self.p).__name__} offers no E[{name}]")
        return lambda *args: self._table[name](self.p, *args)

    def outside(self, low: Any, high: Any) -> Any:
        """Where ``p``'s support reaches below ``low`` or above ``high``: a bool tensor, or a Python bool when
        the bounds decide it whatever the parameters."""
        a, b = self._table["bounds"](self.p)
        below, above = a < low, b > high
        if isinstance(below, Tensor) and isinstance(above, Tensor):
            return below | above
        if isinstance(below, Tensor):
            return True if above else below
        return True if below else above


# ---- each target family's cross-entropy -E_p[log q(X)], and the support it needs -----------------------------
def _ce_normal(q: Normal, E: _Under) -> Tensor:
    return 0.5 * T.log(2 * math.pi * q.scale**2) + (E.variance + (E.mean - q.loc) ** 2) / (2 * q.scale**2)


def _ce_laplace(q: Laplace, E: _Under) -> Tensor:
    return T.log(2 * q.scale) + E.abs_dev(q.loc) / q.scale


def _ce_exponential(q: Exponential, E: _Under) -> Tensor:
    return q.rate * E.mean - q.rate.log()


def _ce_gamma(q: Gamma, E: _Under) -> Tensor:
    k, b = q.concentration, q.rate
    return k.lgamma() - k * b.log() - (k - 1) * E.log() + b * E.mean


def _ce_gumbel(q: Gumbel, E: _Under) -> Tensor:  # -log q = log s + z + exp(-z), z = (x - loc) / s
    return q.scale.log() + (E.mean - q.loc) / q.scale + T.exp(q.loc / q.scale) * E.mgf(-q.scale.reciprocal())


def _ce_beta(q: Beta, E: _Under) -> Tensor:
    a, b = q.concentration1, q.concentration0
    log_beta = a.lgamma() + b.lgamma() - (a + b).lgamma()
    return log_beta - (a - 1) * E.log() - (b - 1) * E.log1m()


def _ce_continuous_bernoulli(q: ContinuousBernoulli, E: _Under) -> Tensor:
    return -E.mean * q.logits - T.log1p(-q.probs) - q._log_norm()


def _ce_uniform(q: Uniform, E: _Under) -> Tensor:
    return T.log(q.high - q.low)


def _ce_pareto(q: Pareto, E: _Under) -> Tensor:
    return -q.alpha.log() - q.alpha * q.scale.log() + (q.alpha + 1) * E.log()


# target -> (cross-entropy, the interval q's support is, for the infinite cases)
_CROSS: dict[type, tuple[Callable[..., Tensor], Callable[[Any], tuple[Any, Any]]]] = {
    Normal: (_ce_normal, lambda q: (-math.inf, math.inf)),
    Laplace: (_ce_laplace, lambda q: (-math.inf, math.inf)),
    Exponential: (_ce_exponential, lambda q: (0.0, math.inf)),
    Gamma: (_ce_gamma, lambda q: (0.0, math.inf)),
    Gumbel: (_ce_gumbel, lambda q: (-math.inf, math.inf)),
    Beta: (_ce_beta, lambda q: (0.0, 1.0)),
    ContinuousBernoulli: (_ce_continuous_bernoulli, lambda q: (0.0, 1.0)),
    Uniform: (_ce_uniform, lambda q: (q.low, q.high)),
    Pareto: (_ce_pareto, lambda q: (q.scale, math.inf)),
}


def _kl_by_cross_entropy(p: Distribution, q: Distribution) -> Tensor:
    """``H(p, q) - H(p)``; infinite where ``p``'s support leaves ``q``'s."""
    E = _Under(p)
    ce, bounds = _CROSS[type(q)]
    outside = E.outside(*bounds(q))
    try:
        value = ce(q, E) - p.entropy()
    except _NotOffered:
        outside = True
    if outside is True:  # p reaches where q cannot, whatever the parameters
        return _infinite(p, q)
    return _inf_where(outside, value)


_PAIRS = """
    Beta: Beta ContinuousBernoulli Exponential Gamma Normal Pareto Uniform
    ContinuousBernoulli: ContinuousBernoulli Exponential Normal Pareto Uniform
    Exponential: Beta ContinuousBernoulli Exponential Gamma Gumbel Normal Pareto Uniform
    Gamma: Beta ContinuousBernoulli Exponential Gamma Gumbel Normal Pareto Uniform
    Gumbel: Beta ContinuousBernoulli Exponential Gamma Gumbel Normal Pareto Uniform
    Laplace: Beta ContinuousBernoulli Exponential Gamma Laplace Normal Pareto Uniform
    Normal: Beta ContinuousBernoulli Exponential Gamma Gumbel Laplace Pareto Uniform
    Pareto: Beta ContinuousBernoulli Exponential Gamma Normal Pareto Uniform
    Uniform: Beta ContinuousBernoulli Exponential Gamma Gumbel Normal Pareto Uniform
"""
_BY_NAME = {cls.__name__: cls for cls in (*_EXPECT, *_CROSS)}
for _row in _PAIRS.strip().splitlines():
    _source, _targets = _row.split(":")
    for _target in _targets.split():
        register_kl(_BY_NAME[_source.strip()], _BY_NAME[_target])(_kl_by_cross_entropy)


# ---- pairs written out -------------------------------------------------------------------------------------------
@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    ratio = (p.scale / q.scale) ** 2
    return 0.5 * (ratio + ((p.loc - q.loc) / q.scale) ** 2 - 1 - ratio.log())


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p: HalfNormal, q: HalfNormal) -> Tensor:
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p: Cauchy, q: Cauchy) -> Tensor:
    return T.log((p.scale + q.scale) ** 2 + (p.loc - q.loc) ** 2) - T.log(4 * p.scale * q.scale)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    one = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    zero = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    one = T.where(p.probs == 0, 0.0, T.where(q.probs == 0, math.inf, one))
    zero = T.where(p.probs == 1, 0.0, T.where(q.probs == 1, math.inf, zero))
    return one + zero


@register_kl(Bernoulli, Poisson)
def _kl_bernoulli_poisson(p: Bernoulli, q: Poisson) -> Tensor:
    return q.rate - p.probs * q.rate.log() - p.entropy()


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p: Binomial, q: Binomial) -> Tensor:
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return T.where(p.total_count > q.total_count, math.inf, kl)


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = T.where((q.probs == 0).expand_as(t), math.inf, t)
    return T.where((p.probs == 0).expand_as(t), 0.0, t).sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p: OneHotCategorical, q: OneHotCategorical) -> Tensor:
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p: Geometric, q: Geometric) -> Tensor:
    return -p.entropy() - T.log1p(-q.probs) / p.probs - q.logits


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p: Poisson, q: Poisson) -> Tensor:
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


register_kl(Poisson, Bernoulli)(_infinite)
register_kl(Poisson, Binomial)(_infinite)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p: Dirichlet, q: Dirichlet) -> Tensor:
    a, b = p.concentration, q.concentration
    a0, b0 = a.sum(-1), b.sum(-1)
    log_norms = a0.lgamma() - b0.lgamma() - (a.lgamma() - b.lgamma()).sum(-1)
    return log_norms + ((a - b) * (a.digamma() - a0.digamma().unsqueeze(-1))).sum(-1)


@register_kl(ExponentialFamily, ExponentialFamily)
def _kl_expfamily_expfamily(p: ExponentialFamily, q: ExponentialFamily) -> Tensor:
    """The Bregman divergence of the log-normaliser between the natural parameters."""
    if type(p) is not type(q):
        raise NotImplementedError(
            "The cross KL-divergence between different exponential families cannot be computed using Bregman "
            "divergences"
        )
    theta_p = [t.detach().requires_grad_() for t in p._natural_params]
    theta_q = q._natural_params
    f_p = p._log_normalizer(*theta_p)
    grads = autograd.grad(f_p.sum(), theta_p, create_graph=True)
    result = q._log_normalizer(*theta_q) - f_p
    batch_dims = len(T.broadcast_shapes(p.batch_shape, q.batch_shape))
    for tp, tq, g in zip(theta_p, theta_q, grads, strict=True):
        term = (tq - tp) * g  # summed over the parameter's own dimensions, not the batch's
        result = result - _sum_rightmost(term, term.dim() - batch_dims)
    return result


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p: TransformedDistribution, q: TransformedDistribution) -> Tensor:
    if p.transforms != q.transforms or p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)


# ---- Gaussians: 1/2 [log det Sq - log det Sp + tr(Sq^-1 Sp) + |d|^2_Sq - n] ---------------------------------------
def _sum_sq(x: Tensor) -> Tensor:
    """``tr(X X^T)`` over the last two dimensions."""
    return x.pow(2).sum((-2, -1))


def _same_events(p: Distribution, q: Distribution, what: str) -> int:
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {what} with different event shapes cannot be computed")
    return p.event_shape[0]


def _log_det_tril(L: Tensor) -> Tensor:
    return 2 * L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


def _lowrank_parts(q: LowRankMultivariateNormal) -> tuple[Tensor, Tensor, Tensor]:
    W, D = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    return W, D, _batch_lowrank_logdet(W, D, q._capacitance_tril)


def _woodbury_a(q: LowRankMultivariateNormal) -> Tensor:
    """``A = C^-1 W^T D^-1`` so that ``Sq^-1 = D^-1 - A^T A``."""
    W, D = q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag
    return linalg.solve_triangular(q._capacitance_tril, W.mT / D.unsqueeze(-2), upper=False)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    n = _same_events(p, q, "Multivariate Normals")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    batch = T.broadcast_shapes(Lp.shape[:-2], Lq.shape[:-2])
    trace = _sum_sq(linalg.solve_triangular(Lq.expand(batch + (n, n)), Lp.expand(batch + (n, n)), upper=False))
    m = _batch_mahalanobis(Lq, q.loc - p.loc)
    return 0.5 * (_log_det_tril(Lq) - _log_det_tril(Lp) + trace + m - n)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p: LowRankMultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    n = _same_events(p, q, "Low Rank Multivariate Normals")
    Wp, Dp, logdet_p = _lowrank_parts(p)
    Wq, Dq, logdet_q = _lowrank_parts(q)
    A = _woodbury_a(q)
    # tr(Sq^-1 Sp) with Sp = Wp Wp^T + Dp and Sq^-1 = Dq^-1 - A^T A
    trace = (Dp / Dq).sum(-1) + _sum_sq(Wp * Dq.rsqrt().unsqueeze(-1)) - _sum_sq(A * Dp.sqrt().unsqueeze(-2))
    trace = trace - _sum_sq(A @ Wp)
    m = _batch_lowrank_mahalanobis(Wq, Dq, q.loc - p.loc, q._capacitance_tril)
    return 0.5 * (logdet_q - logdet_p + trace + m - n)


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_mvn_lowrank(p: MultivariateNormal, q: LowRankMultivariateNormal) -> Tensor:
    n = _same_events(p, q, "(Low Rank) Multivariate Normals")
    Wq, Dq, logdet_q = _lowrank_parts(q)
    Lp = p._unbroadcasted_scale_tril
    trace = _sum_sq(Lp * Dq.rsqrt().unsqueeze(-1)) - _sum_sq(_woodbury_a(q) @ Lp)
    m = _batch_lowrank_mahalanobis(Wq, Dq, q.loc - p.loc, q._capacitance_tril)
    return 0.5 * (logdet_q - _log_det_tril(Lp) + trace + m - n)


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrank_mvn(p: LowRankMultivariateNormal, q: MultivariateNormal) -> Tensor:
    n = _same_events(p, q, "(Low Rank) Multivariate Normals")
    Wp, Dp, logdet_p = _lowrank_parts(p)
    Lq = q._unbroadcasted_scale_tril
    batch = T.broadcast_shapes(Lq.shape[:-2], Wp.shape[:-2])
    Lq = Lq.expand(batch + (n, n))
    trace = _sum_sq(linalg.solve_triangular(Lq, Wp.expand(batch + Wp.shape[-2:]), upper=False))
    trace = trace + _sum_sq(linalg.solve_triangular(Lq, diag_embed(Dp.sqrt()).expand(batch + (n, n)), upper=False))
    m = _batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    return 0.5 * (_log_det_tril(q._unbroadcasted_scale_tril) - logdet_p + trace + m - n)


def _document_pairs() -> None:
    rows = sorted(f"* ``{a.__name__}`` and ``{b.__name__}``" for a, b in _KL_REGISTRY)
    kl_divergence.__doc__ = (kl_divergence.__doc__ or "") + "\n    Registered pairs:\n\n    " + "\n    ".join(rows)


_document_pairs()
