"""Sparse gradients in the optimizers, against torch: SparseAdam step for step (only the rows a gradient holds
move), SGD and Adagrad's sparse updates, and torch's errors from the optimizers that refuse them."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn.functional as F
from pyframe import optim

torch = pytest.importorskip("torch")

# each step looks up other rows (row 5 never: it must not move), one of them twice
LOOKUPS = [[[0, 2], [2, 3]], [[1, 3]], [[4, 4, 0]]]


def _run(make, kw, dtype="float64", steps=6):
    rng = np.random.default_rng(0)
    w = rng.standard_normal((6, 3)).astype(dtype)
    pw = pf.tensor(w, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    popt, topt = make(pf.optim)([pw], **kw), make(torch.optim)([tw], **kw)
    for step in range(steps):
        idx = LOOKUPS[step % len(LOOKUPS)]
        for lib, fn, x, opt in ((pf, F, pw, popt), (torch, torch.nn.functional, tw, topt)):
            opt.zero_grad()
            (fn.embedding(lib.tensor(idx), x, sparse=True).sin() * (1 + step)).sum().backward()
            opt.step()
        np.testing.assert_allclose(pw.detach().numpy(), tw.detach().numpy(), rtol=1e-6 if dtype == "float32" else
                                   1e-12, atol=1e-7 if dtype == "float32" else 1e-14)  # fmt: skip
    np.testing.assert_array_equal(pw.detach().numpy()[5], w[5])
    return popt, topt, pw, tw


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{}, dict(lr=0.01, betas=(0.8, 0.9)), dict(maximize=True)], ids=str)
def test_sparse_adam_matches_torch(dtype, kw):
    popt, topt, pw, tw = _run(lambda o: o.SparseAdam, kw, dtype)
    for name in ("exp_avg", "exp_avg_sq"):
        np.testing.assert_allclose(popt.state[pw][name].numpy(), topt.state[tw][name].numpy(), rtol=1e-6)
    assert popt.state[pw]["step"] == topt.state[tw]["step"] == 6


def test_sparse_adam_tensor_lr_and_errors():
    _run(lambda o: o.SparseAdam, dict(lr=0.5), steps=3)
    p = pf.zeros(3, 2, requires_grad=True)
    with pytest.raises(ValueError, match="Invalid beta parameter at index 0: 1.0"):
        optim.SparseAdam([p], betas=(1.0, 0.0))
    with pytest.raises(ValueError, match="Invalid learning rate"):
        optim.SparseAdam([p], lr=-1.0)
    s = pf.sparse_coo_tensor([[0]], [1.0], (3,))
    with pytest.raises(ValueError, match=r"Sparse params at indices \[\[0, 0\]\]: SparseAdam requires dense"):
        optim.SparseAdam([s])
    opt = optim.SparseAdam([p])
    (p * 2).sum().backward()
    with pytest.raises(RuntimeError, match="SparseAdam does not support dense gradients, please consider Adam"):
        opt.step()
    assert p.detach().abs().sum().item() == 0  # nothing stepped


@pytest.mark.parametrize("kw", [dict(momentum=0), dict(momentum=0.9), dict(momentum=0.9, nesterov=True),
                                dict(momentum=0.5, dampening=0.3, maximize=True)], ids=str)  # fmt: skip
def test_sgd_sparse_matches_torch(kw):
    popt, topt, pw, tw = _run(lambda o: o.SGD, dict(lr=0.1, **kw))
    if kw["momentum"]:
        buf, tbuf = popt.state[pw]["momentum_buffer"], topt.state[tw]["momentum_buffer"]
        assert buf.is_sparse and tbuf.is_sparse
        np.testing.assert_allclose(buf.to_dense().numpy(), tbuf.to_dense().numpy(), rtol=1e-12)


@pytest.mark.parametrize("kw", [{}, dict(lr_decay=0.1, maximize=True), dict(initial_accumulator_value=0.5)],
                         ids=str)  # fmt: skip
def test_adagrad_sparse_matches_torch(kw):
    popt, topt, pw, tw = _run(lambda o: o.Adagrad, dict(lr=0.1, **kw))
    np.testing.assert_allclose(popt.state[pw]["sum"].numpy(), topt.state[tw]["sum"].numpy(), rtol=1e-12)


def _sparse_grad_param():
    p = pf.zeros(4, 2, requires_grad=True)
    F.embedding(pf.tensor([1, 2]), p, sparse=True).sum().backward()
    return p


@pytest.mark.parametrize("name, message", [
    ("Adam", "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("AdamW", "Adam does not support sparse gradients, please consider SparseAdam instead"),
    ("RMSprop", "RMSprop does not support sparse gradients"), ("Adadelta", "Adadelta does not support sparse"),
    ("Adamax", "Adamax does not"), ("NAdam", "NAdam does not"), ("RAdam", "RAdam does not"), ("ASGD", "ASGD does"),
    ("Rprop", "Rprop does not support sparse gradients"), ("Adafactor", "Adafactor does not support sparse"),
])  # fmt: skip
def test_optimizers_refuse_sparse_grads_as_torch(name, message):
    p = _sparse_grad_param()
    opt = getattr(optim, name)([p], lr=0.1)
    with pytest.raises(RuntimeError, match=message):
        opt.step()
    assert p.detach().abs().sum().item() == 0
    q = torch.zeros(4, 2, requires_grad=True)
    torch.nn.functional.embedding(torch.tensor([1, 2]), q, sparse=True).sum().backward()
    with pytest.raises(RuntimeError, match=message):
        getattr(torch.optim, name)([q], lr=0.1).step()


def test_sparse_grad_refusals_inside_sgd_and_adagrad():
    with pytest.raises(RuntimeError, match="weight_decay option is not compatible with sparse gradients"):
        optim.Adagrad([_sparse_grad_param()], weight_decay=0.1).step()
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        optim.SGD([_sparse_grad_param()], lr=0.1, weight_decay=0.1).step()
    with pytest.raises(RuntimeError, match="`_fused_sgd` does not support sparse gradients"):
        optim.SGD([_sparse_grad_param()], lr=0.1, fused=True).step()
    with pytest.raises(RuntimeError, match="`fused` does not support sparse grad"):
        optim.Adagrad([_sparse_grad_param()], fused=True).step()
    p = _sparse_grad_param()
    optim.LBFGS([p]).step(lambda: pf.tensor(0.0))  # LBFGS reads a sparse gradient densely, as torch's
