"""Adadelta, Adagrad, RMSprop, Adamax, NAdam, RAdam: torch's trajectories step for step over 100
steps (float64 to rounding, float32 closely), state_dict round trips, bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf

STEPS = 100

CASES = [
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1, "maximize": True}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.05, "lr_decay": 0.01, "weight_decay": 0.1, "initial_accumulator_value": 0.2}),
    ("RMSprop", {}),
    ("RMSprop", {"centered": True}),
    ("RMSprop", {"momentum": 0.9, "weight_decay": 0.01}),
    ("RMSprop", {"centered": True, "momentum": 0.5, "alpha": 0.9, "maximize": True}),
    ("Adamax", {}),
    ("Adamax", {"lr": 0.01, "betas": (0.8, 0.99), "weight_decay": 0.1}),
    ("NAdam", {}),
    ("NAdam", {"weight_decay": 0.1, "momentum_decay": 0.01}),
    ("NAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "maximize": True}),
    ("RAdam", {}),
    ("RAdam", {"lr": 0.01, "weight_decay": 0.1}),
    ("RAdam", {"weight_decay": 0.1, "decoupled_weight_decay": True, "betas": (0.5, 0.9)}),
]


def _grad(p: np.ndarray, step: int) -> np.ndarray:
    """A gradient that changes sign and scale over the run, as training's do."""
    return np.cos(p * 3.0 + 0.1 * step) + 0.05 * p * p - 0.02 * step * np.sin(p)


def _run(lib, name, kwargs, init, dtype, steps=STEPS, opt=None):
    p = lib.tensor(init, dtype=dtype).requires_grad_()
    opt = opt or getattr(lib.optim, name)([p], **kwargs)
    for step in range(steps):
        p.grad = lib.tensor(_grad(p.detach().numpy().astype(np.float64), step), dtype=dtype)
        opt.step()
    return p, opt


@pytest.mark.parametrize(("name", "kwargs"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_matches_torch_step_for_step(name, kwargs):
    torch = pytest.importorskip("torch")
    init = np.random.default_rng(0).normal(size=(7, 5))
    for dt, tdt, rtol, atol in ((pf.float64, torch.float64, 1e-10, 1e-12), (pf.float32, torch.float32, 2e-4, 2e-5)):
        ours, _ = _run(pf, name, kwargs, init, dt)
        theirs, _ = _run(torch, name, kwargs, init, tdt)
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("name", ["Adadelta", "Adagrad", "RMSprop", "Adamax", "NAdam", "RAdam"])
def test_state_dict_round_trip_continues_the_run(name):
    kwargs = {"momentum": 0.9, "centered": True} if name == "RMSprop" else {}
    init = np.linspace(-1, 1, 12).reshape(3, 4)
    straight, _ = _run(pf, name, kwargs, init, pf.float64, steps=20)
    half, opt = _run(pf, name, kwargs, init, pf.float64, steps=10)
    p2 = half.detach().clone().requires_grad_()
    opt2 = getattr(pf.optim, name)([p2], **kwargs)
    opt2.load_state_dict(opt.state_dict())
    for step in range(10, 20):
        p2.grad = pf.tensor(_grad(p2.detach().numpy(), step), dtype=pf.float64)
        opt2.step()
    # equal but for NAdam, whose float32 mu_product loads as the parameter's dtype (as torch's)
    np.testing.assert_allclose(p2.detach().numpy(), straight.detach().numpy(), rtol=1e-12)


def test_defaults_match_torch():
    torch = pytest.importorskip("torch")
    for name in ("Adadelta", "Adagrad", "RMSprop", "Adamax", "NAdam", "RAdam"):
        ours = getattr(pf.optim, name)([pf.zeros(2, requires_grad=True)]).defaults
        theirs = getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)]).defaults
        for key in ("lr", "eps", "weight_decay", "betas", "rho", "alpha", "momentum", "lr_decay", "momentum_decay"):
            if key in theirs:
                assert ours[key] == theirs[key], (name, key)


def test_bad_arguments():
    p = [pf.zeros(2, requires_grad=True)]
    for name, kwargs in [
        ("Adadelta", {"rho": 1.5}),
        ("Adagrad", {"lr": -1.0}),
        ("RMSprop", {"alpha": -0.1}),
        ("Adamax", {"betas": (1.0, 0.9)}),
        ("NAdam", {"momentum_decay": -1}),
        ("RAdam", {"eps": -1.0}),
        ("RMSprop", {"capturable": True}),
    ]:
        with pytest.raises(ValueError, match="Invalid|does not support"):
            getattr(pf.optim, name)(p, **kwargs)
    q = pf.zeros(2, dtype=pf.float32, requires_grad=True)
    opt = pf.optim.RMSprop([q])
    q._grad = pf.zeros(3)  # past the assignment check (torch refuses `q.grad = ...` of another size)
    with pytest.raises(ValueError, match="does not match"):
        opt.step()


def test_strided_parameter_is_updated_in_place():
    base = pf.zeros(4, 6, dtype=pf.float64)
    view = base[:, ::2]
    view.requires_grad_()
    opt = pf.optim.RAdam([view], lr=0.1)
    view.grad = pf.ones(4, 3, dtype=pf.float64)
    opt.step()
    assert view.detach().numpy().min() < 0 and base[:, 1::2].abs().sum().item() == 0
