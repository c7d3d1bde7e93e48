"""Every family against torch on the same parameters: log_prob at torch's own draws, entropy, mean, variance,
mode, stddev, cdf and icdf where the family has them, shapes, support and expand; and the sample moments of
pyframe's own draws against the family's mean and variance (5 standard errors of 20,000 draws)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe as pf

torch = pytest.importorskip("torch")

D = np.float64


def _r(*shape, lo=0.2, hi=2.0, seed=0):
    return np.random.default_rng(seed + sum(shape)).uniform(lo, hi, shape).astype(D)


def _simplex(*shape, seed=1):
    x = _r(*shape, seed=seed)
    return x / x.sum(-1, keepdims=True)


def _spd(k, seed=2):
    a = np.random.default_rng(seed).normal(size=(k, k))
    return a @ a.T + k * np.eye(k)


# name -> (constructor args as numpy arrays or numbers, kwargs)
FAMILIES = {
    "Normal": ((_r(3, lo=-1), _r(3)), {}),
    "Uniform": ((_r(3, lo=-2, hi=-1), _r(3)), {}),
    "Bernoulli": ((), {"probs": _r(4, lo=0.1, hi=0.9)}),
    "Bernoulli-logits": ((), {"logits": _r(4, lo=-2)}),
    "Categorical": ((), {"probs": _simplex(2, 4)}),
    "Categorical-logits": ((), {"logits": _r(2, 4, lo=-2)}),
    "Beta": ((_r(3), _r(3, seed=5)), {}),
    "Gamma": ((_r(3), _r(3, seed=5)), {}),
    "Dirichlet": ((_r(2, 3),), {}),
    "Chi2": ((_r(3, lo=1, hi=5),), {}),
    "Exponential": ((_r(3),), {}),
    "Laplace": ((_r(3, lo=-1), _r(3)), {}),
    "LogNormal": ((_r(3, lo=-1), _r(3, hi=1)), {}),
    "Poisson": ((_r(3, hi=6),), {}),
    "Binomial": ((10,), {"probs": _r(3, lo=0.1, hi=0.9)}),
    "Binomial-logits": ((7,), {"logits": _r(3, lo=-1)}),
    "Geometric": ((), {"probs": _r(3, lo=0.2, hi=0.9)}),
    "OneHotCategorical": ((), {"probs": _simplex(2, 4)}),
    "Multinomial": ((6,), {"probs": _simplex(2, 4)}),
    "StudentT": ((_r(3, lo=2.5, hi=6), _r(3, lo=-1), _r(3)), {}),
    "Cauchy": ((_r(3, lo=-1), _r(3)), {}),
    "Gumbel": ((_r(3, lo=-1), _r(3)), {}),
    "HalfNormal": ((_r(3),), {}),
    "HalfCauchy": ((_r(3),), {}),
    "VonMises": ((_r(3, lo=-1), _r(3, hi=4)), {}),
    "Weibull": ((_r(3), _r(3, lo=0.8, hi=3)), {}),
    "Pareto": ((_r(3), _r(3, lo=2.5, hi=5)), {}),
    "ContinuousBernoulli": ((), {"probs": _r(3, lo=0.1, hi=0.9)}),
    "NegativeBinomial": ((_r(3, lo=1, hi=4),), {"probs": _r(3, lo=0.2, hi=0.7)}),
    "Kumaraswamy": ((_r(3, lo=1), _r(3, lo=1)), {}),
    "FisherSnedecor": ((_r(3, lo=5, hi=9), _r(3, lo=5, hi=9)), {}),
    "InverseGamma": ((_r(3, lo=3, hi=5), _r(3)), {}),
    "GeneralizedPareto": ((_r(3, lo=-1), _r(3), _r(3, lo=0.05, hi=0.2)), {}),
    "MultivariateNormal": ((_r(2, 3, lo=-1),), {"covariance_matrix": _spd(3)}),
    "MultivariateNormal-tril": ((_r(2, 3, lo=-1),), {"scale_tril": np.linalg.cholesky(_spd(3))}),
    "LowRankMultivariateNormal": ((_r(2, 3, lo=-1), _r(2, 3, 2, lo=-1, hi=1), _r(2, 3)), {}),
    "RelaxedBernoulli": ((np.array(0.7),), {"probs": _r(3, lo=0.2, hi=0.8)}),
    "RelaxedOneHotCategorical": ((np.array(0.7),), {"probs": _simplex(2, 3)}),
    "LogisticNormal": ((_r(2, 3, lo=-1), _r(2, 3)), {}),
    "Wishart": ((_r(2, lo=4, hi=6),), {"covariance_matrix": _spd(3)}),
    "Wishart-precision": ((np.array(5.5),), {"precision_matrix": np.linalg.inv(_spd(3))}),
    "LKJCholesky": ((3, _r(2, lo=0.5, hi=3)), {}),
}
NO_SAMPLE_MOMENTS = {"Cauchy", "HalfCauchy", "RelaxedBernoulli", "RelaxedOneHotCategorical", "LogisticNormal",
                     "VonMises", "Categorical", "Categorical-logits", "LKJCholesky"}  # fmt: skip


def _build(lib, name):
    args, kwargs = FAMILIES[name]
    cls = getattr(lib.distributions, name.split("-")[0])
    conv = lambda v: lib.tensor(v) if isinstance(v, np.ndarray) else v  # noqa: E731
    return cls(*map(conv, args), **{k: conv(v) for k, v in kwargs.items()})


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _same(a, b, what, rtol=1e-6, atol=1e-8):
    a, b = _np(a), _np(b)
    assert a.shape == b.shape, f"{what}: shape {a.shape} vs torch {b.shape}"
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def _try(fn):
    try:
        return fn(), None
    except (NotImplementedError, AttributeError) as e:
        return None, type(e)


@pytest.fixture(autouse=True)
def _double():
    torch.set_default_dtype(torch.float64)
    pf.set_default_dtype(pf.float64)
    yield
    torch.set_default_dtype(torch.float32)
    pf.set_default_dtype(pf.float32)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_matches_torch(name):
    torch.manual_seed(0)
    t, p = _build(torch, name), _build(pf, name)
    assert tuple(p.batch_shape) == tuple(t.batch_shape) and tuple(p.event_shape) == tuple(t.event_shape)
    assert repr(p.support) == repr(t.support)
    assert p.has_rsample == t.has_rsample and p.has_enumerate_support == t.has_enumerate_support
    assert {k: repr(v) for k, v in p.arg_constraints.items()} == {k: repr(v) for k, v in t.arg_constraints.items()}
    value = t.sample((5,))
    _same(p.log_prob(pf.tensor(value.numpy())), t.log_prob(value), f"{name}.log_prob")
    for attr in ("mean", "variance", "stddev", "mode"):
        tv, te = _try(lambda a=attr: getattr(t, a))
        pv, pe = _try(lambda a=attr: getattr(p, a))
        assert te == pe, f"{name}.{attr}: torch raises {te}, pyframe {pe}"
        if name == "Kumaraswamy" and attr == "mode":  # torch 2.13's formula is NaN for b > 1: the true mode
            a, b = (np.asarray(v) for v in FAMILIES[name][0])
            _same(pv, ((a - 1) / (a * b - 1)) ** (1 / a), "Kumaraswamy.mode")
        elif tv is not None:
            _same(pv, tv, f"{name}.{attr}")
    tv, te = _try(t.entropy)
    pv, pe = _try(p.entropy)
    assert te == pe, f"{name}.entropy: torch raises {te}, pyframe {pe}"
    if tv is not None:
        _same(pv, tv, f"{name}.entropy", rtol=1e-5)
    if t.has_enumerate_support:
        _same(p.enumerate_support(), t.enumerate_support(), f"{name}.enumerate_support")
    for fn in ("cdf", "icdf"):
        arg = value if fn == "cdf" else torch.rand(t.batch_shape, generator=torch.Generator().manual_seed(1))
        tv, te = _try(lambda f=fn, a=arg: getattr(t, f)(a))
        if te is None and tv is not None:
            _same(getattr(p, fn)(pf.tensor(arg.numpy())), tv, f"{name}.{fn}", rtol=1e-5)
    pe = p.expand((4, *p.batch_shape))
    assert tuple(pe.batch_shape) == (4, *t.batch_shape)
    v1 = value.unsqueeze(1)
    _same(pe.log_prob(pf.tensor(v1.numpy())), t.expand((4, *t.batch_shape)).log_prob(v1), f"{name} expanded")
    s = p.rsample((2,)) if p.has_rsample else p.sample((2,))
    assert tuple(s.shape) == (2, *t.batch_shape, *t.event_shape)
    assert s.dtype == pf.float64 or name.startswith("Categorical")


@pytest.mark.parametrize("name", sorted(set(FAMILIES) - NO_SAMPLE_MOMENTS))
def test_sample_moments(name):
    """The draws' mean within 5 standard errors (sqrt(var / n)) of the family's mean; the sample variance within
    25% of the family's variance (the heavier-tailed families here have finite fourth moments at these params)."""
    pf.manual_seed(3)
    p = _build(pf, name)
    n = 20000
    x = _np(p.sample((n,)))
    mean, var = _np(p.mean), _np(p.variance)
    assert np.all(np.abs(x.mean(0) - mean) <= 5 * np.sqrt(var / n) + 1e-12), (name, x.mean(0), mean)
    np.testing.assert_allclose(x.var(0), var, rtol=0.25, err_msg=name)
    assert bool(p.support.check(pf.tensor(x)).all()), f"{name}: a draw outside the support"


def _kl_pairs():
    from torch.distributions.kl import _KL_REGISTRY

    names = {n.split("-")[0]: n for n in sorted(FAMILIES, reverse=True)}
    return sorted({(names[p.__name__], names[q.__name__]) for p, q in _KL_REGISTRY
                   if p.__name__ in names and q.__name__ in names})  # fmt: skip


@pytest.mark.parametrize("pair", _kl_pairs(), ids="|".join)
def test_kl_matches_torch(pair):
    """Every pair torch's registry has among these families: the same value (inf included) and, where finite,
    the same gradient to the first distribution's parameters."""
    tp, tq = (_build(torch, n) for n in pair)
    try:
        expected = torch.distributions.kl_divergence(tp, tq)
    except (ValueError, RuntimeError, NotImplementedError) as e:
        with pytest.raises((ValueError, RuntimeError, NotImplementedError)):
            pf.distributions.kl_divergence(_build(pf, pair[0]), _build(pf, pair[1]))
        pytest.skip(f"torch raises for this pair at these shapes: {e}")
    got = pf.distributions.kl_divergence(_build(pf, pair[0]), _build(pf, pair[1]))
    _same(got, expected, f"KL{pair}", rtol=1e-5)


def test_kl_registry_dispatch_and_register():
    class MyNormal(pf.distributions.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), pf.distributions.Normal(1.0, 2.0)
    base = pf.distributions.kl_divergence(p, q)  # the Normal pair through the MRO
    assert base.item() == pytest.approx(math.log(2) + (1 + 1) / 8 - 0.5)

    @pf.distributions.register_kl(MyNormal, pf.distributions.Normal)
    def _kl_mine(p, q):
        return pf.tensor(42.0)

    assert pf.distributions.kl_divergence(p, q).item() == 42.0
    with pytest.raises(NotImplementedError, match="No KL"):
        pf.distributions.kl_divergence(pf.distributions.Categorical(pf.ones(2)), q)


def test_kumaraswamy_mode_is_the_density_maximum():
    """The mode is where the density peaks on a fine grid (torch 2.13's mode formula gives NaN for b > 1)."""
    a, b = pf.tensor([1.5, 2.0, 3.0]), pf.tensor([1.2, 2.0, 5.0])
    d = pf.distributions.Kumaraswamy(a, b)
    grid = pf.linspace(1e-4, 1 - 1e-4, 20001, dtype=pf.float64).unsqueeze(-1)
    peak = _np(grid.squeeze(-1))[_np(d.log_prob(grid)).argmax(0)]
    np.testing.assert_allclose(_np(d.mode), peak, atol=1e-4)
    assert bool(pf.distributions.Kumaraswamy(pf.tensor([0.5]), pf.tensor([2.0])).mode.isnan().all())


@pytest.mark.parametrize("name", ["Gamma", "Chi2", "InverseGamma"])
def test_gamma_family_cdf_gradient_is_the_density(name):
    """The cdf (regularised incomplete gamma) differentiated in the value gives the density back, and it runs
    from 0 to 1 over the support."""
    d = _build(pf, name)
    x = pf.tensor(_r(3, lo=0.3, hi=3.0, seed=4), requires_grad=True)
    d.cdf(x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), _np(d.log_prob(x.detach()).exp()), rtol=1e-9)
    ends = d.cdf(pf.tensor([[1e-300] * 3, [1e300] * 3]))
    np.testing.assert_allclose(_np(ends), [[0.0] * 3, [1.0] * 3], atol=1e-12)
