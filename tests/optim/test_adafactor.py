"""Adafactor: torch's trajectories step for step (40 steps in float64 to rounding, 10 in float32 closely), on a
matrix and a vector, and its state_dict round trip."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
from tests.optim.test_adaptive import _grad, _run

CASES = [{}, {"lr": 0.05, "beta2_decay": -0.5, "d": 2.0, "weight_decay": 0.1}, {"maximize": True, "eps": (1e-20, 1e-2)}]


@pytest.mark.parametrize("kwargs", CASES)
@pytest.mark.parametrize("shape", [(7, 5), (6,)])
def test_matches_torch_step_for_step(kwargs, shape):
    torch = pytest.importorskip("torch")
    init = np.random.default_rng(0).normal(size=shape)
    # shorter runs: the update's norms (sums) differ from torch's in the last bits, and the clipping by
    # their ratio amplifies that exponentially on this loss (float64: 1e-16 at 40 steps, 1e-6 at 100)
    for dt, tdt, rtol, atol, steps in ((pf.float64, torch.float64, 1e-10, 1e-12, 40),
                                       (pf.float32, torch.float32, 2e-4, 2e-5, 10)):  # fmt: skip
        ours, opt = _run(pf, "Adafactor", kwargs, init, dt, steps=steps)
        theirs, topt = _run(torch, "Adafactor", kwargs, init, tdt, steps=steps)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)
        assert sorted(opt.state_dict()["state"][0]) == sorted(topt.state_dict()["state"][0])


def test_state_dict_round_trip_continues_the_run():
    init = np.linspace(-1, 1, 12).reshape(3, 4)
    straight, _ = _run(pf, "Adafactor", {}, init, pf.float64, steps=20)
    half, opt = _run(pf, "Adafactor", {}, init, pf.float64, steps=10)
    p2 = half.detach().clone().requires_grad_()
    opt2 = pf.optim.Adafactor([p2])
    opt2.load_state_dict(opt.state_dict())
    for step in range(10, 20):
        p2.grad = pf.tensor(_grad(p2.detach().numpy(), step), dtype=pf.float64)
        opt2.step()
    np.testing.assert_allclose(p2.detach().numpy(), straight.detach().numpy(), rtol=1e-12)
