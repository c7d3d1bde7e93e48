"""Writes at indices: scatter_reduce, index_reduce, index_add, index_put, put, masked_scatter, the *_scatter ops and
as_strided, against torch (values and float64 gradients) and finite differences, with their error cases."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from tests._helpers import fd_gradcheck

RNG = np.random.default_rng(7)


def _both(torch, a, dtype="float64", grad=False):
    """The same array as a torch and a pyframe tensor."""
    t = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=grad)
    p = pyframe.tensor(a, dtype=getattr(pyframe, dtype), requires_grad=grad)
    return t, p


def _close(p, t):
    np.testing.assert_allclose(np.asarray(p.detach().numpy()), t.detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_values_and_gradients_match_torch(reduce, include_self):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 5))
    src = RNG.standard_normal((3, 5))
    src[0, 1] = 0.0  # a zero for prod's special cases
    src[1, 2] = src[2, 2] = 5.0  # a tie for amax
    index = np.array([[0, 1, 3, 0, 2], [0, 1, 3, 3, 2], [2, 1, 3, 0, 2]])
    tx, px = _both(torch, x, grad=True)
    ts, ps = _both(torch, src, grad=True)
    ti, pi = torch.tensor(index), pyframe.tensor(index)
    tout = torch.scatter_reduce(tx, 0, ti, ts, reduce, include_self=include_self)
    pout = pyframe.scatter_reduce(px, 0, pi, ps, reduce, include_self=include_self)
    _close(pout, tout)
    cot = RNG.standard_normal((4, 5))
    tg = torch.autograd.grad(tout, (tx, ts), torch.tensor(cot))
    pg = pyframe.autograd.grad(pout, (px, ps), pyframe.tensor(cot))
    for p, t in zip(pg, tg, strict=True):
        _close(p, t)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_integers_and_in_place(reduce):
    torch = pytest.importorskip("torch")
    x = RNG.integers(-9, 9, (6,))
    src = RNG.integers(-9, 9, (5,))
    index = np.array([0, 0, 2, 5, 0])
    for include_self in (True, False):
        want = torch.tensor(x).scatter_reduce(0, torch.tensor(index), torch.tensor(src), reduce,
                                              include_self=include_self)  # fmt: skip
        got = pyframe.tensor(x)
        got.scatter_reduce_(0, pyframe.tensor(index), pyframe.tensor(src), reduce, include_self=include_self)
        np.testing.assert_array_equal(got.numpy(), want.numpy())  # integer means round toward -inf


def test_scatter_reduce_refuses_bad_input():
    x = pyframe.zeros(3)
    with pytest.raises(RuntimeError, match="reduce"):
        pyframe.scatter_reduce(x, 0, pyframe.tensor([0]), pyframe.ones(1), "max")
    with pytest.raises(RuntimeError, match="dtype"):
        pyframe.scatter_reduce(x, 0, pyframe.tensor([0]), pyframe.ones(1, dtype=pyframe.float64), "sum")
    with pytest.raises(IndexError, match="out of bounds"):
        pyframe.scatter_reduce(x, 0, pyframe.tensor([3]), pyframe.ones(1), "sum")
    with pytest.raises(RuntimeError, match="dtype"):  # scatter and scatter_add take one dtype too, as torch
        pyframe.scatter_add(x, 0, pyframe.tensor([0]), pyframe.ones(1, dtype=pyframe.float64))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce_matches_torch(reduce):
    torch = pytest.importorskip("torch")
    x, src = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 5))
    index = np.array([0, 3, 3, 1, 0])
    tx, px = _both(torch, x, grad=True)
    ts, ps = _both(torch, src, grad=True)
    for include_self in (True, False):
        tout = tx.index_reduce(1, torch.tensor(index), ts, reduce, include_self=include_self)
        pout = px.index_reduce(1, pyframe.tensor(index), ps, reduce, include_self=include_self)
        _close(pout, tout)
        cot = RNG.standard_normal((3, 4))
        for p, t in zip(pyframe.autograd.grad(pout, (px, ps), pyframe.tensor(cot)),
                        torch.autograd.grad(tout, (tx, ts), torch.tensor(cot)), strict=True):  # fmt: skip
            _close(p, t)
    with pytest.raises(ValueError, match="source has shape"):
        px.index_reduce(1, pyframe.tensor([0, 1]), ps, reduce)


def test_index_add_function_and_index_put_accumulate():
    torch = pytest.importorskip("torch")
    x, src = RNG.standard_normal((4, 3)), RNG.standard_normal((5, 3))
    idx = np.array([0, 2, 2, 3, 0])
    tx, px = _both(torch, x)
    ts, ps = _both(torch, src)
    _close(pyframe.index_add(px, 0, pyframe.tensor(idx), ps, alpha=2.0),
           torch.index_add(tx, 0, torch.tensor(idx), ts, alpha=2.0))  # fmt: skip
    for accumulate in (False, True):
        want = tx.index_put((torch.tensor([0, 1, 0]), torch.tensor([2, 2, 2])), torch.tensor([1.0, 2.0, 3.0],
                            dtype=torch.float64), accumulate=accumulate)  # fmt: skip
        got = px.index_put((pyframe.tensor([0, 1, 0]), pyframe.tensor([2, 2, 2])), pyframe.tensor([1.0, 2.0, 3.0],
                           dtype=pyframe.float64), accumulate=accumulate)  # fmt: skip
        if accumulate:  # an assignment's repeated position may keep either value; a sum is exact
            _close(got, want)
    fd_gradcheck(lambda a, v: pyframe.index_put(a, (pyframe.tensor([1, 1, 3]),), v, accumulate=True), x,
                 RNG.standard_normal((3, 3)))  # fmt: skip


def test_put_take_and_masked_scatter():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((3, 4))
    tx, px = _both(torch, x, grad=True)
    idx = np.array([[0, -1], [5, 5]])
    src = RNG.standard_normal((2, 2))
    ts, ps = _both(torch, src, grad=True)
    for acc in (False, True):
        tout, pout = tx.put(torch.tensor(idx), ts, accumulate=acc), px.put(pyframe.tensor(idx), ps, accumulate=acc)
        if acc:
            _close(pout, tout)
            cot = RNG.standard_normal((3, 4))
            for p, t in zip(pyframe.autograd.grad(pout, (px, ps), pyframe.tensor(cot)),
                            torch.autograd.grad(tout, (tx, ts), torch.tensor(cot)), strict=True):  # fmt: skip
                _close(p, t)
    with pytest.raises(IndexError):
        px.put(pyframe.tensor([12]), pyframe.ones(1, dtype=pyframe.float64))
    mask = RNG.random((3, 4)) > 0.5
    source = RNG.standard_normal(12)
    _close(pyframe.masked_scatter(px, pyframe.tensor(mask), pyframe.tensor(source)),
           torch.masked_scatter(tx, torch.tensor(mask), torch.tensor(source)))  # fmt: skip
    fd_gradcheck(lambda a, s: pyframe.masked_scatter(a, pyframe.tensor(mask), s), x, source)
    with pytest.raises(RuntimeError, match="at least"):
        pyframe.masked_scatter(px, pyframe.tensor(mask), pyframe.zeros(0, dtype=pyframe.float64))
    y = pyframe.zeros(4)
    y.masked_scatter_(pyframe.tensor([True, False, True, False]), pyframe.tensor([1.0, 2.0]))
    np.testing.assert_array_equal(y.numpy(), [1, 0, 2, 0])


def test_view_scatters_match_torch_and_their_gradients():
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal((4, 5))
    tx, px = _both(torch, x)
    cases = [
        ("diagonal_scatter", RNG.standard_normal(4), dict(offset=1), dict(offset=1)),
        ("select_scatter", RNG.standard_normal(5), dict(dim=0, index=-1), dict(dim=0, index=-1)),
        ("slice_scatter", RNG.standard_normal((4, 2)), dict(dim=1, start=1, end=5, step=2),
         dict(dim=1, start=1, end=5, step=2)),
    ]  # fmt: skip
    for name, src, tkw, pkw in cases:
        ts, ps = _both(torch, src)
        _close(getattr(pyframe, name)(px, ps, **pkw), getattr(torch, name)(tx, ts, **tkw))
        fd_gradcheck(lambda a, s, name=name, pkw=pkw: getattr(pyframe, name)(a, s, **pkw), x, src)
    with pytest.raises(RuntimeError, match="size"):
        pyframe.select_scatter(px, pyframe.zeros(4, dtype=pyframe.float64), 0, 0)


def test_as_strided_views_share_storage_and_add_up_gradients():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal(10)
    ta, pa = _both(torch, a, grad=True)
    tv, pv = torch.as_strided(ta, (3, 3), (1, 2), 1), pyframe.as_strided(pa, (3, 3), (1, 2), 1)  # overlapping
    _close(pv, tv)
    cot = RNG.standard_normal((3, 3))
    _close(pyframe.autograd.grad(pv, pa, pyframe.tensor(cot))[0], torch.autograd.grad(tv, ta, torch.tensor(cot))[0])
    base = pyframe.zeros(6)
    view = base.as_strided((2,), (3,), 1)
    view.fill_(1.0)
    np.testing.assert_array_equal(base.numpy(), [0, 1, 0, 0, 1, 0])  # a view: writes reach the storage
    ones = np.ones((2, 2))
    _close(pyframe.as_strided_scatter(pyframe.tensor(a), pyframe.tensor(ones), (2, 2), (1, 3)),
           torch.as_strided_scatter(torch.tensor(a), torch.tensor(ones), (2, 2), (1, 3)))  # fmt: skip
    with pytest.raises(RuntimeError, match="storage"):
        pyframe.as_strided(pa, (3,), (5,))


def test_unfold_windows_match_torch_and_share_memory():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((3, 7))
    ta, pa = _both(torch, a, grad=True)
    for dim, size, step in ((1, 3, 2), (1, 2, 1), (0, 3, 1), (-1, 7, 3)):
        tv, pv = ta.unfold(dim, size, step), pa.unfold(dim, size, step)
        _close(pv, tv)
        cot = RNG.standard_normal(tuple(tv.shape))
        _close(pyframe.autograd.grad(pv, pa, pyframe.tensor(cot))[0],
               torch.autograd.grad(tv, ta, torch.tensor(cot))[0])  # fmt: skip
    base = pyframe.zeros(5)
    base.unfold(0, 2, 2)[1].fill_(3.0)
    assert base.numpy().tolist() == [0, 0, 3, 3, 0]
    np.testing.assert_array_equal(pyframe.unfold_copy(pyframe.arange(4), 0, 2, 1).numpy(), [[0, 1], [1, 2], [2, 3]])
    with pytest.raises(RuntimeError, match="step"):
        pa.unfold(1, 2, 0)
    with pytest.raises(RuntimeError, match="maximum size"):
        pa.unfold(1, 8, 1)
