"""Muon: the Newton–Schulz orthogonalization (bfloat16, tall and wide), torch's trajectories step for step, its
argument checks and its state_dict round trip."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
from pyframe.optim.muon import zeropower_via_newtonschulz
from tests.optim.test_adaptive import _grad, _run

CASES = [
    {},
    {"lr": 0.02, "nesterov": False, "weight_decay": 0.0},
    {"lr": 0.01, "momentum": 0.5, "adjust_lr_fn": "match_rms_adamw", "ns_steps": 3},
    {"ns_coefficients": (3.0, -3.2, 1.2), "eps": 1e-3, "adjust_lr_fn": "original"},
]


@pytest.mark.parametrize("shape", [(3, 6), (7, 5), (4, 4)])
def test_newton_schulz_orthogonalizes_in_bfloat16(shape):
    g = pf.tensor(np.random.default_rng(1).normal(size=shape))
    x = zeropower_via_newtonschulz(g, (3.4445, -4.7750, 2.0315), 5, 1e-7)
    assert x.dtype == pf.bfloat16 and x.shape == shape
    # the quintic does not converge to U V^T but to U S' V^T, S' roughly in (0.5, 1.5)
    s = np.linalg.svd(np.array(x.float().tolist()), compute_uv=False)
    assert s.min() > 0.4 and s.max() < 1.6, s
    # the singular vectors are G's: the update points where the gradient does
    assert (x.float() * g.float()).sum().item() > 0


def test_newton_schulz_argument_checks():
    g = pf.ones(2, 2)
    with pytest.raises(ValueError, match="less than 100"):
        zeropower_via_newtonschulz(g, (1.0, 0.0, 0.0), 100, 1e-7)
    with pytest.raises(ValueError, match="2D"):
        zeropower_via_newtonschulz(pf.ones(3), (1.0, 0.0, 0.0), 5, 1e-7)
    with pytest.raises(ValueError, match="exactly 3"):
        zeropower_via_newtonschulz(g, (1.0, 0.0), 5, 1e-7)


@pytest.mark.parametrize("kwargs", CASES)
@pytest.mark.parametrize("shape", [(7, 5), (3, 6)])
def test_matches_torch_step_for_step(kwargs, shape):
    torch = pytest.importorskip("torch")
    init = np.random.default_rng(0).normal(size=shape)
    # bfloat16 products are exact in float32 and these short sums too, so each step's update rounds as torch's
    for dt, tdt, rtol, atol in ((pf.float64, torch.float64, 1e-10, 1e-12), (pf.float32, torch.float32, 1e-5, 1e-6)):
        ours, opt = _run(pf, "Muon", kwargs, init, dt, steps=20)
        theirs, topt = _run(torch, "Muon", kwargs, init, tdt, steps=20)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)
        assert sorted(opt.state_dict()["state"][0]) == sorted(topt.state_dict()["state"][0]) == ["momentum_buffer"]


def test_argument_checks_as_torch():
    w = pf.zeros(2, 3, requires_grad=True)
    with pytest.raises(ValueError, match="2D parameters"):
        pf.optim.Muon([w, pf.zeros(3, requires_grad=True)])
    for bad in ({"lr": -1.0}, {"momentum": -0.1}, {"weight_decay": -1.0}, {"adjust_lr_fn": "other"}):
        with pytest.raises(ValueError):
            pf.optim.Muon([w], **bad)
    with pytest.raises(ValueError, match="1-element"):
        pf.optim.Muon([w], lr=pf.tensor([0.1, 0.2]))


def test_skips_parameters_without_grad_and_keeps_no_state_for_them():
    a, b = pf.ones(2, 3, requires_grad=True), pf.ones(3, 2, requires_grad=True)
    opt = pf.optim.Muon([a, b], lr=0.1)
    a.grad = pf.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    opt.step()
    assert b.tolist() == [[1.0, 1.0]] * 3 and b not in opt.state
    assert a.tolist() != [[1.0] * 3] * 2


def test_state_dict_round_trip_continues_the_run():
    init = np.linspace(-1, 1, 12).reshape(3, 4)
    straight, _ = _run(pf, "Muon", {"lr": 0.05}, init, pf.float64, steps=12)
    half, opt = _run(pf, "Muon", {"lr": 0.05}, init, pf.float64, steps=6)
    p2 = half.detach().clone().requires_grad_()
    opt2 = pf.optim.Muon([p2], lr=0.05)
    opt2.load_state_dict(opt.state_dict())
    for step in range(6, 12):
        p2.grad = pf.tensor(_grad(p2.detach().numpy(), step), dtype=pf.float64)
        opt2.step()
    np.testing.assert_array_equal(p2.detach().numpy(), straight.detach().numpy())
