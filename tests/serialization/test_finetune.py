"""A checkpoint trained by torch, fine-tuned by pyframe, read back by torch: the handover a user makes."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((16, 4)).astype(np.float32)
Y = RNG.integers(0, 3, 16)


def torch_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 3))


def pyframe_model():
    return pf.nn.Sequential(pf.nn.Linear(4, 8), pf.nn.ReLU(), pf.nn.BatchNorm1d(8), pf.nn.Linear(8, 3))


def train(lib, model, opt, sched, steps: int) -> None:
    x, y = lib.tensor(X), lib.tensor(Y)
    for _ in range(steps):
        opt.zero_grad()
        lib.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        sched.step()


def test_torch_checkpoint_fine_tuned_in_pyframe_reads_back_in_torch(tmp_path):
    # torch trains and saves a general checkpoint
    tm = torch_model()
    topt = torch.optim.Adam(tm.parameters(), lr=1e-2)
    tsched = torch.optim.lr_scheduler.MultiStepLR(topt, milestones=[3, 7], gamma=0.5)
    train(torch, tm, topt, tsched, 5)
    ck = {"model": tm.state_dict(), "optim": topt.state_dict(), "sched": tsched.state_dict(), "epoch": 5}
    torch.save(ck, tmp_path / "torch.pt")

    # pyframe resumes from it, trains on, and saves in torch's format
    pm = pyframe_model()
    popt = pf.optim.Adam(pm.parameters(), lr=1e-2)
    psched = pf.optim.lr_scheduler.MultiStepLR(popt, milestones=[3, 7], gamma=0.5)
    loaded = pf.load(tmp_path / "torch.pt")
    pm.load_state_dict(loaded["model"])
    popt.load_state_dict(loaded["optim"])
    psched.load_state_dict(loaded["sched"])
    train(pf, pm, popt, psched, 5)
    out = {"model": pm.state_dict(), "optim": popt.state_dict(), "sched": psched.state_dict(), "epoch": 10}
    pf.save(out, tmp_path / "pyframe.pt", format="torch")

    # torch reads it back with weights_only=True, bit for bit, and can go on training from it
    back = torch.load(tmp_path / "pyframe.pt", weights_only=True)
    assert back["epoch"] == 10
    for k, v in pm.state_dict().items():
        assert back["model"][k].numpy().tobytes() == v.detach().numpy().tobytes(), k
    tm2 = torch_model()
    tm2.load_state_dict(back["model"])
    topt2 = torch.optim.Adam(tm2.parameters(), lr=1e-2)
    topt2.load_state_dict(back["optim"])
    tsched2 = torch.optim.lr_scheduler.MultiStepLR(topt2, milestones=[3, 7], gamma=0.5)
    tsched2.load_state_dict(back["sched"])
    assert tsched2.last_epoch == 10 and topt2.param_groups[0]["lr"] == pytest.approx(2.5e-3)

    # and the pyframe fine-tune matches torch fine-tuning the same checkpoint
    ref = torch_model()
    ref.load_state_dict(ck["model"])
    ropt = torch.optim.Adam(ref.parameters(), lr=1e-2)
    ropt.load_state_dict(ck["optim"])
    rsched = torch.optim.lr_scheduler.MultiStepLR(ropt, milestones=[3, 7], gamma=0.5)
    rsched.load_state_dict(ck["sched"])
    train(torch, ref, ropt, rsched, 5)
    for k, v in ref.state_dict().items():
        np.testing.assert_allclose(back["model"][k].numpy(), v.numpy(), rtol=1e-4, atol=1e-5, err_msg=k)
    train(torch, tm2, topt2, tsched2, 1)  # torch trains on from pyframe's state
