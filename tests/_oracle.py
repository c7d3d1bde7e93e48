"""torch as the oracle of the nn tests: the same data or the same module in both libraries, and
comparisons of outputs and gradients. Importing this module does not need torch; calling the
helpers does (the test modules skip without it)."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import pyframe as pf
from pyframe.autograd import gradcheck

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is the oracle")


# ---- data -----------------------------------------------------------------------------------------------


def rand(*shape, seed=0, scale=1.0):
    """Standard normal float64 values times ``scale``, from a generator seeded with ``seed``."""
    return np.random.default_rng(seed).standard_normal(shape) * scale


def randn(*shape, dtype=np.float32, seed=0):
    """Standard normal values of ``dtype``, seeded by ``seed`` and the shape (tables of module cases)."""
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(dtype)


def f64(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


def leaf(arr):
    return pf.tensor(arr, requires_grad=True)


def both(arr, grad=True):
    """The same data as a pyframe and a torch tensor; floating ones require grad if asked."""
    arr = np.asarray(arr)
    g = grad and arr.dtype.kind == "f"
    return pf.tensor(arr, requires_grad=g), torch.tensor(arr, requires_grad=g)


# ---- comparisons ----------------------------------------------------------------------------------------


def close(p, t, rtol=1e-9, atol=1e-10):
    np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def grads_equal(po, to, pins, tins, rtol, atol, seed=1):
    """Equal outputs, then equal gradients of ``pins``/``tins`` for one random cotangent."""
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol, err_msg="forward")
    cot = np.random.default_rng(seed).standard_normal(tuple(to.shape)).astype(po.detach().numpy().dtype)
    po.backward(pf.tensor(cot))
    to.backward(torch.tensor(cot).to(to.dtype))
    for i, (p, t) in enumerate(zip(pins, tins, strict=True)):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"grad {i}")


def compare(pf_fn, torch_fn, *arrays, grad=True, rtol=1e-7, atol=1e-9, seed=0):
    """Both functions on copies of ``arrays``: equal outputs, and equal gradients of every
    floating input for one random cotangent (drawn from ``seed``)."""
    pairs = [both(a, grad) for a in arrays]
    po = pf_fn(*(p for p, _ in pairs))
    to = torch_fn(*(t for _, t in pairs))
    assert tuple(po.shape) == tuple(to.shape), f"shape {tuple(po.shape)} != torch {tuple(to.shape)}"
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol, err_msg="forward")
    if not grad:
        return po, to
    cot = np.random.default_rng(seed).standard_normal(tuple(to.shape)).astype(np.asarray(arrays[0]).dtype)
    po.backward(pf.tensor(cot))
    to.backward(torch.tensor(cot))
    for i, (p, t) in enumerate(pairs):
        if t.requires_grad:
            assert p.grad is not None, f"input {i} got no gradient"
            np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"grad {i}")
    return po, to


def compare_named(name, args, kwargs=None, grad=(0,), rtol=1e-9, atol=1e-10, seed=42):
    """``F.<name>`` against ``torch.nn.functional.<name>`` on ``args`` (arrays become tensors; those
    at the positions in ``grad`` require grad): outputs, then those inputs' gradients."""
    kwargs = kwargs or {}
    pf_fn, torch_fn = getattr(pf.nn.functional, name), getattr(torch.nn.functional, name)
    ps = [pf.tensor(a, requires_grad=i in grad) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    ts = [torch.tensor(a, requires_grad=i in grad) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    po, to = pf_fn(*ps, **kwargs), torch_fn(*ts, **kwargs)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol, err_msg=name)
    cot = rand(*to.shape, seed=seed, scale=2.0)
    po.backward(pf.tensor(cot))
    to.backward(torch.tensor(cot))
    for i in grad:
        np.testing.assert_allclose(ps[i].grad.numpy(), ts[i].grad.numpy(), rtol=rtol, atol=atol, err_msg=name)


def gc(fn, *tensors):
    """gradcheck of ``fn`` contracted with a fixed random tensor (one backward, full VJP)."""
    out = fn(*tensors)
    w = pf.tensor(np.random.default_rng(7).standard_normal(tuple(out.shape)))
    assert gradcheck(lambda *a: (fn(*a) * w).sum(), tensors, eps=1e-6, atol=1e-6, rtol=1e-4)


# ---- modules --------------------------------------------------------------------------------------------


def twin(build, jitter=0.0):
    """The same module in torch and pyframe, float64: torch's initial parameters and buffers (plus
    ``jitter`` times seeded noise on the floating ones) copied into pyframe's."""
    torch.manual_seed(0)
    t, p = build(torch.nn).double(), build(pf.nn).double()
    tsd, psd = t.state_dict(), p.state_dict()
    assert list(tsd) == list(psd)
    with pf.no_grad():
        for k in tsd:
            assert tuple(tsd[k].shape) == tuple(psd[k].shape), k
            if jitter and tsd[k].dtype.is_floating_point:
                psd[k].copy_(pf.tensor(tsd[k].numpy() + rand(*tsd[k].shape, seed=3) * jitter))
                tsd[k].copy_(torch.tensor(psd[k].numpy()))
            else:
                psd[k].copy_(pf.tensor(tsd[k].numpy().copy()))
    return t, p


def lib_of(nn_mod):
    return torch if nn_mod is getattr(torch, "nn", None) else pf


def twin_random(build):
    """The same module in torch and pyframe in its own dtype: torch's floating parameters
    randomised, then every parameter and buffer copied into pyframe's."""
    t, p = build(torch.nn), build(pf.nn)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for q in t.parameters():
            q.copy_(torch.randn(q.shape, generator=gen) * 0.5 + 0.1)
    with pf.no_grad():
        tsd, psd = t.state_dict(), p.state_dict()
        assert list(tsd) == list(psd)
        for k in tsd:
            assert tuple(tsd[k].shape) == tuple(psd[k].shape), k
            psd[k].copy_(pf.from_numpy(tsd[k].numpy().copy()))
    return t, p


def close_or_none(got, expected, rtol=1e-4, atol=1e-5):
    """``got`` equals torch's ``expected`` (compared in float64), or both are None."""
    if expected is None:
        assert got is None
        return
    np.testing.assert_allclose(got.detach().numpy().astype(np.float64), expected.detach().numpy().astype(np.float64),
                               rtol=rtol, atol=atol)  # fmt: skip


def compare_module(build, *inputs, train=True, steps=1, rtol=1e-4, atol=1e-5, grad_inputs=True):
    """Forward (``steps`` times) and backward through both twins (``twin_random``); compares outputs,
    the gradients of the floating inputs and of every parameter, and the buffers. An input may be a
    callable drawing a fresh batch per step."""
    t, p = twin_random(build)
    t.train(train)
    p.train(train)
    rng = np.random.default_rng(3)
    for _ in range(steps):
        t_in, p_in = [], []
        for x in inputs:
            x = x() if callable(x) else x
            tx = torch.from_numpy(x.copy())
            px = pf.from_numpy(x.copy())
            if grad_inputs and x.dtype.kind == "f":
                tx.requires_grad_()
                px.requires_grad_()
            t_in.append(tx)
            p_in.append(px)
        to, po = t(*t_in), p(*p_in)
        close_or_none(po, to, rtol, atol)
        if to.requires_grad:
            g = rng.standard_normal(tuple(to.shape)).astype(x.dtype if x.dtype.kind == "f" else np.float32)
            to.backward(torch.from_numpy(g.copy()))
            po.backward(pf.from_numpy(g.copy()))
            for tx, px in zip(t_in, p_in, strict=True):
                close_or_none(px.grad, tx.grad, rtol, atol)
            for (name, tq), pq in zip(t.named_parameters(), p.parameters(), strict=True):
                assert (tq.grad is None) == (pq.grad is None), name
                close_or_none(pq.grad, tq.grad, rtol, atol)
            t.zero_grad()
            p.zero_grad()
    for tb, pb in zip(t.buffers(), p.buffers(), strict=True):
        close_or_none(pb, tb, rtol, atol)
    return t, p


def run_module(build, *shapes, train=True):
    """``twin(build, jitter=0.1)`` (reprs equal) on float64 inputs of ``shapes``: outputs, the inputs'
    and parameters' gradients, and the state after the step, to 1e-9."""
    t, p = twin(build, jitter=0.1)
    assert repr(t) == repr(p)
    t.train(train)
    p.train(train)
    xs = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    ps = [pf.tensor(x, requires_grad=True) for x in xs]
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    po, to = p(*ps), t(*ts)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-9, atol=1e-10)
    cot = rand(*to.shape, seed=9)
    po.backward(pf.tensor(cot))
    to.backward(torch.tensor(cot))
    for a, b in zip(ps, ts, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-10)
    for a, b in zip(p.parameters(), t.parameters(), strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-10)
    for (k, a), (_, b) in zip(p.state_dict().items(), t.state_dict().items(), strict=True):
        np.testing.assert_allclose(np.asarray(a.numpy(), dtype=float), b.numpy().astype(float), rtol=1e-9,
                                   atol=1e-12, err_msg=k)  # fmt: skip


def assert_reprs_match(*builds):
    """Each ``build(nn)`` prints as torch's."""
    for build in builds:
        assert repr(build(pf.nn)) == repr(build(torch.nn))


# ---- composite ops against torch: tables of (function of the library and the inputs, input arrays) --------------


def run_case(lib, fn, arrays):
    """``fn(lib, *inputs)`` on float64 leaves made from ``arrays``; the output and, after a backward of the output
    contracted with fixed weights, each input's gradient (None where none flows)."""
    inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *inputs)
    if out.requires_grad:
        w = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype=out.dtype)
        (out * w).sum().backward()
    grads = [x.grad.numpy() if x.grad is not None else None for x in inputs]
    return out.detach().numpy(), grads


def case_matches_torch(fn, arrays, rtol=1e-6, atol=1e-7, grad_rtol=None):
    """pyframe's ``fn`` equals torch's in value and in every input's gradient."""
    with np.errstate(all="ignore"):
        out, grads = run_case(pf, fn, arrays)
        tout, tgrads = run_case(torch, fn, arrays)
    np.testing.assert_allclose(out, tout, rtol=rtol, atol=atol, equal_nan=True)
    for g, tg in zip(grads, tgrads, strict=True):
        if tg is None:
            assert g is None or not g.any()
        else:
            np.testing.assert_allclose(g, tg, rtol=grad_rtol or rtol, atol=atol)


compare_f64 = functools.partial(compare, rtol=1e-9, atol=1e-10, seed=99)  # float64 inputs, all requiring grad
