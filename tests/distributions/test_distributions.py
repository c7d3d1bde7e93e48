"""pyframe.distributions against torch.distributions: log_prob, entropy, moments and their
gradients in float64; sample statistics; reparameterised gradients; argument validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe as pf
from pyframe.distributions import Bernoulli, Categorical, MultivariateNormal, Normal, Uniform

RNG = np.random.default_rng(0)
A = RNG.normal(size=(3, 3))
COV = A @ A.T + 3 * np.eye(3)
LOC3 = RNG.normal(size=(2, 3))


def _cases():
    """name -> (params as NumPy arrays, builder(lib, params), values to score)."""
    return {
        "Normal": (
            {"loc": RNG.normal(size=(4,)), "scale": RNG.uniform(0.5, 2, size=(4,))},
            lambda d, p: d.Normal(p["loc"], p["scale"]),
            RNG.normal(size=(5, 4)),
        ),
        "Uniform": (
            {"low": np.array([-1.0, 0.0, 2.0]), "high": np.array([1.0, 0.5, 5.0])},
            lambda d, p: d.Uniform(p["low"], p["high"]),
            np.array([[0.0, 0.25, 3.0], [-0.5, 0.1, 4.9]]),
        ),
        "Bernoulli-probs": (
            {"probs": np.array([0.1, 0.5, 0.9])},
            lambda d, p: d.Bernoulli(probs=p["probs"]),
            np.array([[0.0, 1.0, 1.0], [1.0, 0.0, 0.0]]),
        ),
        "Bernoulli-logits": (
            {"logits": np.array([-2.0, 0.3, 4.0])},
            lambda d, p: d.Bernoulli(logits=p["logits"]),
            np.array([1.0, 0.0, 1.0]),
        ),
        "Categorical-probs": (
            {"probs": RNG.uniform(0.1, 1, size=(2, 5))},
            lambda d, p: d.Categorical(probs=p["probs"]),
            np.array([[0, 4], [3, 1], [2, 2]]),
        ),
        "Categorical-logits": (
            {"logits": RNG.normal(size=(5,))},
            lambda d, p: d.Categorical(logits=p["logits"]),
            np.array([0, 1, 4, 4]),
        ),
        "MVN-cov": (
            {"loc": LOC3, "covariance_matrix": COV},
            lambda d, p: d.MultivariateNormal(p["loc"], covariance_matrix=p["covariance_matrix"]),
            RNG.normal(size=(4, 2, 3)),
        ),
        "MVN-tril": (
            {"loc": LOC3[0], "scale_tril": np.linalg.cholesky(COV)},
            lambda d, p: d.MultivariateNormal(p["loc"], scale_tril=p["scale_tril"]),
            RNG.normal(size=(3,)),
        ),
        "MVN-precision": (
            {"loc": LOC3[0], "precision_matrix": np.linalg.inv(COV)},
            lambda d, p: d.MultivariateNormal(p["loc"], precision_matrix=p["precision_matrix"]),
            RNG.normal(size=(2, 3)),
        ),
    }


CASES = _cases()


def _evaluate(lib, name):
    params, build, values = CASES[name]
    ps = {k: lib.tensor(v, dtype=lib.float64, requires_grad=True) for k, v in params.items()}
    dist = build(lib.distributions, ps)
    vdtype = lib.int64 if name.startswith("Categorical") else lib.float64
    lp = dist.log_prob(lib.tensor(values, dtype=vdtype))
    ent = dist.entropy()
    total = lp.sum() + ent.sum()
    total.backward()
    out = {"log_prob": lp, "entropy": ent, **{f"grad {k}": p.grad for k, p in ps.items()}}
    if not name.startswith("Categorical"):
        out["mean"], out["variance"] = dist.mean, dist.variance
    out["batch_shape"], out["event_shape"] = tuple(dist.batch_shape), tuple(dist.event_shape)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    ours, theirs = _evaluate(pf, name), _evaluate(torch, name)
    assert ours.keys() == theirs.keys()
    for key, value in ours.items():
        if isinstance(value, tuple):
            assert value == theirs[key], key
        else:
            np.testing.assert_allclose(value.detach().numpy(), theirs[key].detach().numpy(), rtol=1e-9, atol=1e-12,
                                       err_msg=key)  # fmt: skip


def test_sample_shapes_and_statistics():
    pf.manual_seed(0)
    n = Normal(pf.tensor([0.0, 3.0]), pf.tensor([1.0, 0.5]))
    s = n.sample((20000,))
    assert s.shape == (20000, 2) and not s.requires_grad
    np.testing.assert_allclose(s.numpy().mean(0), [0, 3], atol=0.03)
    np.testing.assert_allclose(s.numpy().std(0), [1, 0.5], rtol=0.03)
    u = Uniform(pf.tensor(-1.0), pf.tensor(3.0)).sample((10000,)).numpy()
    assert u.min() >= -1 and u.max() < 3 and abs(u.mean() - 1) < 0.05
    b = Bernoulli(probs=pf.tensor([0.2, 0.7])).sample((20000,)).numpy()
    assert set(np.unique(b)) <= {0.0, 1.0}
    np.testing.assert_allclose(b.mean(0), [0.2, 0.7], atol=0.02)
    c = Categorical(probs=pf.tensor([[0.0, 1.0, 3.0], [1.0, 0.0, 0.0]]))
    draws = c.sample((20000,))
    assert draws.shape == (20000, 2) and draws.dtype == pf.int64
    counts = np.bincount(draws.numpy()[:, 0], minlength=3) / 20000
    np.testing.assert_allclose(counts, [0, 0.25, 0.75], atol=0.02)
    assert (draws.numpy()[:, 1] == 0).all()
    mvn = MultivariateNormal(pf.tensor([1.0, -1.0, 0.0], dtype=pf.float64), pf.tensor(COV))
    x = mvn.sample((20000,)).numpy()
    np.testing.assert_allclose(np.cov(x.T), COV, atol=0.25)


def test_rsample_is_reparameterised():
    loc = pf.tensor([0.5, -1.0], requires_grad=True)
    scale = pf.tensor([2.0, 0.5], requires_grad=True)
    d = Normal(loc, scale)
    x = d.rsample((7,))
    x.sum().backward()
    np.testing.assert_allclose(loc.grad.numpy(), [7.0, 7.0])
    eps = (x.detach() - loc.detach()) / scale.detach()
    np.testing.assert_allclose(scale.grad.numpy(), eps.sum(0).numpy(), rtol=1e-5)
    low, high = pf.tensor(0.0, requires_grad=True), pf.tensor(2.0, requires_grad=True)
    Uniform(low, high).rsample((5,)).sum().backward()
    assert low.grad.item() + high.grad.item() == pytest.approx(5.0)
    assert Normal(0.0, 1.0).has_rsample and not Categorical(logits=pf.zeros(3)).has_rsample


def test_categorical_score_function_gradient():
    """The policy-gradient pattern: -log_prob(action) * reward backpropagates into the logits."""
    logits = pf.zeros(4, requires_grad=True)
    dist = Categorical(logits=logits)
    action = dist.sample()
    (-dist.log_prob(action) * 2.0).backward()
    expected = np.full(4, 0.5)
    expected[action.item()] -= 2.0
    np.testing.assert_allclose(logits.grad.numpy(), expected, atol=1e-6)


def test_validation():
    with pytest.raises(ValueError, match="scale.*GreaterThan"):
        Normal(0.0, -1.0)
    Normal(0.0, -1.0, validate_args=False)  # no check when asked
    with pytest.raises(ValueError, match="low"):
        Uniform(1.0, 0.0)
    with pytest.raises(ValueError, match="not both"):
        Bernoulli(probs=pf.tensor(0.5), logits=pf.tensor(0.0))
    with pytest.raises(ValueError, match="probs.*Interval"):
        Bernoulli(probs=pf.tensor([1.5]))
    with pytest.raises(ValueError, match="Simplex"):
        Categorical(probs=pf.tensor([-1.0, 2.0]))
    with pytest.raises(ValueError, match="within the support"):
        Bernoulli(probs=pf.tensor(0.3)).log_prob(pf.tensor(0.5))
    with pytest.raises(ValueError, match="within the support"):
        Categorical(logits=pf.zeros(3)).log_prob(pf.tensor(3))
    with pytest.raises(ValueError, match="within the support"):
        Uniform(0.0, 1.0).log_prob(pf.tensor(2.0))
    with pytest.raises(ValueError, match="Exactly one"):
        MultivariateNormal(pf.zeros(2))
    with pytest.raises(ValueError, match="positive definite|PositiveDefinite"):
        MultivariateNormal(pf.zeros(2), pf.tensor([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="event_shape"):
        MultivariateNormal(pf.zeros(2), pf.eye(2)).log_prob(pf.zeros(3))
    with pytest.raises(TypeError, match="sample_shape"):
        Normal(0.0, 1.0).sample(2.5)


def test_entropy_and_log_prob_scalars():
    d = Normal(0.0, 1.0)
    with pytest.raises(ValueError, match="must be a Tensor"):  # as torch, with validation on
        d.log_prob(0.0)
    assert d.log_prob(pf.tensor(0.0)).item() == pytest.approx(-0.5 * math.log(2 * math.pi), rel=1e-6)
    assert d.entropy().item() == pytest.approx(0.5 + 0.5 * math.log(2 * math.pi), rel=1e-6)
    assert Categorical(probs=pf.ones(4)).entropy().item() == pytest.approx(math.log(4), rel=1e-6)
    assert Bernoulli(probs=pf.tensor(0.5)).entropy().item() == pytest.approx(math.log(2), rel=1e-6)
    support = Categorical(logits=pf.zeros(2, 3)).enumerate_support()
    assert support.shape == (3, 2)


KL_CASES = {
    "Normal": (lambda d, t: (d.Normal(t([0.0, 1.0, -2.0]), t([1.0, 0.5, 2.0])), d.Normal(t([0.5, 1.0, 0.0]), t(1.5)))),
    "Uniform": (lambda d, t: (d.Uniform(t([0.0, -1.0]), t([1.0, 1.0])), d.Uniform(t([-1.0, 0.0]), t([2.0, 1.0])))),
    "Bernoulli": (lambda d, t: (d.Bernoulli(probs=t([0.0, 0.3, 1.0])), d.Bernoulli(logits=t([0.5, -1.0, 2.0])))),
    "Categorical": (
        lambda d, t: (
            d.Categorical(probs=t([[0.0, 0.4, 0.6], [0.2, 0.3, 0.5]])),
            d.Categorical(logits=t([0.1, 0.2, 0.3])),
        )
    ),
    "MVN": (
        lambda d, t: (
            d.MultivariateNormal(t(LOC3), covariance_matrix=t(COV)),
            d.MultivariateNormal(t(LOC3[1]), scale_tril=t(np.linalg.cholesky(COV + np.eye(3)))),
        )
    ),
}


@pytest.mark.parametrize("name", list(KL_CASES))
def test_kl_divergence_matches_torch(name):
    torch = pytest.importorskip("torch")

    def run(lib):
        leaves = []

        def t(v):
            x = lib.tensor(v, dtype=lib.float64, requires_grad=True)
            leaves.append(x)
            return x

        p, q = KL_CASES[name](lib.distributions, t)
        kl = lib.distributions.kl_divergence(p, q)
        finite = kl.detach().isfinite()
        kl[finite].sum().backward() if bool(finite.any()) else None
        return kl.detach().numpy(), [x.grad.numpy() if x.grad is not None else None for x in leaves]

    (ours, our_grads), (theirs, their_grads) = run(pf), run(torch)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)
    for a, b in zip(our_grads, their_grads, strict=True):
        if b is None or a is None:
            assert a is None or not np.any(a), "pyframe has a gradient where torch has none"
        else:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_kl_divergence_unknown_pair():
    with pytest.raises(NotImplementedError, match="No KL"):
        pf.distributions.kl_divergence(Categorical(pf.ones(2)), Normal(0.0, 1.0))


def test_independent_matches_torch():
    torch = pytest.importorskip("torch")
    x_np = RNG.normal(size=(4, 2, 3))

    def run(lib):
        loc = lib.tensor(LOC3, dtype=lib.float64, requires_grad=True)
        d = lib.distributions
        p = d.Independent(d.Normal(loc, lib.ones(2, 3, dtype=lib.float64)), 1)
        q = d.Independent(d.Normal(lib.zeros(3, dtype=lib.float64), 2.0 * lib.ones(3, dtype=lib.float64)), 1)
        lp, ent, kl = p.log_prob(lib.tensor(x_np, dtype=lib.float64)), p.entropy(), d.kl_divergence(p, q)
        (lp.sum() + ent.sum() + kl.sum()).backward()
        assert tuple(p.batch_shape) == (2,) and tuple(p.event_shape) == (3,) and p.rsample((5,)).shape == (5, 2, 3)
        return [t.detach().numpy() for t in (lp, ent, kl, loc.grad)]

    for a, b in zip(run(pf), run(torch), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        pf.distributions.Independent(Normal(pf.zeros(3), pf.ones(3)), 2)


@pytest.mark.parametrize("logits", [[-math.inf, -math.inf], [math.inf, 0.0], [math.nan, 0.0]])
def test_categorical_validation_refuses_logits_that_normalize_to_nan(logits):
    with pytest.raises(ValueError, match="logits"):
        Categorical(logits=pf.tensor(logits), validate_args=True)
    assert Categorical(logits=pf.tensor([-math.inf, 0.0]), validate_args=True).probs.tolist() == [0.0, 1.0]


def test_real_support_takes_infinities_not_nan():
    d = Normal(0.0, 1.0, validate_args=True)
    assert d.log_prob(pf.tensor(math.inf)).item() == -math.inf  # torch's constraints.real
    with pytest.raises(ValueError):
        d.log_prob(pf.tensor(math.nan))
