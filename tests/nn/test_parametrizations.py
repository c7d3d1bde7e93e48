"""orthogonal's maps built on pyframe.linalg ("cayley", "householder" without trivialization) and
nn.init.orthogonal_'s orientation, against torch from the same weights and the same draws."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from pyframe import nn
from pyframe.autograd import gradcheck
from pyframe.nn import init
from pyframe.nn.utils import parametrizations as PZ

SHAPES = [(4, 4), (5, 3), (3, 5)]


def _linear_pair(torch, shape):
    m = nn.Linear(shape[1], shape[0]).double()
    tm = torch.nn.Linear(shape[1], shape[0]).double()
    with torch.no_grad():
        tm.weight.copy_(torch.from_numpy(m.weight.detach().numpy().copy()))
    return m, tm


@pytest.mark.parametrize("omap", ["matrix_exp", "cayley", "householder"])
@pytest.mark.parametrize("trivial", [True, False])
@pytest.mark.parametrize("shape", SHAPES)
def test_orthogonal_maps_match_torch(omap, trivial, shape):
    torch = pytest.importorskip("torch")
    pyframe.manual_seed(0)
    m, tm = _linear_pair(torch, shape)
    PZ.orthogonal(m, orthogonal_map=omap, use_trivialization=trivial)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=omap, use_trivialization=trivial)
    pm, ptm = m.parametrizations.weight, tm.parametrizations.weight
    with torch.no_grad(), pyframe.no_grad():
        if trivial:  # torch completes a rectangular base with its own random columns: share it
            pm[0].base = pyframe.tensor(ptm[0].base.numpy().copy())
        else:  # the original after registration: householder's right_inverse (geqrf) equals torch's
            np.testing.assert_allclose(pm.original.detach().numpy(), ptm.original.numpy(), atol=1e-12)
        noise = np.random.default_rng(1).standard_normal(shape) * 0.3
        np.fill_diagonal(noise, 0.0)  # householder's diagonal holds signs
        pm.original.copy_(pyframe.tensor(ptm.original.numpy() + noise))
        ptm.original.add_(torch.from_numpy(noise))
    w = m.weight
    np.testing.assert_allclose(w.detach().numpy(), tm.weight.detach().numpy(), atol=1e-12)
    n, k = shape
    g = w.detach().numpy()
    gram = g.T @ g if n >= k else g @ g.T
    np.testing.assert_allclose(gram, np.eye(min(n, k)), atol=1e-12)
    target = np.random.default_rng(2).standard_normal(shape)
    ((w - pyframe.tensor(target)) ** 2).sum().backward()
    ((tm.weight - torch.from_numpy(target)) ** 2).sum().backward()
    np.testing.assert_allclose(pm.original.grad.numpy(), ptm.original.grad.numpy(), atol=1e-10)


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_cayley_gradcheck(shape):
    m = PZ.orthogonal(nn.Linear(shape[1], shape[0]).double(), orthogonal_map="cayley")
    p = m.parametrizations.weight[0]
    X = pyframe.tensor(np.random.default_rng(3).standard_normal(shape) * 0.5, requires_grad=True)
    assert gradcheck(p.forward, (X,))


def test_householder_without_trivialization_assigns_through_qr():
    m = PZ.orthogonal(nn.Linear(3, 5).double(), orthogonal_map="householder", use_trivialization=False)
    q, _ = np.linalg.qr(np.random.default_rng(4).standard_normal((5, 3)))
    m.weight = pyframe.tensor(q)
    np.testing.assert_allclose(m.weight.detach().numpy(), q, atol=1e-12)
    assert "base" not in m.parametrizations.weight[0]._buffers


@pytest.mark.parametrize("shape", [(6, 6), (10, 4), (4, 10), (5, 3, 2, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_orthogonal_init_matches_torch_from_the_same_draws(monkeypatch, shape, dtype):
    torch = pytest.importorskip("torch")
    rows, cols = shape[0], int(np.prod(shape[1:]))
    draws = np.random.default_rng(5).standard_normal((rows, cols))
    # both libraries fill a fresh (rows, cols) tensor with N(0, 1): hand each the same numbers
    monkeypatch.setattr(init, "normal_", lambda t, *a, **k: t.copy_(pyframe.tensor(draws, dtype=t.dtype)))
    monkeypatch.setattr(torch.Tensor, "normal_", lambda t, *a, **k: t.copy_(torch.from_numpy(draws)))
    w = init.orthogonal_(pyframe.empty(*shape, dtype=getattr(pyframe, dtype)), gain=1.5)
    tw = torch.nn.init.orthogonal_(torch.empty(*shape, dtype=getattr(torch, dtype)), gain=1.5)
    np.testing.assert_allclose(w.numpy(), tw.numpy(), atol=1e-5 if dtype == "float32" else 1e-12)


def test_orthogonal_init_orientation_without_torch(monkeypatch):
    # rows >= cols: the columns of the draws are orthonormalised (Q of their QR, R's diagonal positive)
    draws = np.random.default_rng(6).standard_normal((5, 3))
    monkeypatch.setattr(init, "normal_", lambda t, *a, **k: t.copy_(pyframe.tensor(draws)))
    w = init.orthogonal_(pyframe.empty(5, 3, dtype=pyframe.float64)).numpy()
    q, r = np.linalg.qr(draws)
    np.testing.assert_allclose(w, q * np.sign(np.diag(r)), atol=1e-12)
