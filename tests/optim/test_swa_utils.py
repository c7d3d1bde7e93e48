"""optim.swa_utils: SWA and EMA averages, SWALR and update_bn, against torch on the same weights."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
from pyframe.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn


def _data(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def _model(lib, seed: int):
    m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for i, p in enumerate(m.parameters()):
            p.copy_(lib.tensor(_data(*p.shape, seed=seed + i)))
    return m


def test_swa_average_is_the_mean():
    models = [_model(pf, s) for s in (0, 10, 20)]
    avg = AveragedModel(models[0])
    for m in models:
        avg.update_parameters(m)
    assert avg.n_averaged.item() == 3
    for p_avg, *ps in zip(avg.parameters(), *(m.parameters() for m in models), strict=True):
        np.testing.assert_allclose(p_avg.detach().numpy(), np.mean([p.detach().numpy() for p in ps], 0), rtol=1e-5)
    x = pf.tensor(_data(5, 3))
    avg.eval()
    assert avg(x).shape == (5, 2)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        AveragedModel(models[0], avg_fn=lambda *a: None, multi_avg_fn=lambda *a: None)
    with pytest.raises(ValueError, match="Invalid decay value 2"):
        get_ema_multi_avg_fn(2)


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_buffers", "avg_fn"])
def test_averages_match_torch(kind):
    torch = pytest.importorskip("torch")
    results = []
    for lib in (pf, torch):
        su = lib.optim.swa_utils
        kw = {"swa": {}, "ema": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.9)},
              "ema_buffers": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.8), "use_buffers": True},
              "avg_fn": {"avg_fn": su.get_ema_avg_fn(0.7)}}[kind]  # fmt: skip
        avg = su.AveragedModel(_model(lib, 0), **kw)
        for s in (0, 5, 9, 14):
            m = _model(lib, s)
            m.train()
            m(lib.tensor(_data(6, 3, seed=s)))  # moves the batch-norm statistics
            avg.update_parameters(m)
        results.append({k: v.detach().numpy().copy() for k, v in avg.state_dict().items()})
    assert results[0].keys() == results[1].keys()
    for k in results[0]:
        np.testing.assert_allclose(results[0][k], results[1][k], rtol=1e-6, atol=1e-6, err_msg=k)


def test_swalr_and_update_bn_match_torch():
    torch = pytest.importorskip("torch")
    runs = []
    for lib in (pf, torch):
        m = _model(lib, 1)
        opt = lib.optim.SGD(m.parameters(), lr=0.5)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=3, anneal_strategy="cos")
        lrs = []
        for _ in range(5):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr()[0])
        loader = [(lib.tensor(_data(4, 3, seed=s)), 0) for s in range(3)]
        lib.optim.swa_utils.update_bn(loader, m)
        bn = m[1]
        runs.append((lrs, bn.running_mean.numpy().copy(), bn.running_var.numpy().copy(), bn.momentum, m.training))
    np.testing.assert_allclose(runs[0][0], runs[1][0], rtol=1e-12)
    np.testing.assert_allclose(runs[0][1], runs[1][1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(runs[0][2], runs[1][2], rtol=1e-5, atol=1e-6)
    assert runs[0][3:] == runs[1][3:]


def test_swalr_arguments():
    opt = pf.optim.SGD([pf.zeros(1, requires_grad=True)], lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        SWALR(opt, swa_lr=0.1, anneal_strategy="exp")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        SWALR(opt, swa_lr=0.1, anneal_epochs=-1)
    sched = SWALR(opt, swa_lr=0.1, anneal_epochs=0)
    state = sched.state_dict()
    assert "anneal_func" not in state and "optimizer" not in state
    update_bn([pf.ones(2, 3)], pf.nn.Linear(3, 1))  # no batch-norm layer: nothing to do
