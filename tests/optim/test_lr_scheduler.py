"""pyframe.optim.lr_scheduler: torch's learning rates step for step over 100 steps (exactly: the
same formulas in the same order), state_dict round trips, bad input."""

from __future__ import annotations

import math

import pytest

import pyframe as pf

STEPS = 100


def _warmup(epoch):
    return min(1.0, (epoch + 1) / 10)


def _decay(epoch):
    return 0.97


# name, kwargs (callables receive the library, for nested schedulers), optimizer kwargs
CASES = [
    ("StepLR", lambda lib, o: dict(step_size=7, gamma=0.5), {}),
    ("MultiStepLR", lambda lib, o: dict(milestones=[10, 30, 30, 80], gamma=0.3), {}),
    ("ExponentialLR", lambda lib, o: dict(gamma=0.95), {}),
    ("CosineAnnealingLR", lambda lib, o: dict(T_max=30, eta_min=0.001), {}),
    ("LambdaLR", lambda lib, o: dict(lr_lambda=_warmup), {}),
    ("MultiplicativeLR", lambda lib, o: dict(lr_lambda=_decay), {}),
    ("LinearLR", lambda lib, o: dict(start_factor=0.1, end_factor=0.9, total_iters=40), {}),
    ("ConstantLR", lambda lib, o: dict(factor=0.25, total_iters=20), {}),
    ("PolynomialLR", lambda lib, o: dict(total_iters=60, power=2.0), {}),
    ("CosineAnnealingWarmRestarts", lambda lib, o: dict(T_0=10, T_mult=2, eta_min=0.01), {}),
    ("OneCycleLR", lambda lib, o: dict(max_lr=0.5, total_steps=STEPS + 1), {"momentum": 0.9}),
    (
        "OneCycleLR",
        lambda lib, o: dict(max_lr=[0.5, 0.2], total_steps=STEPS + 1, anneal_strategy="linear", three_phase=True),
        {"momentum": 0.9},
    ),  # fmt: skip
    (
        "CyclicLR",
        lambda lib, o: dict(base_lr=0.01, max_lr=0.1, step_size_up=10, step_size_down=5, mode="triangular2"),
        {"momentum": 0.9},
    ),
    (
        "CyclicLR",
        lambda lib, o: dict(
            base_lr=[0.01, 0.02], max_lr=0.1, step_size_up=7, mode="exp_range", gamma=0.99, cycle_momentum=False
        ),
        {},
    ),  # fmt: skip
    (
        "SequentialLR",
        lambda lib, o: dict(
            schedulers=[
                lib.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=10),
                lib.optim.lr_scheduler.CosineAnnealingLR(o, T_max=50),
            ],
            milestones=[10],
        ),
        {},
    ),  # fmt: skip
]


def _optimizer(lib, extra):
    a = lib.zeros(3, requires_grad=True)
    b = lib.zeros(2, requires_grad=True)
    return lib.optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.05}], lr=0.1, **extra)


def _trajectory(lib, name, make_kwargs, opt_kwargs, steps=STEPS):
    opt = _optimizer(lib, opt_kwargs)
    sched = getattr(lib.optim.lr_scheduler, name)(opt, **make_kwargs(lib, opt))
    lrs = [sched.get_last_lr()]
    moms = [[g.get("momentum") for g in opt.param_groups]]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        moms.append([g.get("momentum") for g in opt.param_groups])
    return lrs, moms


@pytest.mark.parametrize(("name", "make", "opt_kwargs"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_matches_torch_step_for_step(name, make, opt_kwargs):
    torch = pytest.importorskip("torch")
    ours = _trajectory(pf, name, make, opt_kwargs)
    theirs = _trajectory(torch, name, make, opt_kwargs)
    assert ours == theirs


def test_chained_scheduler_matches_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        opt = _optimizer(lib, {})
        s = lib.optim.lr_scheduler
        chain = s.ChainedScheduler([s.ConstantLR(opt, factor=0.5, total_iters=5), s.ExponentialLR(opt, gamma=0.9)])
        out = [chain.get_last_lr()]
        for _ in range(STEPS):
            opt.step()
            chain.step()
            out.append(chain.get_last_lr())
        return out

    assert run(pf) == run(torch)


def test_reduce_on_plateau_matches_torch():
    torch = pytest.importorskip("torch")
    metrics = [1.0 / (1 + i) if i < 30 else 0.03 + 0.001 * math.sin(i) for i in range(STEPS)]

    def run(lib, **kwargs):
        opt = _optimizer(lib, {})
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kwargs)
        out = []
        for m in metrics:
            sched.step(m)
            out.append(sched.get_last_lr())
        return out

    for kwargs in ({"patience": 3}, {"mode": "max", "factor": 0.5, "patience": 2, "cooldown": 2, "min_lr": [0.01, 0]},
                   {"threshold_mode": "abs", "threshold": 0.01, "patience": 1}):  # fmt: skip
        assert run(pf, **kwargs) == run(torch, **kwargs)


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "OneCycleLR", "SequentialLR", "LambdaLR"])
def test_state_dict_round_trip(name):
    make, opt_kwargs = next((m, k) for n, m, k in CASES if n == name)
    straight, _ = _trajectory(pf, name, make, opt_kwargs, steps=40)
    opt = _optimizer(pf, opt_kwargs)
    sched = getattr(pf.optim.lr_scheduler, name)(opt, **make(pf, opt))
    for _ in range(20):
        opt.step()
        sched.step()
    saved_opt, saved = opt.state_dict(), sched.state_dict()
    assert "optimizer" not in saved
    opt2 = _optimizer(pf, opt_kwargs)
    opt2.load_state_dict(saved_opt)
    sched2 = getattr(pf.optim.lr_scheduler, name)(opt2, **make(pf, opt2))
    sched2.load_state_dict(saved)
    for g, lr in zip(opt2.param_groups, sched2.get_last_lr(), strict=True):
        g["lr"] = lr
    rest = []
    for _ in range(20):
        opt2.step()
        sched2.step()
        rest.append(sched2.get_last_lr())
    assert rest == straight[21:]


def test_bad_input():
    s = pf.optim.lr_scheduler
    with pytest.raises(TypeError, match="is not an Optimizer"):
        s.StepLR([pf.zeros(2)], step_size=3)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        s.ReduceLROnPlateau("sgd")
    opt = _optimizer(pf, {})
    with pytest.raises(ValueError, match="step_size"):
        s.StepLR(opt, step_size=0)
    with pytest.raises(ValueError, match="factor"):
        s.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="total_steps"):
        s.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(ValueError, match="expected 2 values"):
        s.LambdaLR(opt, lr_lambda=[_warmup])
    with pytest.raises(ValueError, match="milestones"):
        s.SequentialLR(opt, [s.StepLR(opt, 2), s.StepLR(opt, 3)], milestones=[])
    other = _optimizer(pf, {})
    with pytest.raises(ValueError, match="same optimizer"):
        s.ChainedScheduler([s.StepLR(opt, 2), s.StepLR(other, 3)])
    one = s.OneCycleLR(opt, max_lr=0.1, total_steps=2)
    one.step()
    one.step()
    with pytest.raises(ValueError, match="Tried to step 3 times"):
        one.step()
