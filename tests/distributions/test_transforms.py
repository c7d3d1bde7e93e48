"""Transforms, TransformedDistribution, constraints and biject_to against torch on the same inputs."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).normal(size=(4, 3))
POS = np.abs(X) + 0.1
UNIT = 1 / (1 + np.exp(-X))

# name -> (builder(lib) -> transform, input)
TRANSFORMS = {
    "Exp": (lambda d: d.ExpTransform(), X),
    "Affine": (lambda d: d.AffineTransform(0.5, 2.0), X),
    "Affine-neg": (lambda d: d.AffineTransform(1.0, -3.0), X),
    "Sigmoid": (lambda d: d.SigmoidTransform(), X),
    "Tanh": (lambda d: d.TanhTransform(), X * 0.5),
    "Softmax": (lambda d: d.SoftmaxTransform(), X),
    "StickBreaking": (lambda d: d.StickBreakingTransform(), X),
    "Power": (lambda d: d.PowerTransform(2.5), POS),
    "Abs": (lambda d: d.AbsTransform(), X),
    "Softplus": (lambda d: d.SoftplusTransform(), X),
    "Exp.inv": (lambda d: d.ExpTransform().inv, POS),
    "Sigmoid.inv": (lambda d: d.SigmoidTransform().inv, UNIT),
    "Compose": (lambda d: d.ComposeTransform([d.AffineTransform(0.3, 1.5), d.SigmoidTransform()]), X),
    "Compose.inv": (lambda d: d.ComposeTransform([d.ExpTransform(), d.AffineTransform(1.0, 2.0)]).inv, POS + 1),
    "Independent": (lambda d: d.IndependentTransform(d.ExpTransform(), 1), X),
    "Reshape": (lambda d: d.ReshapeTransform((3,), (3, 1)), X),
    "LowerCholesky": (lambda d: d.LowerCholeskyTransform(), np.stack([X[:3]] * 2)),
    "PositiveDefinite": (lambda d: d.PositiveDefiniteTransform(), np.stack([X[:3]] * 2)),
    "Affine-event": (lambda d: d.AffineTransform(0.5, 2.0, event_dim=1), X),
    "CorrCholesky": (lambda d: d.CorrCholeskyTransform(), X),
    "Cat": (lambda d: d.CatTransform([d.ExpTransform(), d.AffineTransform(0.0, 2.0)], dim=0, lengths=[2, 2]), X),
    "Stack": (lambda d: d.StackTransform([d.ExpTransform(), d.SigmoidTransform(), d.TanhTransform()], dim=1), X),
}


def _np(t):
    return t.detach().numpy()


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_transform_matches_torch(name):
    build, x = TRANSFORMS[name]
    tt, pt = build(torch.distributions.transforms), build(pf.distributions.transforms)
    tx, px = torch.tensor(x), pf.tensor(x)
    ty, py = tt(tx), pt(px)
    np.testing.assert_allclose(_np(py), _np(ty), rtol=1e-6, atol=1e-9, err_msg=f"{name} forward")
    if name != "Abs":  # |x| is not injective: torch's inverse is the identity on the codomain
        np.testing.assert_allclose(_np(pt.inv(py)), _np(tt.inv(ty)), rtol=1e-6, atol=1e-9, err_msg=name)
    if name not in (
        "Abs",
        "Reshape",
        "LowerCholesky",
        "Softmax",
        "PositiveDefinite",
    ):  # no log|det J| in torch for these
        tj, pj = tt.log_abs_det_jacobian(tx, ty), pt.log_abs_det_jacobian(px, py)
        np.testing.assert_allclose(_np(pj), _np(tj), rtol=1e-6, atol=1e-9, err_msg=f"{name} log|det J|")
    assert repr(pt.domain) == repr(tt.domain) and repr(pt.codomain) == repr(tt.codomain)
    assert pt.bijective == tt.bijective and pt.sign == tt.sign if tt.bijective and name in ("Exp", "Affine") else 1
    assert type(pt.inv.inv) is type(pt)
    assert pt.forward_shape((4, 3)) == tt.forward_shape((4, 3)) or name in (
        "LowerCholesky",
        "Cat",
        "Stack",
        "PositiveDefinite",
    )
    cached = pt.with_cache(1)
    assert cached == pt or name in ("Compose", "Compose.inv", "Cat", "Stack", "Independent", "Reshape", "CorrCholesky")
    if pt.bijective:
        y = cached(px)
        assert cached.inv(y) is px  # the cache answers the inverse of the last forward


def test_transform_cache_and_equality():
    t = pf.distributions.transforms.ExpTransform(cache_size=1)
    x = pf.tensor([0.5, 1.0])
    y = t(x)
    assert t.inv(y) is x  # the cached input comes back, as torch
    assert pf.distributions.transforms.ExpTransform() == pf.distributions.transforms.ExpTransform()
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        pf.distributions.transforms.ExpTransform(cache_size=2)


def test_transformed_distribution_matches_torch():
    def build(d):
        base = d.distributions.Normal(d.tensor([0.0, 0.5], dtype=d.float64), d.tensor([1.0, 2.0], dtype=d.float64))
        tr = [d.distributions.transforms.AffineTransform(1.0, 3.0), d.distributions.transforms.SigmoidTransform()]
        return d.distributions.TransformedDistribution(base, tr)

    t, p = build(torch), build(pf)
    v = t.sample((6,))
    np.testing.assert_allclose(_np(p.log_prob(pf.tensor(v.numpy()))), _np(t.log_prob(v)), rtol=1e-6)
    np.testing.assert_allclose(_np(p.cdf(pf.tensor(v.numpy()))), _np(t.cdf(v)), rtol=1e-6)
    assert repr(p.support) == repr(t.support) and p.has_rsample
    loc = pf.tensor([0.0, 0.0], requires_grad=True)
    base = pf.distributions.Normal(loc, 1.0)
    d = pf.distributions.TransformedDistribution(base, [pf.distributions.transforms.ExpTransform()])
    s = d.rsample((100,))
    s.sum().backward()  # the reparameterised path reaches loc
    assert loc.grad is not None and bool((loc.grad > 0).all())
    assert tuple(d.expand((3, 2)).batch_shape) == (3, 2)


def test_lognormal_is_transformed_normal():
    d = pf.distributions.LogNormal(pf.tensor(0.3), pf.tensor(0.7))
    assert isinstance(d, pf.distributions.TransformedDistribution)
    assert isinstance(d.transforms[0], pf.distributions.transforms.ExpTransform)


@pytest.mark.parametrize("cname", ["real", "positive", "simplex", "unit_interval", "corr_cholesky", "real_vector"])
def test_biject_to_matches_torch(cname):
    tc, pc = getattr(torch.distributions.constraints, cname), getattr(pf.distributions.constraints, cname)
    tt, pt = torch.distributions.biject_to(tc), pf.distributions.biject_to(pc)
    x = X[:, :3] if cname == "corr_cholesky" else X
    ty, py = tt(torch.tensor(x)), pt(pf.tensor(x))
    np.testing.assert_allclose(_np(py), _np(ty), rtol=1e-6, atol=1e-9)
    assert bool(pc.check(py).all())
    assert type(pf.distributions.transform_to(pc)).__name__ == type(torch.distributions.transform_to(tc)).__name__


def test_constraints_check_and_repr():
    c = pf.distributions.constraints
    assert repr(c.interval(0.0, 1.0)) == "Interval(lower_bound=0.0, upper_bound=1.0)"
    assert c.positive.check(pf.tensor([1.0, -1.0, 0.0])).tolist() == [True, False, False]
    assert c.simplex.check(pf.tensor([[0.5, 0.5], [0.6, 0.6]])).tolist() == [True, False]
    assert c.integer_interval(0, 3).check(pf.tensor([0.0, 3.0, 1.5])).tolist() == [True, True, False]
    assert c.independent(c.real, 1).event_dim == 1 and not c.real.is_discrete and c.boolean.is_discrete


def test_validate_args_errors_match_torch():
    with pytest.raises(ValueError, match=r"Expected parameter concentration .* GreaterThan\(lower_bound=0.0\)"):
        pf.distributions.Gamma(pf.tensor([-1.0]), pf.tensor([1.0]))
    with pytest.raises(ValueError, match="within the support"):
        pf.distributions.Beta(pf.tensor(2.0), pf.tensor(2.0)).log_prob(pf.tensor(1.5))
    pf.distributions.Gamma(pf.tensor([-1.0]), pf.tensor([1.0]), validate_args=False)


def test_cumulative_distribution_transform_matches_torch():
    tt = torch.distributions.transforms.CumulativeDistributionTransform(torch.distributions.Normal(0.5, 2.0))
    pt = pf.distributions.transforms.CumulativeDistributionTransform(pf.distributions.Normal(0.5, 2.0))
    tx, px = torch.tensor(X), pf.tensor(X)
    np.testing.assert_allclose(_np(pt(px)), _np(tt(tx)), rtol=1e-12)
    np.testing.assert_allclose(_np(pt.inv(pt(px))), X, rtol=1e-5, atol=1e-6)  # float32 parameters
    np.testing.assert_allclose(_np(pt.log_abs_det_jacobian(px, pt(px))), _np(tt.log_abs_det_jacobian(tx, tt(tx))))
    assert repr(pt.domain) == repr(tt.domain) and repr(pt.codomain) == repr(tt.codomain) and pt.sign == 1
