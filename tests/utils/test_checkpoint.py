"""Activation checkpointing: the gradients of the plain run, activations not kept, both variants as torch's."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn.functional as F
from pyframe import nn
from pyframe.utils.checkpoint import CheckpointError, checkpoint


def _data(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def _block() -> nn.Module:
    pf.manual_seed(3)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.5), nn.Linear(8, 4), nn.GELU())


def _grads(model, x, run):
    model.zero_grad()
    x = x.detach().requires_grad_()
    pf.manual_seed(11)  # dropout draws the same mask in both runs only if the recomputation replays the generator
    out = run(model, x)
    (out * out).sum().backward()
    return [out.detach().numpy().copy(), x.grad.numpy().copy()] + [p.grad.numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("reentrant", [False, True])
def test_gradients_equal_the_plain_run(reentrant):
    model, x = _block(), pf.tensor(_data(3, 4))
    plain = _grads(model, x, lambda m, x: m(x))
    ckpt = _grads(model, x, lambda m, x: checkpoint(m, x, use_reentrant=reentrant))
    for a, b in zip(plain, ckpt, strict=True):
        np.testing.assert_array_equal(a, b)


def test_intermediate_activations_are_not_held():
    """The tensors an op saves for backward die with the checkpointed forward; in the plain run the graph keeps
    them until backward."""
    lin1, lin2 = nn.Linear(4, 16), nn.Linear(16, 4)
    kept = []

    def f(x):
        h = lin1(x).tanh()  # tanh saves its output for backward, lin2 saves its input: h
        kept.append(weakref.ref(h))
        return lin2(h)

    x = pf.tensor(_data(2, 4), requires_grad=True)
    plain = f(x)
    gc.collect()  # a unary node saving its own output is a reference cycle: only the collector frees it
    assert kept[-1]() is not None
    out = checkpoint(f, x, use_reentrant=False)
    gc.collect()
    assert kept[-1]() is None  # nothing holds the intermediate: the graph behind out was cut
    assert len(out.grad_fn.next_functions) == 1 + 4  # x, and the four parameters the function used
    out.sum().backward()
    g_ckpt = x.grad.clone()
    x.grad = None
    plain.sum().backward()
    np.testing.assert_allclose(g_ckpt.numpy(), x.grad.numpy(), rtol=1e-6)


def test_grad_with_respect_to_parameters_and_kwargs():
    lin = nn.Linear(3, 2)
    x = pf.tensor(_data(4, 3))  # needs no grad: the parameters do

    def f(x, *, scale):
        return lin(x) * scale, x.sum()

    out, total = checkpoint(f, x, scale=2.0, use_reentrant=False)
    assert out.requires_grad and not total.requires_grad
    gw, gb = pf.autograd.grad(out.sum(), [lin.weight, lin.bias])
    np.testing.assert_allclose(gw.numpy(), 2.0 * x.sum(0).expand(2, 3).numpy(), rtol=1e-6)
    np.testing.assert_allclose(gb.numpy(), [8.0, 8.0])


def test_reentrant_variant_refuses_autograd_grad_and_kwargs():
    lin = nn.Linear(3, 2)
    x = pf.tensor(_data(4, 3), requires_grad=True)
    out = checkpoint(lin, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="incompatible with .grad\\(\\)"):
        pf.autograd.grad(out.sum(), x)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda x, scale: x, x, scale=1, use_reentrant=True)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        checkpoint(lin, x.detach(), use_reentrant=True)


def test_warning_without_use_reentrant_and_no_grad_mode():
    lin = nn.Linear(3, 2)
    x = pf.tensor(_data(4, 3), requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        checkpoint(lin, x)
    with pf.no_grad():
        assert not checkpoint(lin, x, use_reentrant=False).requires_grad


def test_a_recomputation_that_differs_raises():
    calls = []

    def f(x):
        calls.append(1)
        return x[: len(calls)] * 2

    x = pf.tensor(_data(4), requires_grad=True)
    out = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="recomputed output 0 has shape \\[2\\]"):
        out.sum().backward()


def test_checkpoint_sequential_matches_torch():
    torch = pytest.importorskip("torch")
    x = _data(5, 4)
    layers = [(_data(6, 4, seed=1), _data(6, seed=2)), (_data(6, 6, seed=3), _data(6, seed=4)),
              (_data(4, 6, seed=5), _data(4, seed=6))]  # fmt: skip
    results = []
    for lib in (pf, torch):
        mods = []
        for w, b in layers:
            lin = lib.nn.Linear(w.shape[1], w.shape[0])
            with lib.no_grad():
                lin.weight.copy_(lib.tensor(w))
                lin.bias.copy_(lib.tensor(b))
            mods += [lin, lib.nn.Tanh()]
        model = lib.nn.Sequential(*mods)
        inp = lib.tensor(x, requires_grad=True)
        out = lib.utils.checkpoint.checkpoint_sequential(model, 3, inp, use_reentrant=False)
        (out * out).sum().backward()
        results.append([out.detach().numpy(), inp.grad.numpy()] + [p.grad.numpy() for p in model.parameters()])
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_autocast_state_is_replayed():
    lin = nn.Linear(3, 2)
    x = pf.tensor(_data(4, 3), requires_grad=True)
    with pf.autocast("cpu"):
        out = checkpoint(lin, x, use_reentrant=False)
    assert out.dtype == pf.bfloat16
    F.mse_loss(out.float(), pf.zeros(4, 2)).backward()  # the recomputation runs under the same autocast
    assert lin.weight.grad.dtype == pf.float32 and x.grad.dtype == pf.float32
