"""Rprop: torch's trajectories step for step over 100 steps (float64 to rounding, float32 closely), on a
matrix and a vector, and its state_dict round trip."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
from tests.optim.test_adaptive import _grad, _run

CASES = [{}, {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2)}, {"maximize": True}]


@pytest.mark.parametrize("kwargs", CASES)
@pytest.mark.parametrize("shape", [(7, 5), (6,)])
def test_matches_torch_step_for_step(kwargs, shape):
    torch = pytest.importorskip("torch")
    init = np.random.default_rng(0).normal(size=shape)
    for dt, tdt, rtol, atol in ((pf.float64, torch.float64, 1e-10, 1e-12), (pf.float32, torch.float32, 2e-4, 2e-5)):
        ours, opt = _run(pf, "Rprop", kwargs, init, dt)
        theirs, topt = _run(torch, "Rprop", kwargs, init, tdt)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)
        assert sorted(opt.state_dict()["state"][0]) == sorted(topt.state_dict()["state"][0])


def test_state_dict_round_trip_continues_the_run():
    init = np.linspace(-1, 1, 12).reshape(3, 4)
    straight, _ = _run(pf, "Rprop", {}, init, pf.float64, steps=20)
    half, opt = _run(pf, "Rprop", {}, init, pf.float64, steps=10)
    p2 = half.detach().clone().requires_grad_()
    opt2 = pf.optim.Rprop([p2])
    opt2.load_state_dict(opt.state_dict())
    for step in range(10, 20):
        p2.grad = pf.tensor(_grad(p2.detach().numpy(), step), dtype=pf.float64)
        opt2.step()
    np.testing.assert_allclose(p2.detach().numpy(), straight.detach().numpy(), rtol=1e-12)
