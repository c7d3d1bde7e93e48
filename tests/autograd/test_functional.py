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
