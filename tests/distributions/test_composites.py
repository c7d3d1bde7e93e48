"""MixtureSameFamily, expand of composites and of cached derived values, and expand on user subclasses, against
torch where torch defines the answer."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
from pyframe.distributions import (
    Categorical,
    Independent,
    LowRankMultivariateNormal,
    MixtureSameFamily,
    Normal,
)

RNG = np.random.default_rng(7)


def _mixture(lib, mix_batch=(2,)):
    logits = lib.tensor(RNG.normal(size=(*mix_batch, 3)) if mix_batch else RNG.normal(size=3))
    loc, scale = lib.tensor(RNG.normal(size=(2, 3, 4))), lib.tensor(RNG.uniform(0.5, 2, size=(2, 3, 4)))
    comp = lib.distributions.Independent(lib.distributions.Normal(loc, scale), 1)
    return lib.distributions.MixtureSameFamily(lib.distributions.Categorical(logits=logits), comp)


@pytest.mark.parametrize("mix_batch", [(2,), ()])
def test_mixture_matches_torch(mix_batch):
    torch = pytest.importorskip("torch")
    state = RNG.bit_generator.state
    p = _mixture(pf, mix_batch)
    RNG.bit_generator.state = state
    t = _mixture(torch, mix_batch)
    x = RNG.normal(size=(5, 2, 4))
    np.testing.assert_allclose(p.log_prob(pf.tensor(x)).numpy(), t.log_prob(torch.tensor(x)).numpy(), rtol=1e-10)
    for attr in ("mean", "variance"):
        np.testing.assert_allclose(getattr(p, attr).numpy(), getattr(t, attr).numpy(), rtol=1e-10)
    e = p.expand((6, 2))
    assert tuple(e.batch_shape) == (6, 2) and tuple(e.event_shape) == (4,)
    np.testing.assert_allclose(e.log_prob(pf.tensor(x[:1])).numpy(), t.expand((6, 2)).log_prob(torch.tensor(x[:1])))


def test_mixture_sample_picks_components_with_a_broadcast_mixture():
    """A mixture weight shared by the whole batch (batch shape ()) still draws every batch entry from its own
    components: here the components are far apart, so each draw's nearest component mean says which one it was."""
    pf.manual_seed(0)
    loc = pf.tensor([[-100.0, 0.0, 100.0], [1000.0, 2000.0, 3000.0]], dtype=pf.float64)
    gmm = MixtureSameFamily(Categorical(probs=pf.tensor([0.2, 0.3, 0.5])), Normal(loc, pf.ones(2, 3)))
    x = gmm.sample((4000,))
    assert tuple(x.shape) == (4000, 2)
    picked = (x.unsqueeze(-1) - loc).abs().argmin(-1).numpy()
    for row in range(2):
        freq = np.bincount(picked[:, row], minlength=3) / 4000
        np.testing.assert_allclose(freq, [0.2, 0.3, 0.5], atol=0.04)


def test_mixture_rejects_mismatched_components():
    with pytest.raises(ValueError, match="does not equal"):
        MixtureSameFamily(Categorical(logits=pf.zeros(2)), Normal(pf.zeros(3), pf.ones(3)))
    with pytest.raises(ValueError, match="Mixture distribution"):
        MixtureSameFamily(Normal(0.0, 1.0), Normal(pf.zeros(3), pf.ones(3)))


def test_expand_drops_cached_derived_values():
    """A derived value cached before expand (LowRank's variance) is recomputed at the new batch shape."""
    d = LowRankMultivariateNormal(pf.zeros(3), pf.ones(3, 1), pf.ones(3))
    _ = d.variance, d.scale_tril
    e = d.expand((5,))
    assert tuple(e.variance.shape) == (5, 3) and tuple(e.scale_tril.shape) == (5, 3, 3)
    assert tuple(e.rsample((2,)).shape) == (2, 5, 3)


def test_expand_of_a_subclass_keeps_its_type_and_attributes():
    class Shifted(Normal):
        def __init__(self, loc, scale, shift):
            super().__init__(loc + shift, scale)
            self.shift = shift

    d = Shifted(pf.zeros(2), pf.ones(2), 3.0)
    e = d.expand((4, 2))
    assert type(e) is Shifted and e.shift == 3.0 and tuple(e.loc.shape) == (4, 2)
    np.testing.assert_allclose(e.mean.numpy(), np.full((4, 2), 3.0))


def test_independent_expand_and_errors():
    base = Normal(pf.zeros(3, 2), pf.ones(3, 2))
    d = Independent(base, 1)
    e = d.expand((4, 3))
    assert tuple(e.batch_shape) == (4, 3) and tuple(e.base_dist.batch_shape) == (4, 3, 2)
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        Independent(base, 3)


def test_categorical_parameters_must_be_tensors():
    with pytest.raises(TypeError, match="`probs` must be a Tensor, got list"):
        Categorical(probs=[0.2, 0.8])
    with pytest.raises(ValueError, match="at least one-dimensional"):
        Categorical(logits=pf.tensor(0.3))
    with pytest.raises(ValueError, match="not both"):
        Categorical(probs=pf.ones(2), logits=pf.zeros(2))
