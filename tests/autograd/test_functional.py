"""torch.autograd.functional and torch.func (pyframe/autograd/functional.py, pyframe/func.py) against torch: each
transform on the same function and inputs, nested transforms, vmap over grad, functional_call's swap and restore."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf

torch = pytest.importorskip("torch")

X = np.random.default_rng(0).normal(size=3)

CASES = {
    "af.jacobian": lambda lib: lambda x: lib.autograd.functional.jacobian(lambda t: t.exp() * t.sum(), x),
    "af.jacobian_tuple": lambda lib: lambda x: lib.autograd.functional.jacobian(
        lambda a, b: (a * b, a.sum() * b), (x, x * 2)),
    "af.hessian": lambda lib: lambda x: lib.autograd.functional.hessian(lambda t: (t.sin() * t).sum(), x),
    "af.vjp": lambda lib: lambda x: lib.autograd.functional.vjp(lambda t: t.exp(), x, x * 2)[1],
    "af.jvp": lambda lib: lambda x: lib.autograd.functional.jvp(lambda t: t.exp() * t, x, x * 2)[1],
    "af.hvp": lambda lib: lambda x: lib.autograd.functional.hvp(lambda t: (t.sin() * t).sum(), x, x)[1],
    "af.vhp": lambda lib: lambda x: lib.autograd.functional.vhp(lambda t: (t.sin() * t**2).sum(), x, x)[1],
    "func.grad": lambda lib: lambda x: lib.func.grad(lambda t: (t.sin() * t).sum())(x),
    "func.grad_argnums": lambda lib: lambda x: lib.func.grad(lambda a, b: (a * b.exp()).sum(), argnums=(0, 1))(x, x),
    "func.grad_of_grad": lambda lib: lambda x: lib.func.grad(
        lambda t: lib.func.grad(lambda u: (u**3).sum())(t).sum())(x),
    "func.jacrev": lambda lib: lambda x: lib.func.jacrev(lambda t: t.exp() * t.sum())(x),
    "func.jacfwd": lambda lib: lambda x: lib.func.jacfwd(lambda t: t.sin() * t.sum())(x),
    "func.hessian": lambda lib: lambda x: lib.func.hessian(lambda t: (t.sin() * t).sum())(x),
    "func.vmap_grad": lambda lib: lambda x: lib.func.vmap(lib.func.grad(lambda t: (t**2).sum()))(x.reshape(3, 1)),
    "func.vmap_in_dims": lambda lib: lambda x: lib.func.vmap(lambda a, b: a * b, in_dims=(0, None))(
        x.reshape(3, 1), x),
    "func.vjp": lambda lib: lambda x: lib.func.vjp(lambda t: t.exp(), x)[1](x)[0],
    "func.jvp": lambda lib: lambda x: lib.func.jvp(lambda t: t.exp() * t, (x,), (x * 2,))[1],
}  # fmt: skip


def _flat(r):
    return [t for x in r for t in _flat(x)] if isinstance(r, (tuple, list)) else [r]


@pytest.mark.parametrize("name", list(CASES))
def test_transform_matches_torch(name):
    ours = _flat(CASES[name](pf)(pf.tensor(X)))
    theirs = _flat(CASES[name](torch)(torch.tensor(X)))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert tuple(a.shape) == tuple(b.shape)
        assert not a.requires_grad  # the outermost transform returns plain tensors, as torch
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_functional_call_swaps_and_restores():
    m = pf.nn.Linear(3, 2)
    before = m.weight.detach().clone()
    w = pf.ones(2, 3, requires_grad=True)
    out = pf.func.functional_call(m, {"weight": w}, (pf.ones(1, 3),))
    out.sum().backward()
    assert w.grad.tolist() == [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    assert m.weight.grad is None and pf.equal(m.weight.detach(), before)
    with pytest.raises(AttributeError):
        pf.func.functional_call(m, {"nope": w}, (pf.ones(1, 3),))


def _model_pair(torch):
    net = pf.nn.Sequential(pf.nn.Linear(3, 4), pf.nn.Tanh(), pf.nn.Linear(4, 2))
    tnet = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    tnet.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in net.state_dict().items()})
    return net, tnet


def test_jacrev_and_jvp_over_a_dict_of_parameters_match_torch():
    # the neural-tangent-kernel recipe: jacobians by a parameter dict, jvp with dict primals and tangents
    torch = pytest.importorskip("torch")
    net, tnet = _model_pair(torch)
    x = pf.randn(3)
    tx = torch.from_numpy(x.numpy().copy())
    params = {k: v.detach() for k, v in net.named_parameters()}
    tparams = {k: v.detach() for k, v in tnet.named_parameters()}
    jac = pf.func.jacrev(lambda p, x: pf.func.functional_call(net, p, (x,)))(params, x)
    tjac = torch.func.jacrev(lambda p, x: torch.func.functional_call(tnet, p, (x,)))(tparams, tx)
    assert set(jac) == set(tjac)
    for k in jac:
        np.testing.assert_allclose(jac[k].numpy(), tjac[k].numpy(), rtol=1e-5, atol=1e-6)
    tangents = {k: pf.ones_like(v) for k, v in params.items()}
    out, t = pf.func.jvp(lambda p: pf.func.functional_call(net, p, (x,)), (params,), (tangents,))
    tout, tt = torch.func.jvp(lambda p: torch.func.functional_call(tnet, p, (tx,)), (tparams,),
                              ({k: torch.ones_like(v) for k, v in tparams.items()},))  # fmt: skip
    np.testing.assert_allclose(t.numpy(), tt.numpy(), rtol=1e-5, atol=1e-6)


def test_stack_module_state_stacks_parameters_and_buffers_like_torch():
    torch = pytest.importorskip("torch")
    models = [pf.nn.Sequential(pf.nn.Linear(3, 2), pf.nn.BatchNorm1d(2)) for _ in range(3)]
    params, buffers = pf.func.stack_module_state(models)
    tparams, tbuffers = torch.func.stack_module_state(
        [torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2)) for _ in range(3)]
    )
    assert list(params) == list(tparams) and list(buffers) == list(tbuffers)
    for k, v in params.items():
        assert v.shape == tuple(tparams[k].shape) and v.is_leaf and v.requires_grad
        np.testing.assert_array_equal(v[1].detach().numpy(), dict(models[1].named_parameters())[k].detach().numpy())
    for k, v in buffers.items():
        assert v.shape == tuple(tbuffers[k].shape)
    x = pf.randn(3, 5, 3)
    out = pf.func.vmap(lambda p, b, xb: pf.func.functional_call(models[0], (p, b), (xb,)))(params, buffers, x)
    for i, m in enumerate(models):
        np.testing.assert_allclose(out[i].detach().numpy(), m(x[i]).detach().numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="at least one model"):
        pf.func.stack_module_state([])
    with pytest.raises(RuntimeError, match="same class"):
        pf.func.stack_module_state([pf.nn.Linear(2, 2), pf.nn.Sequential(pf.nn.Linear(2, 2))])
