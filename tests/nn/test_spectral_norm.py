"""The hook form of spectral normalization (nn.utils.spectral_norm / remove_spectral_norm) against torch: the
state_dict layout, the power iteration's vectors step by step, outputs and gradients in training and eval mode,
the transposed convolutions' dim, removal and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn

torch = pytest.importorskip("torch")


def _twins(build, shapes):
    rng = np.random.default_rng(0)
    t, p = torch.nn.utils.spectral_norm(build(torch.nn)), nn.utils.spectral_norm(build(nn))
    state = {}
    for k, v in t.state_dict().items():
        value = rng.standard_normal(tuple(v.shape)).astype(np.float32)
        if k.endswith(("_u", "_v")):
            value /= np.linalg.norm(value)
        state[k] = value
    t.load_state_dict({k: torch.tensor(v) for k, v in state.items()})
    p.load_state_dict({k: pf.tensor(v) for k, v in state.items()})
    return t, p


@pytest.mark.parametrize("kind", ["linear", "conv", "convtranspose"])
def test_spectral_norm_hook_matches_torch(kind):
    build, shape = {
        "linear": (lambda n: n.Linear(6, 4), (3, 6)),
        "conv": (lambda n: n.Conv2d(3, 5, 3), (2, 3, 5, 5)),
        "convtranspose": (lambda n: n.ConvTranspose2d(3, 5, 3), (2, 3, 4, 4)),
    }[kind]
    t, p = _twins(build, shape)
    assert sorted(p.state_dict()) == sorted(t.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert [n for n, _ in p.named_parameters()] == [n for n, _ in t.named_parameters()]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    for _ in range(3):  # each training call takes one power-iteration step
        to, po = t(torch.tensor(x)), p(pf.tensor(x))
        np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    for name in ("weight_u", "weight_v"):
        np.testing.assert_allclose(getattr(p, name).numpy(), getattr(t, name).numpy(), rtol=1e-4, atol=1e-6)
    to.square().sum().backward()
    po.square().sum().backward()
    np.testing.assert_allclose(p.weight_orig.grad.numpy(), t.weight_orig.grad.numpy(), rtol=1e-3, atol=1e-5)
    t.eval()
    p.eval()
    u = p.weight_u.numpy().copy()
    np.testing.assert_allclose(p(pf.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(), rtol=1e-4,
                               atol=1e-5)  # fmt: skip
    assert (p.weight_u.numpy() == u).all()  # no step in eval mode
    torch.nn.utils.remove_spectral_norm(t)
    nn.utils.remove_spectral_norm(p)
    assert sorted(p.state_dict()) == sorted(t.state_dict()) == ["bias", "weight"]
    assert type(p.weight) is nn.Parameter
    np.testing.assert_allclose(p.weight.detach().numpy(), t.weight.detach().numpy(), rtol=1e-4, atol=1e-6)


def test_spectral_norm_sigma_is_the_largest_singular_value_after_iterations():
    pf.manual_seed(0)
    m = nn.utils.spectral_norm(nn.Linear(8, 5), n_power_iterations=50)
    m(pf.ones(1, 8))
    sigma = np.linalg.svd(m.weight.detach().numpy(), compute_uv=False)
    assert abs(sigma[0] - 1.0) < 1e-4


def test_spectral_norm_errors():
    m = nn.utils.spectral_norm(nn.Linear(3, 2))
    with pytest.raises(RuntimeError, match="Cannot register two spectral_norm hooks"):
        nn.utils.spectral_norm(m)
    with pytest.raises(ValueError, match="n_power_iterations to be positive"):
        nn.utils.spectral_norm(nn.Linear(3, 2), n_power_iterations=0)
    with pytest.raises(ValueError, match="parameter `bias` is None"):
        nn.utils.spectral_norm(nn.Linear(3, 2, bias=False), name="bias")
    with pytest.raises(ValueError, match="uninitialized parameters"):
        nn.utils.spectral_norm(nn.LazyLinear(2))
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(nn.Linear(3, 2))
