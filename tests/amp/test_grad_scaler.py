"""GradScaler: a working scaler on the CPU, a disabled one for CUDA, both as torch's."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn.functional as F


def _data(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def test_disabled_cuda_scaler_passes_through():
    with pytest.warns(UserWarning, match="CUDA is not available.  Disabling."):
        scaler = pf.amp.GradScaler()  # torch's default device is "cuda"
    assert not scaler.is_enabled() and scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    w = pf.tensor([1.0, 2.0], requires_grad=True)
    opt = pf.optim.SGD([w], lr=0.5)
    loss = (w * w).sum()
    assert scaler.scale(loss) is loss
    loss.backward()
    assert scaler.step(opt) is None
    scaler.update()
    assert w.tolist() == [0.0, 0.0]  # the plain SGD step
    with pytest.warns(FutureWarning, match="torch.cuda.amp.GradScaler"), pytest.warns(UserWarning):
        assert not pf.cuda.amp.GradScaler().is_enabled()


def test_cpu_scaler_scales_unscales_skips_and_updates():
    scaler = pf.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    w = pf.tensor([1.0, -2.0], requires_grad=True)
    opt = pf.optim.SGD([w], lr=0.1)
    scaled = scaler.scale((w * w).sum())
    assert scaled.item() == 4.0 * 5.0
    scaled.backward()
    scaler.unscale_(opt)
    assert w.grad.tolist() == [2.0, -4.0]
    with pytest.raises(RuntimeError, match="already been called on this optimizer"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    assert w.tolist() == pytest.approx([0.8, -1.6]) and scaler.get_scale() == 4.0
    opt.zero_grad()
    w.grad = pf.tensor([float("inf"), 1.0])
    scaler.scale(w.sum())  # the iteration starts with scale(); the gradient is set by hand
    before = w.tolist()
    scaler.step(opt)
    scaler.update()
    assert w.tolist() == before and scaler.get_scale() == 2.0  # skipped, backed off
    assert scaler.state_dict() == {
        "scale": 2.0,
        "growth_factor": 2.0,
        "backoff_factor": 0.5,
        "growth_interval": 2,
        "_growth_tracker": 0,
    }
    with pytest.raises(RuntimeError, match="Closure use is not currently supported"):
        scaler.step(opt, closure=lambda: None)


def test_state_dict_round_trip_and_errors():
    scaler = pf.amp.GradScaler("cpu", init_scale=8.0)
    other = pf.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == 8.0
    with pytest.raises(RuntimeError, match="source state dict is empty"):
        other.load_state_dict({})
    with pytest.raises(AssertionError, match="growth factor must be > 1.0"):
        pf.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="did not use scaler.scale"):
        pf.amp.GradScaler("cpu").update()


def test_mixed_precision_training_matches_torch():
    """autocast + GradScaler for eight steps: step 2's input holds an inf (its step is skipped and the scale
    backed off), the scale grows after every two clean steps; weights, losses and the scaler's state agree with
    torch's after every step."""
    torch = pytest.importorskip("torch")
    w1, w2, x = _data(6, 4), _data(3, 6), _data(8, 4)
    y = np.arange(8) % 3
    runs = []
    for lib, Fn in ((pf, F), (torch, torch.nn.functional)):
        p = [lib.tensor(v, requires_grad=True) for v in (w1, w2)]
        opt = lib.optim.SGD(p, lr=0.1, momentum=0.9)
        scaler = lib.amp.GradScaler("cpu", init_scale=2.0**20, growth_interval=2)
        trace = []
        for step in range(8):
            opt.zero_grad()
            xs = x.copy()
            if step == 2:
                xs[0, 0] = np.inf
            with lib.autocast("cpu", dtype=lib.bfloat16):
                logits = Fn.linear(Fn.relu(Fn.linear(lib.tensor(xs), p[0])), p[1])
                loss = Fn.cross_entropy(logits, lib.tensor(y))
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_(p, 1.0)
            scaler.step(opt)
            scaler.update()
            trace.append(
                (
                    step,
                    loss.item(),
                    scaler.get_scale(),
                    scaler.state_dict()["_growth_tracker"],
                    [t.detach().numpy().copy() for t in p],
                )
            )
        runs.append(trace)
    for ours, theirs in zip(*runs, strict=True):
        assert ours[2:4] == theirs[2:4], ours[0]
        assert ours[1] == pytest.approx(theirs[1], rel=2e-2, nan_ok=True), ours[0]
        for a, b in zip(ours[4], theirs[4], strict=True):
            np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-2)
    assert [t[2] for t in runs[0]] == [2.0**20, 2.0**21, 2.0**20, 2.0**20, 2.0**21, 2.0**21, 2.0**22, 2.0**22]
