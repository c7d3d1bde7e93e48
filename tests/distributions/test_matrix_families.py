"""Wishart and LKJCholesky beyond the per-family comparison with torch: the Wishart KL against its closed form,
reparameterised draws, df validation, and the LKJ draws' marginal correlations against the LKJ law (torch 2.13's
LKJ sampler gives rows below the second a wrong Beta, so its draws are not the oracle here)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pyframe as pf
from pyframe.distributions import LKJCholesky, Wishart

RNG = np.random.default_rng(11)


def _spd(k, shift):
    a = RNG.normal(size=(2, k, k))
    return a @ a.transpose(0, 2, 1) + shift * np.eye(k)


def test_wishart_kl_matches_the_closed_form():
    special = pytest.importorskip("scipy.special")
    s1, s2, df1, df2 = _spd(3, 3.0), _spd(3, 2.0), np.array([4.5, 7.0]), np.array([5.0, 3.5])
    p = Wishart(pf.tensor(df1), covariance_matrix=pf.tensor(s1))
    q = Wishart(pf.tensor(df2), covariance_matrix=pf.tensor(s2))
    got = pf.distributions.kl_divergence(p, q).detach().numpy()

    def mvdigamma(x, k):
        return sum(special.digamma(x - i / 2) for i in range(k))

    want = [
        (n1 - n2) / 2 * mvdigamma(n1 / 2, 3) + special.multigammaln(n2 / 2, 3) - special.multigammaln(n1 / 2, 3)
        + n2 / 2 * (np.linalg.slogdet(b)[1] - np.linalg.slogdet(a)[1]) + n1 / 2 * (np.trace(np.linalg.solve(b, a)) - 3)
        for n1, n2, a, b in zip(df1, df2, s1, s2, strict=True)
    ]  # fmt: skip
    np.testing.assert_allclose(got, want, rtol=1e-9)


def test_wishart_rsample_is_reparameterised_and_checks_df():
    s = pf.tensor(_spd(3, 3.0)[0], requires_grad=True)
    df = pf.tensor(6.0, dtype=pf.float64, requires_grad=True)
    pf.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a well-conditioned draw warns of nothing
        x = Wishart(df, covariance_matrix=s).rsample((4,))
    x.sum().backward()
    assert s.grad is not None and df.grad is not None and bool(df.grad.isfinite())
    assert bool(pf.distributions.constraints.positive_definite.check(x.detach()).all())
    with pytest.raises(ValueError, match="greater than ndim - 1"):
        Wishart(pf.tensor(1.5), covariance_matrix=pf.eye(3))
    with pytest.raises(ValueError, match="Exactly one"):
        Wishart(pf.tensor(5.0))


@pytest.mark.parametrize(("dim", "eta"), [(3, 1.0), (4, 2.5)])
def test_lkj_draws_have_the_lkj_marginals(dim, eta):
    """Every off-diagonal correlation of LKJ(eta) in dimension d has (r + 1) / 2 ~ Beta(b, b), b = eta - 1 + d/2:
    mean 0 and variance 1 / (2b + 1), whatever its position."""
    pf.manual_seed(2)
    L = LKJCholesky(dim, pf.tensor(eta, dtype=pf.float64)).sample((40000,))
    assert bool(pf.distributions.constraints.corr_cholesky.check(L).all())
    c = (L @ L.mT).numpy()
    b = eta - 1 + dim / 2
    for i in range(1, dim):
        for j in range(i):
            r = c[:, i, j]
            assert abs(r.mean()) < 5 * np.sqrt(1 / (2 * b + 1) / r.size), (i, j, r.mean())
            assert abs(r.var() * (2 * b + 1) - 1) < 0.04, (i, j, r.var())


def test_lkj_validation():
    with pytest.raises(ValueError, match="greater than or equal to 2"):
        LKJCholesky(1)
    d = LKJCholesky(3, 2.0)
    with pytest.raises(ValueError, match="within the support"):
        d.log_prob(pf.eye(3) * 2)
    e = d.expand((5,))
    assert tuple(e.batch_shape) == (5,) and tuple(e.sample((2,)).shape) == (2, 5, 3, 3)
