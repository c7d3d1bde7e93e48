"""End to end: small models trained from the same weights as torch follow torch's losses
and gradients; a model learns a synthetic task; a checkpoint resumes training exactly."""

import numpy as np
import pytest

import pyframe
import pyframe.nn as nn
import pyframe.nn.functional as F


def mlp(lib):
    return lib.nn.Sequential(lib.nn.Linear(20, 32), lib.nn.ReLU(), lib.nn.Linear(32, 5))


def cnn(lib):
    return lib.nn.Sequential(
        lib.nn.Conv2d(1, 4, 3, padding=1), lib.nn.BatchNorm2d(4), lib.nn.ReLU(), lib.nn.MaxPool2d(2),
        lib.nn.Flatten(), lib.nn.Linear(4 * 6 * 6, 3),
    )  # fmt: skip


def copy_weights(src, dst, torch):
    """src (pyframe) state into dst (torch) through NumPy."""
    state = {k: torch.from_numpy(v.detach().numpy().copy()) for k, v in src.state_dict().items()}
    dst.load_state_dict(state)


@pytest.mark.parametrize(
    ("make", "x_shape", "classes", "opt_name"),
    # the CNN steps with SGD: BatchNorm makes the conv bias's true gradient zero, and Adam
    # would turn its float-rounding noise into full-size steps, different in each library
    [(mlp, (16, 20), 5, "SGD"), (mlp, (16, 20), 5, "Adam"), (cnn, (8, 1, 12, 12), 3, "SGD")],
    ids=["mlp-sgd", "mlp-adam", "cnn-sgd"],
)
def test_training_steps_match_torch(make, x_shape, classes, opt_name):
    torch = pytest.importorskip("torch")
    pyframe.manual_seed(0)
    model = make(pyframe)
    tmodel = make(torch)
    copy_weights(model, tmodel, torch)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    y = rng.integers(0, classes, x_shape[0])
    kwargs = {"lr": 0.05, "momentum": 0.9} if opt_name == "SGD" else {"lr": 0.01}
    opt = getattr(pyframe.optim, opt_name)(model.parameters(), **kwargs)
    topt = getattr(torch.optim, opt_name)(tmodel.parameters(), **kwargs)
    loss_fn, tloss_fn = nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss()
    px, py = pyframe.tensor(x), pyframe.tensor(y)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)
    for step in range(5):
        opt.zero_grad()
        topt.zero_grad()
        loss = loss_fn(model(px), py)
        tloss = tloss_fn(tmodel(tx), ty)
        loss.backward()
        tloss.backward()
        assert abs(loss.item() - tloss.item()) < 1e-5, f"step {step}: loss {loss.item()} vs torch {tloss.item()}"
        for (name, p), tp in zip(model.named_parameters(), tmodel.parameters(), strict=True):
            np.testing.assert_allclose(p.grad.numpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
        opt.step()
        topt.step()
    for (name, b), tb in zip(model.named_buffers(), tmodel.buffers(), strict=True):
        np.testing.assert_allclose(b.numpy(), tb.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_mlp_learns_xor_like_task_to_near_zero_loss():
    pyframe.manual_seed(1)
    x = pyframe.rand(256, 2) * 2 - 1
    y = ((x[:, 0] * x[:, 1]) > 0).long()  # quadrant parity: not linearly separable
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 2))
    opt = pyframe.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(400):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    assert loss.item() < 0.05
    with pyframe.no_grad():
        assert (model(x).argmax(dim=1) == y).float().mean().item() > 0.98


def test_checkpoint_resumes_training_exactly(tmp_path):
    pyframe.manual_seed(2)
    x, y = pyframe.randn(32, 20), pyframe.randint(0, 5, (32,))

    def run(model, opt, steps):
        for _ in range(steps):
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()

    model = mlp(pyframe)
    opt = pyframe.optim.Adam(model.parameters(), lr=0.01)
    run(model, opt, 3)
    pyframe.save({"model": model.state_dict(), "opt": opt.state_dict()}, tmp_path / "ckpt.pf")
    run(model, opt, 3)

    resumed = mlp(pyframe)
    ropt = pyframe.optim.Adam(resumed.parameters(), lr=0.01)
    ckpt = pyframe.load(tmp_path / "ckpt.pf")
    resumed.load_state_dict(ckpt["model"])
    ropt.load_state_dict(ckpt["opt"])
    run(resumed, ropt, 3)
    for (name, a), b in zip(model.state_dict().items(), resumed.state_dict().values(), strict=True):
        assert (a == b).all().item(), name
