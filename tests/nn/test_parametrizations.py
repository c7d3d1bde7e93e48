"""The shipped parametrizations against torch from the same weights and draws: orthogonal (matrix_exp,
cayley, householder; orthogonality, the QR start, errors, gradchecks), weight_norm (values, old weight_g/weight_v
checkpoints) and spectral_norm (power iteration, buffers), and nn.init.orthogonal_'s orientation."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from pyframe import nn
from pyframe.autograd import gradcheck
from pyframe.nn import init
from pyframe.nn.utils import parametrizations as PZ
from tests._helpers import allclose, arr

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


@pytest.mark.parametrize("omap", ["matrix_exp", "householder"])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_orthogonal_is_orthogonal_and_starts_at_the_qr_projection(omap, shape):
    pyframe.manual_seed(1)
    m = nn.Linear(shape[1], shape[0]).double()
    w0 = arr(m.weight).copy()
    PZ.orthogonal(m, orthogonal_map=omap)
    w = arr(m.weight)
    n, k = w.shape
    g = w.T @ w if n >= k else w @ w.T
    assert np.allclose(g, np.eye(min(n, k)), atol=1e-10)
    a = w0 if n >= k else w0.T
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    assert np.allclose(w, q if n >= k else q.T, atol=1e-10)
    # still orthogonal after moving the original (keeping householder's fixed diagonal)
    orig = m.parametrizations.weight.original
    with pyframe.no_grad():
        noise = np.random.default_rng(0).standard_normal(tuple(orig.shape)) * 0.3
        np.fill_diagonal(noise, 0.0)
        orig.add_(pyframe.tensor(noise))
    w = arr(m.weight)
    g = w.T @ w if n >= k else w @ w.T
    assert np.allclose(g, np.eye(min(n, k)), atol=1e-10)
    # assignment of an orthogonal matrix
    target = q if n >= k else q.T
    m.weight = pyframe.tensor(target[::-1].copy())
    assert allclose(m.weight, target[::-1], atol=1e-10)


def test_orthogonal_errors_and_no_trivialization():
    with pytest.raises(ValueError, match="matrix or batch"):
        PZ.orthogonal(nn.Linear(3, 1), "bias")
    with pytest.raises(ValueError, match="orthogonal_map"):
        PZ.orthogonal(nn.Linear(3, 3), orthogonal_map="bogus")
    for omap in ("matrix_exp", "cayley"):  # as torch: no inverse of these maps without a base
        m = PZ.orthogonal(nn.Linear(3, 3).double(), orthogonal_map=omap, use_trivialization=False)
        with pytest.raises(NotImplementedError, match="use_trivialization=False"):
            m.weight = pyframe.eye(3, dtype=pyframe.float64)


@pytest.mark.parametrize("omap", ["matrix_exp", "householder"])
@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_orthogonal_gradcheck(omap, shape):
    pyframe.manual_seed(2)
    m = PZ.orthogonal(nn.Linear(shape[1], shape[0]).double(), orthogonal_map=omap)
    p = m.parametrizations.weight[0]
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape) * 0.5
    if omap == "householder":
        n = min(shape)
        x[np.arange(n), np.arange(n)] = -1.0  # the diagonal is not differentiated (signs)
    X = pyframe.tensor(x, dtype=pyframe.float64, requires_grad=True)
    if omap != "householder":
        assert gradcheck(p.forward, (X,))
    else:  # finite differences must not move the diagonal (its signs are a step function, as in torch)
        off = pyframe.tensor(1.0 - np.eye(*shape), dtype=pyframe.float64)
        diag = pyframe.tensor(x * np.eye(*shape), dtype=pyframe.float64)
        assert gradcheck(lambda Y: p.forward(Y * off + diag), (X,))


def test_weight_norm_values_and_gradcheck():
    m = nn.Linear(4, 3).double()
    w0 = arr(m.weight).copy()
    PZ.weight_norm(m)
    pl = m.parametrizations.weight
    assert pl.original0.shape == (3, 1) and pl.original1.shape == (3, 4)
    assert np.allclose(arr(pl.original0)[:, 0], np.linalg.norm(w0, axis=1))
    assert allclose(m.weight, w0)
    p = pl[0]
    g = pyframe.tensor(np.random.default_rng(0).standard_normal((3, 1)), requires_grad=True)
    v = pyframe.tensor(np.random.default_rng(1).standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(p.forward, (g, v))
    m1 = PZ.weight_norm(nn.Linear(4, 3).double(), dim=1)
    assert m1.parametrizations.weight.original0.shape == (1, 4)
    mn = PZ.weight_norm(nn.Linear(4, 3).double(), dim=None)
    assert mn.parametrizations.weight.original0.shape == ()
    assert gradcheck(mn.parametrizations.weight[0].forward, (g.sum().detach().requires_grad_(), v))


def test_spectral_norm_values_buffers_and_gradcheck():
    pyframe.manual_seed(0)
    m = nn.Linear(5, 4).double()
    PZ.spectral_norm(m)
    sn = m.parametrizations.weight[0]
    assert set(sn._buffers) == {"_u", "_v"}
    assert sn._u.shape == (4,) and sn._v.shape == (5,)
    for _ in range(30):
        w = arr(m.weight)  # training mode: one power iteration per access
    assert abs(np.linalg.svd(w, compute_uv=False)[0] - 1.0) < 1e-6
    u_before = arr(sn._u).copy()
    m.eval()
    m.weight  # noqa: B018
    assert np.array_equal(arr(sn._u), u_before)  # eval: no power iteration
    W = pyframe.tensor(np.random.default_rng(0).standard_normal((4, 5)), requires_grad=True)
    assert gradcheck(sn.forward, (W,))
    assert {"parametrizations.weight.0._u", "parametrizations.weight.0._v"} <= set(m.state_dict())
    with pytest.raises(ValueError):
        PZ.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)
    with pytest.raises(IndexError):
        PZ.spectral_norm(nn.Linear(2, 2), dim=3)
    conv = PZ.spectral_norm(nn.Conv2d(2, 3, 3))
    assert conv.parametrizations.weight[0]._u.shape == (3,)


def _t(x):
    torch = pytest.importorskip("torch")
    return torch.from_numpy(np.ascontiguousarray(arr(x) if isinstance(x, pyframe.Tensor) else x))


def _compare_grads(m, tm, names):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, m.in_features))
    m(pyframe.tensor(x)).pow(2).sum().backward()
    tm(torch.from_numpy(x)).pow(2).sum().backward()
    for name in names:
        ours = dict(m.named_parameters())[name]
        theirs = dict(tm.named_parameters())[name]
        assert np.allclose(arr(ours.grad), theirs.grad.numpy(), atol=1e-10), name


def _linear_twins(torch, n_in: int, n_out: int):
    """A float64 pyframe Linear and a torch one with the same weights."""
    m = nn.Linear(n_in, n_out).double()
    tm = torch.nn.Linear(n_in, n_out).double()
    with torch.no_grad():
        tm.weight.copy_(_t(m.weight))
        tm.bias.copy_(_t(m.bias))
    return m, tm


def test_weight_norm_matches_torch():
    torch = pytest.importorskip("torch")
    m, tm = _linear_twins(torch, 5, 3)
    PZ.weight_norm(m)
    torch.nn.utils.parametrizations.weight_norm(tm)
    assert set(m.state_dict()) == set(tm.state_dict())
    for k, v in m.state_dict().items():
        assert np.allclose(arr(v), tm.state_dict()[k].numpy()), k
    assert np.allclose(arr(m.weight), tm.weight.detach().numpy())
    _compare_grads(m, tm, ["parametrizations.weight.original0", "parametrizations.weight.original1"])


@pytest.mark.parametrize("training", [True, False])
def test_spectral_norm_matches_torch(training):
    torch = pytest.importorskip("torch")
    m, tm = _linear_twins(torch, 5, 3)
    PZ.spectral_norm(m)
    torch.nn.utils.parametrizations.spectral_norm(tm)
    sn, tsn = m.parametrizations.weight[0], tm.parametrizations.weight[0]
    with pyframe.no_grad():  # same starting vectors
        sn._u.copy_(pyframe.tensor(tsn._u.numpy()))
        sn._v.copy_(pyframe.tensor(tsn._v.numpy()))
    m.train(training)
    tm.train(training)
    assert set(m.state_dict()) == set(tm.state_dict())
    assert np.allclose(arr(m.weight), tm.weight.detach().numpy(), atol=1e-12)
    assert np.allclose(arr(sn._u), tsn._u.numpy(), atol=1e-12)
    _compare_grads(m, tm, ["parametrizations.weight.original"])


@pytest.mark.parametrize("omap", ["matrix_exp", "householder"])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_orthogonal_matches_torch(omap, shape):
    torch = pytest.importorskip("torch")
    m, tm = _linear_twins(torch, shape[1], shape[0])
    PZ.orthogonal(m, orthogonal_map=omap)
    torch.nn.utils.parametrizations.orthogonal(tm, orthogonal_map=omap)
    if shape[0] == shape[1]:  # deterministic projection: the same starting point
        assert np.allclose(arr(m.weight), tm.weight.detach().numpy(), atol=1e-10)
    # same base (torch completes a rectangular one randomly) and the same moved original
    noise = np.random.default_rng(0).standard_normal(shape) * 0.3
    np.fill_diagonal(noise, 0.0)
    with torch.no_grad(), pyframe.no_grad():
        m.parametrizations.weight[0].base = pyframe.tensor(tm.parametrizations.weight[0].base.numpy())
        m.parametrizations.weight.original.add_(pyframe.tensor(noise))
        tm.parametrizations.weight.original.add_(torch.from_numpy(noise))
    assert np.allclose(arr(m.weight), tm.weight.detach().numpy(), atol=1e-10)
    _compare_grads(m, tm, ["parametrizations.weight.original"])


def test_weight_norm_loads_old_weight_g_weight_v_keys():
    m = PZ.weight_norm(nn.Linear(3, 2))
    pl = m.parametrizations.weight
    old = {"bias": m.bias.detach(), "weight_g": pl.original0.detach() * 2, "weight_v": pl.original1.detach()}
    m.load_state_dict(old)
    assert allclose(pl.original0, old["weight_g"])
