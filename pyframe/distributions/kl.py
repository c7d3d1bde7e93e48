"""``kl_divergence(p, q)`` and ``register_kl``: closed forms for pairs of the same family, as
torch.distributions.kl (same formulas, so values and gradients agree)."""

from __future__ import annotations

import math
from collections.abc import Callable

from pyframe import linalg
from pyframe.distributions.continuous import MultivariateNormal, Normal, Uniform, _broadcast_batch, _diag
from pyframe.distributions.discrete import Bernoulli, Categorical
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.independent import Independent, _sum_rightmost
from pyframe.nn import functional as F
from pyframe.ops.elementwise import where
from pyframe.tensor import Tensor

__all__ = ["kl_divergence", "register_kl"]

_KL: dict[tuple[type, type], Callable] = {}


def register_kl(type_p: type, type_q: type):
    """Same as torch.distributions.register_kl: a decorator registering ``fn(p, q)``."""
    if not (isinstance(type_p, type) and issubclass(type_p, Distribution)):
        raise TypeError(f"register_kl expects Distribution subclasses, got {type_p!r}")
    if not (isinstance(type_q, type) and issubclass(type_q, Distribution)):
        raise TypeError(f"register_kl expects Distribution subclasses, got {type_q!r}")

    def decorator(fn: Callable) -> Callable:
        _KL[type_p, type_q] = fn
        return fn

    return decorator


def kl_divergence(p: Distribution, q: Distribution) -> Tensor:
    """Same as torch.distributions.kl_divergence: KL(p || q), batched over the batch shape.
    The most specific registered pair along both classes' MRO is used."""
    for tp in type(p).__mro__:
        for tq in type(q).__mro__:
            fn = _KL.get((tp, tq))
            if fn is not None:
                return fn(p, q)
    raise NotImplementedError(f"No KL(p || q) is implemented for p = {type(p).__name__}, q = {type(q).__name__}")


def _inf_where(mask: Tensor, t: Tensor) -> Tensor:
    return where(mask, math.inf, t)


@register_kl(Normal, Normal)
def _kl_normal_normal(p: Normal, q: Normal) -> Tensor:
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p: Uniform, q: Uniform) -> Tensor:
    result = ((q.high - q.low) / (p.high - p.low)).log()
    return _inf_where((q.low > p.low).logical_or(q.high < p.high), result)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p: Bernoulli, q: Bernoulli) -> Tensor:
    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = where(p.probs == 0, 0.0, _inf_where(q.probs == 0, t1))
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = where(p.probs == 1, 0.0, _inf_where(q.probs == 1, t2))
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p: Categorical, q: Categorical) -> Tensor:
    t = p.probs * (p.logits - q.logits)
    t = _inf_where((q.probs == 0).expand_as(t), t)
    t = where((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Tensor:
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Multivariate Normals with different event shapes cannot be computed"
        )
    lp, lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = _diag(lq).log().sum(-1) - _diag(lp).log().sum(-1)
    batch = _broadcast_batch(_broadcast_batch(lq._shape[:-2], lp._shape[:-2]), q.loc._shape[:-1])
    batch = _broadcast_batch(batch, p.loc._shape[:-1])
    n = p.event_shape[0]
    solved = linalg.solve_triangular(lq.expand(*batch, n, n), lp.expand(*batch, n, n), upper=False)
    term2 = (solved**2).sum((-2, -1))
    diff = (q.loc - p.loc).expand(*batch, n).unsqueeze(-1)
    term3 = (linalg.solve_triangular(lq.expand(*batch, n, n), diff, upper=False) ** 2).sum((-2, -1))
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p: Independent, q: Independent) -> Tensor:
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("KL between Independent distributions with different reinterpreted_batch_ndims")
    return _sum_rightmost(kl_divergence(p.base_dist, q.base_dist), p.reinterpreted_batch_ndims)
