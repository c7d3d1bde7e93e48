"""The Optimizer base through pyframe's optimizers against torch.optim: autograd end to end, large parameters,
state_dict round trips and errors, param groups, zero_grad, closures, non-contiguous parameters, argument
errors with torch's messages, repr, and refused steps changing nothing."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from pyframe import optim
from tests.optim._least_squares import STEPS, W0, A, Y, assert_same, make_params, run_both, set_grads

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("make", [
    lambda ps, m: m.SGD(ps, lr=0.1, momentum=0.8, nesterov=True),
    lambda ps, m: m.Adam(ps, lr=0.1, amsgrad=True),
])  # fmt: skip
def test_autograd_end_to_end(make):
    """Gradients from each framework's own backward (float64), several parameters."""
    pf_params, th_params = make_params("float64")
    pf_opt, th_opt = make(pf_params, optim), make(th_params, torch.optim)
    for mod, params, opt in ((pyframe, pf_params, pf_opt), (torch, th_params, th_opt)):
        a, y = mod.tensor(A), mod.tensor(Y)
        for _ in range(STEPS):
            opt.zero_grad()
            loss = (((a @ params[0] + params[1] - y) ** 2).sum()) * 0.5
            loss.backward()
            opt.step()
    assert_same(pf_params, th_params, "float64")


def test_large_parameter_threads():
    """Above the C core's grain size the kernels run threaded."""
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal(70001).astype(np.float32)
    p, q = pyframe.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
    pf_opt, th_opt = optim.Adam([p], lr=0.01, weight_decay=0.1), torch.optim.Adam([q], lr=0.01, weight_decay=0.1)
    pf_sgd, th_sgd = optim.SGD([p], lr=0.01, momentum=0.9), torch.optim.SGD([q], lr=0.01, momentum=0.9)
    for s in range(3):
        g = np.sin(x0 * (s + 1)).astype(np.float32)
        p.grad, q.grad = pyframe.tensor(g), torch.tensor(g)
        for o in (pf_opt, th_opt, pf_sgd, th_sgd):
            o.step()
    np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-6)


# ---- state_dict ---------------------------------------------------------------------------


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=0.05, momentum=0.9, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("AdamW", dict(lr=0.05)),
])  # fmt: skip
def test_state_dict_round_trip(name, kw):
    pf_params, th_params = make_params("float64")
    pf_opt = getattr(optim, name)(pf_params, **kw)
    th_opt = getattr(torch.optim, name)(th_params, **kw)
    run_both(pf_opt, th_opt, pf_params, th_params, "float64", steps=5)

    sd, tsd = pf_opt.state_dict(), th_opt.state_dict()
    assert sorted(sd) == ["param_groups", "state"]
    assert sd["param_groups"][0].keys() == tsd["param_groups"][0].keys()
    assert sd["param_groups"][0]["params"] == tsd["param_groups"][0]["params"] == [0, 1]
    assert sorted(sd["state"]) == sorted(tsd["state"]) == [0, 1]
    for i in (0, 1):
        assert sorted(sd["state"][i]) == sorted(tsd["state"][i])
    # copies: stepping on does not change what was saved
    saved = {k: v.numpy().copy() for k, v in sd["state"][0].items()}

    # a fresh optimizer over copies of the parameters continues exactly as the original
    clones = [p.detach().clone().requires_grad_() for p in pf_params]
    fresh = getattr(optim, name)(clones, lr=123.0)
    fresh.load_state_dict(sd)
    assert fresh.param_groups[0]["lr"] == 0.05 and fresh.param_groups[0]["params"][0] is clones[0]
    for _ in range(5):
        set_grads(pf_params, th_params)
        for p, c in zip(pf_params, clones, strict=True):
            c.grad = p.grad.clone()
        pf_opt.step()
        fresh.step()
        th_opt.step()
    for p, c in zip(pf_params, clones, strict=True):
        np.testing.assert_array_equal(p.detach().numpy(), c.detach().numpy())
    assert_same(clones, th_params, "float64")
    for k, v in saved.items():
        np.testing.assert_array_equal(sd["state"][0][k].numpy(), v)


def test_load_state_dict_casts_to_param_dtype():
    p64, _ = make_params("float64")
    opt = optim.Adam(p64, lr=0.05)
    p64[0].grad, p64[1].grad = pyframe.ones(4, 3, dtype=pyframe.float64), pyframe.ones(3, dtype=pyframe.float64)
    opt.step()
    p32, _ = make_params("float32")
    opt32 = optim.Adam(p32)
    opt32.load_state_dict(opt.state_dict())
    st = opt32.state[p32[0]]
    assert st["exp_avg"].dtype == pyframe.float32 and st["exp_avg_sq"].dtype == pyframe.float32
    assert st["step"].dtype == pyframe.float32 and float(st["step"]) == 1  # step is kept as saved
    p32[0].grad, p32[1].grad = pyframe.ones(4, 3), pyframe.ones(3)
    opt32.step()
    assert float(st["step"]) == 2


def test_load_state_dict_errors():
    pf_params, _ = make_params("float64")
    opt = optim.SGD(pf_params, lr=0.1, momentum=0.9)
    for p in pf_params:
        p.grad = pyframe.ones_like(p)
    opt.step()
    sd = opt.state_dict()

    two_groups = optim.SGD([{"params": [pf_params[0]]}, {"params": [pf_params[1]]}], lr=0.1)
    with pytest.raises(ValueError, match="different number of parameter groups"):
        two_groups.load_state_dict(sd)
    one = optim.SGD([pf_params[0]], lr=0.1)
    with pytest.raises(ValueError, match="doesn't match the size of optimizer's group"):
        one.load_state_dict(sd)
    with pytest.raises(ValueError, match="param_groups"):
        opt.load_state_dict({"state": {}})
    with pytest.raises(TypeError):
        opt.load_state_dict([1, 2])
    swapped = optim.SGD(pf_params[::-1], lr=0.5, momentum=0.9)  # state shapes do not fit the parameters
    with pytest.raises(ValueError, match="momentum_buffer"):
        swapped.load_state_dict(sd)
    # a failed load changes nothing
    assert not swapped.state and swapped.param_groups[0]["lr"] == 0.5
    assert one.param_groups[0]["momentum"] == 0 and not one.state
    assert len(two_groups.param_groups) == 2 and not two_groups.state


# ---- groups, zero_grad, closure -------------------------------------------------------


def test_param_groups_with_different_lr():
    pf_params, th_params = make_params("float64")
    pf_opt = optim.SGD([{"params": [pf_params[0]]}, {"params": [pf_params[1]], "lr": 0.2}], lr=0.01, momentum=0.5)
    th_opt = torch.optim.SGD([{"params": [th_params[0]]}, {"params": [th_params[1]], "lr": 0.2}], lr=0.01,
                             momentum=0.5)  # fmt: skip
    assert [g["lr"] for g in pf_opt.param_groups] == [0.01, 0.2]
    assert pf_opt.param_groups[1]["momentum"] == 0.5
    run_both(pf_opt, th_opt, pf_params, th_params, "float64")
    # changing a group's lr between steps (what an lr scheduler does)
    pf_opt.param_groups[0]["lr"] = th_opt.param_groups[0]["lr"] = 0.3
    run_both(pf_opt, th_opt, pf_params, th_params, "float64", steps=3)


def test_add_param_group():
    pf_params, _ = make_params("float32")
    opt = optim.Adam([pf_params[0]], lr=0.1)
    opt.add_param_group({"params": pf_params[1], "betas": (0.5, 0.6)})
    g = opt.param_groups[1]
    assert len(g["params"]) == 1 and g["params"][0] is pf_params[1]
    assert g["betas"] == (0.5, 0.6) and g["lr"] == 0.1 and g["eps"] == 1e-8
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": [pf_params[0]]})
    x = pyframe.randn(3, requires_grad=True)
    with pytest.raises(ValueError, match="duplicate"):
        optim.SGD([x, x])
    with pytest.raises(ValueError, match="non-leaf"):
        optim.SGD([x * 2])
    with pytest.raises(TypeError, match="only optimize Tensors"):
        optim.SGD([x, 3.0])
    with pytest.raises(TypeError, match="iterable of Tensors"):
        optim.SGD(x)
    with pytest.raises(TypeError, match="ordered collections"):
        opt.add_param_group({"params": {pyframe.randn(2, requires_grad=True)}})
    with pytest.raises(ValueError, match="empty parameter list"):
        optim.Adam([])
    with pytest.raises(TypeError, match="must be a dict"):
        opt.add_param_group([x])
    assert len(opt.param_groups) == 2
    named = optim.SGD([("w", pf_params[0]), ("b", pf_params[1])])
    assert named.param_groups[0]["param_names"] == ["w", "b"]
    assert named.param_groups[0]["params"][1] is pf_params[1]


def test_zero_grad():
    pf_params, _ = make_params("float32")
    opt = optim.SGD(pf_params, lr=0.1)
    grads = [pyframe.ones_like(p) for p in pf_params]
    for p, g in zip(pf_params, grads, strict=True):
        p.grad = g
    opt.zero_grad(set_to_none=False)
    for p, g in zip(pf_params, grads, strict=True):
        assert p.grad is g and not g.numpy().any()
    opt.zero_grad()
    assert all(p.grad is None for p in pf_params)


def test_step_skips_params_without_grad_and_bumps_version():
    pf_params, _ = make_params("float32")
    w, b = pf_params
    opt = optim.Adam(pf_params, lr=0.1)
    w.grad = pyframe.ones_like(w)
    before_w, before_b, version = w.detach().numpy().copy(), b.detach().numpy().copy(), w._version
    opt.step()
    assert w._version > version
    assert b not in opt.state and len(opt.state) == 1
    np.testing.assert_array_equal(b.detach().numpy(), before_b)
    assert np.all(w.detach().numpy() < before_w)
    assert w.requires_grad and w.is_leaf and w.grad_fn is None


def test_closure():
    pf_params, th_params = make_params("float64")
    a, y = pyframe.tensor(A), pyframe.tensor(Y)
    calls = []
    opt = optim.SGD(pf_params, lr=0.01)

    def closure():
        calls.append(pyframe.is_grad_enabled())
        opt.zero_grad()
        loss = ((a @ pf_params[0] + pf_params[1] - y) ** 2).sum()
        loss.backward()
        return loss

    with pyframe.no_grad():  # the closure still runs with grad enabled
        loss = opt.step(closure)
    assert calls == [True] and isinstance(loss, pyframe.Tensor)
    assert opt.step() is None
    loss2 = opt.step(closure)
    assert loss2.item() < loss.item()


def test_noncontiguous_grad_and_param():
    x = pyframe.tensor(W0.T.copy()).t().detach().requires_grad_()  # a non-contiguous leaf [4, 3]
    assert not x.is_contiguous()
    q = torch.tensor(W0, requires_grad=True)
    pf_opt, th_opt = optim.SGD([x], lr=0.1, momentum=0.9), torch.optim.SGD([q], lr=0.1, momentum=0.9)
    for s in range(3):
        g = np.cos(W0 * (s + 1))
        x.grad = pyframe.tensor(g.T.copy()).t()  # non-contiguous too
        q.grad = torch.tensor(g)
        pf_opt.step()
        th_opt.step()
    np.testing.assert_allclose(x.detach().numpy(), q.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_bad_grad_and_dtype():
    x = pyframe.randn(3, requires_grad=True)
    opt = optim.Adam([x])
    with pytest.raises(RuntimeError, match="size"):  # refused at assignment, as torch
        x.grad = pyframe.ones(4)
    # the optimizer still defends against a gradient that got past the assignment check
    x._grad = pyframe.ones(4)
    with pytest.raises(ValueError, match="does not match"):
        opt.step()
    x._grad = pyframe.ones(3, dtype=pyframe.float64)
    with pytest.raises(TypeError, match="dtype"):
        opt.step()
    x._grad = [1.0, 2.0, 3.0]
    with pytest.raises(TypeError, match="grad must be a Tensor"):
        opt.step()
    h = pyframe.randn(3, dtype=pyframe.float16, requires_grad=True)
    h.grad = pyframe.ones(3, dtype=pyframe.float16)
    with pytest.raises(TypeError, match="float16"):
        optim.SGD([h], lr=0.1, momentum=0.9).step()


# ---- hyperparameter validation: torch's messages -------------------------------------------


@pytest.mark.parametrize("name,kw", [
    ("SGD", dict(lr=-1)),
    ("SGD", dict(lr=0.1, momentum=-0.5)),
    ("SGD", dict(lr=0.1, weight_decay=-1e-3)),
    ("SGD", dict(lr=0.1, nesterov=True)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)),
    ("Adam", dict(lr=-0.5)),
    ("Adam", dict(eps=-1.0)),
    ("Adam", dict(betas=(1.0, 0.999))),
    ("Adam", dict(betas=(0.9, -0.1))),
    ("Adam", dict(weight_decay=-1.0)),
    ("AdamW", dict(lr=-1e-3)),
    ("AdamW", dict(betas=(0.9, 1.5))),
])  # fmt: skip
def test_bad_hyperparameters(name, kw):
    with pytest.raises(ValueError) as want:
        getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **kw)
    with pytest.raises(ValueError) as got:
        getattr(optim, name)([pyframe.zeros(2, requires_grad=True)], **kw)
    assert str(got.value) == str(want.value)


def test_repr():
    opt = optim.SGD([pyframe.zeros(2, requires_grad=True)], lr=0.1)
    tref = torch.optim.SGD([torch.zeros(2, requires_grad=True)], lr=0.1)
    assert repr(opt) == repr(tref)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"])
def test_a_refused_step_changes_nothing(name):
    """Every parameter is checked before the first is stepped: an unwritable (expanded)
    parameter late in the list leaves earlier parameters and all state as they were.
    (Mismatched gradients are refused earlier, when assigned to .grad.)"""
    good = pyframe.nn.Parameter(pyframe.ones(3))
    late = pyframe.nn.Parameter(pyframe.ones(1, 3).expand(4, 3))
    kwargs = {"momentum": 0.9} if name == "SGD" else {}
    opt = getattr(pyframe.optim, name)([good, late], lr=0.1, **kwargs)
    before = {id(p): {k: v.clone() if isinstance(v, pyframe.Tensor) else v for k, v in s.items()}
              for p, s in opt.state.items()}  # fmt: skip
    good.grad = pyframe.ones(3)
    late.grad = pyframe.ones(4, 3)
    with pytest.raises(RuntimeError, match="single memory location"):
        opt.step()
    assert good.tolist() == [1.0, 1.0, 1.0]
    after = {id(p): s for p, s in opt.state.items()}
    assert after.keys() == before.keys()
    for key, state in before.items():
        for k, v in state.items():
            w = after[key][k]
            assert (w.tolist() == v.tolist()) if isinstance(v, pyframe.Tensor) else w == v
