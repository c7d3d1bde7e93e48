"""Embedding and one_hot (functional and modules) against torch: values, padding_idx and its zero gradient,
the constructor's checks and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from tests._oracle import compare_module, f64, leaf
from tests._tables import constructor_errors_test, reprs_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_matches_torch(rng, padding_idx):
    idx = np.array([[0, 2, 4], [2, 2, 1]])
    w = f64(rng, 5, 3)
    pw, tw = leaf(w), torch.tensor(w, requires_grad=True)
    out = F.embedding(pf.tensor(idx), pw, padding_idx)
    tout = TF.embedding(torch.tensor(idx), tw, padding_idx)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy())
    cot = rng.standard_normal(tuple(tout.shape))
    out.backward(pf.tensor(cot))
    tout.backward(torch.tensor(cot))
    np.testing.assert_allclose(pw.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_embedding_bad_input():
    with pytest.raises(IndexError, match="index 5 is out of range for an embedding table of 5 rows"):
        F.embedding(pf.tensor([1, 5]), pf.randn(5, 2))
    with pytest.raises(IndexError, match="index -1"):
        F.embedding(pf.tensor([-1]), pf.randn(5, 2))
    with pytest.raises(TypeError, match="int64"):
        F.embedding(pf.tensor([1.0]), pf.randn(5, 2))


def test_embedding_index_layouts(rng):
    """The one-call path (contiguous indices and table) and the general one (strided) give the same rows, in the
    indices' shape, a 0-d index included."""
    w = rng.standard_normal((7, 5)).astype(np.float32)
    idx = np.array([[0, 6, 3], [2, 2, 5]])
    pw = pf.tensor(w)
    for t in (pf.tensor(idx), pf.tensor(idx.T.copy()).t(), pf.tensor(3)):
        out = F.embedding(t, pw)
        assert tuple(out.shape) == tuple(t.shape) + (5,)
        np.testing.assert_array_equal(out.numpy(), w[t.numpy()])
    for bad in (pf.tensor([[1, 7]]), pf.tensor([[1], [7]]).t()):  # contiguous, strided
        with pytest.raises(IndexError, match="index 7 is out of range for an embedding table of 7 rows"):
            F.embedding(bad, pw)


def test_embedding_module_matches_torch():
    idx = np.array([[1, 2, 0, 9], [2, 2, 5, 1]], dtype=np.int64)
    compare_module(lambda n: n.Embedding(10, 4), idx)
    compare_module(lambda n: n.Embedding(10, 4, padding_idx=2), idx)
    emb = nn.Embedding(10, 4, padding_idx=2)
    emb(pf.from_numpy(idx)).sum().backward()
    assert emb.padding_idx == 2 and float(emb.weight.grad[2].abs().sum()) == 0
    assert float(emb.weight.grad[1].sum()) == 8.0
    assert nn.Embedding(10, 4, padding_idx=-1).padding_idx == 9


def test_one_hot_matches_torch():
    idx = np.array([[0, 3], [2, 1]])
    np.testing.assert_array_equal(F.one_hot(pf.tensor(idx)).numpy(), TF.one_hot(torch.tensor(idx)).numpy())
    out = F.one_hot(pf.tensor(idx), 6)
    assert out.dtype == pf.int64 and tuple(out.shape) == (2, 2, 6)
    with pytest.raises(RuntimeError, match="smaller than num_classes=3"):
        F.one_hot(pf.tensor(idx), 3)
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(pf.tensor([-1, 0]))
    with pytest.raises(TypeError, match="int64"):
        F.one_hot(pf.tensor([1.0]))


test_constructor_errors = constructor_errors_test(
    lambda: nn.Embedding(4, 2, padding_idx=4),
    lambda: nn.Embedding(4, 2, _weight=pf.ones(3, 2)),
)


test_reprs_match_torch = reprs_test(
    lambda n: n.Embedding(5, 2),
)


def test_embedding_max_norm_and_scale_grad_by_freq_match_torch(rng):
    idx = np.array([[0, 2, 4], [2, 2, 1]])
    w = f64(rng, 5, 3) * 3
    pw, tw = leaf(w), torch.tensor(w, requires_grad=True)
    out = F.embedding(pf.tensor(idx), pw, max_norm=1.5, norm_type=1.0, scale_grad_by_freq=True)
    tout = TF.embedding(torch.tensor(idx), tw, max_norm=1.5, norm_type=1.0, scale_grad_by_freq=True)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(pw.detach().numpy(), tw.detach().numpy(), rtol=1e-12)  # renormalized in place
    cot = rng.standard_normal(tuple(tout.shape))
    out.backward(pf.tensor(cot))
    tout.backward(torch.tensor(cot))
    np.testing.assert_allclose(pw.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


BAGS = [  # input, offsets, mode, per-sample weights, include_last_offset, padding_idx, scale_grad_by_freq
    ([[0, 2, 4], [2, 2, 1]], None, "mean", False, False, None, False),
    ([[0, 2, 4], [2, 2, 1]], None, "max", False, False, 2, False),
    ([1, 2, 4, 5, 4, 3, 2, 9], [0, 4, 4, 6], "sum", True, False, None, False),
    ([1, 2, 4, 5, 4, 3, 2, 9], [0, 2, 5, 8], "sum", False, True, 4, False),
    ([1, 2, 4, 5, 4, 3, 2, 9], [0, 3, 3], "mean", False, False, 2, False),
    ([1, 2, 4, 5, 4, 3, 2, 9], [0, 1, 1, 6], "max", False, False, None, False),
    ([1, 2, 4, 2, 4, 4, 2, 9], [0, 3, 5], "mean", False, False, None, True),
    ([1, 2, 4, 2, 4, 4, 2, 9], [0, 3, 5], "sum", True, False, 9, True),
]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("idx, offsets, mode, weighted, last, padding_idx, freq", BAGS)
def test_embedding_bag_matches_torch(rng, dtype, idx, offsets, mode, weighted, last, padding_idx, freq):
    w = rng.standard_normal((10, 4)).astype(dtype)
    psw = rng.standard_normal(np.shape(idx)).astype(dtype) if weighted else None
    res = []
    for lib_, fns in ((pf, F), (torch, TF)):
        tw = lib_.tensor(w, requires_grad=True)
        tp = lib_.tensor(psw, requires_grad=True) if weighted else None
        off = lib_.tensor(offsets) if offsets is not None else None
        out = fns.embedding_bag(lib_.tensor(idx), tw, off, mode=mode, per_sample_weights=tp,
                                include_last_offset=last, padding_idx=padding_idx,
                                scale_grad_by_freq=freq and lib_ is pf)  # fmt: skip
        out.backward(lib_.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)).astype(dtype)))
        gw = tw.grad.numpy()
        if freq and lib_ is torch:  # each row's gradient over its count (torch's CPU kernel miscounts some rows)
            gw = gw / np.maximum(np.bincount(np.ravel(idx), minlength=10), 1)[:, None]
        res.append([out.detach().numpy(), gw] + ([tp.grad.numpy()] if weighted else []))
    tol = 1e-6 if dtype == np.float32 else 1e-12
    for a, b in zip(*res, strict=True):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def test_embedding_bag_module_and_bad_input():
    pf.manual_seed(0)
    m = nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0)
    assert repr(m) == repr(torch.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0))
    assert np.all(m.weight.detach().numpy()[0] == 0)
    out = m(pf.tensor([1, 2, 0, 3]), pf.tensor([0, 2]))
    w = m.weight.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy(), [w[1] + w[2], w[3]], rtol=1e-6)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(pf.tensor([[1, 2]]), m.weight, pf.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(pf.tensor([1, 2]), m.weight)
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        F.embedding_bag(pf.tensor([[1, 2]]), m.weight, per_sample_weights=pf.ones(1, 2), mode="mean")
    with pytest.raises(IndexError, match="index 10 is out of range"):
        F.embedding_bag(pf.tensor([[1, 10]]), m.weight)
    with pytest.raises(ValueError, match="offsets must start at 0"):
        F.embedding_bag(pf.tensor([1, 2, 3]), m.weight, pf.tensor([1, 2]))


# ---- sparse=True: the weight's gradient is a sparse COO tensor ----


def _sparse_as_torch(g):
    """A pyframe sparse gradient's stored (uncoalesced) indices and values, as NumPy."""
    return g._indices().numpy(), g._values().detach().numpy()


def _check_sparse_grad(pg, tg):
    assert pg.is_sparse and pg.layout == pf.sparse_coo and pg.shape == tuple(tg.shape)
    assert pg.is_coalesced() == tg.is_coalesced()
    pi, pv = _sparse_as_torch(pg)
    np.testing.assert_array_equal(pi, tg._indices().numpy())
    np.testing.assert_allclose(pv, tg._values().numpy(), rtol=1e-12)
    np.testing.assert_allclose(pg.to_dense().numpy(), tg.to_dense().numpy(), rtol=1e-12)


@pytest.mark.parametrize("padding_idx", [None, 1])
def test_embedding_sparse_grad_matches_torch(rng, padding_idx):
    # indices looked up (duplicates kept, padding left out), their gradient rows as values; contiguous upstream
    # gradients (a product, not .sum()) so that torch's accumulation merges rather than concatenates
    idx = np.array([[3, 1, 3], [0, 1, 4]])
    w = f64(rng, 6, 2)
    pw, tw = leaf(w), torch.tensor(w, requires_grad=True)
    for step in range(3):
        cot = rng.standard_normal((2, 3, 2))
        (F.embedding(pf.tensor(idx + step % 2), pw, padding_idx, sparse=True) * pf.tensor(cot)).sum().backward()
        (TF.embedding(torch.tensor(idx + step % 2), tw, padding_idx, sparse=True) * torch.tensor(cot)).sum().backward()
        _check_sparse_grad(pw.grad, tw.grad)
    assert pw.grad.coalesce().indices().tolist() == tw.grad.coalesce().indices().tolist()


def test_sparse_grad_meets_dense_grad(rng):
    # sparse then dense (and dense then sparse) accumulate to a dense gradient, as torch's
    w = f64(rng, 4, 3)
    for order in ("sparse first", "dense first"):
        pw, tw = leaf(w), torch.tensor(w, requires_grad=True)
        for lib, x, fn in ((pf, pw, F), (torch, tw, TF)):
            for kind in ("sparse", "dense") if order == "sparse first" else ("dense", "sparse"):
                if kind == "sparse":
                    fn.embedding(lib.tensor([1, 1, 3]), x, sparse=True).sum().backward()
                else:
                    (x * 2).sum().backward()
        assert not pw.grad.is_sparse
        np.testing.assert_allclose(pw.grad.numpy(), tw.grad.numpy(), rtol=1e-12)
    # two sparse lookups in one graph: the engine adds them (a sparse sum)
    pw, tw = leaf(w), torch.tensor(w, requires_grad=True)
    (
        F.embedding(pf.tensor([1, 3]), pw, sparse=True).sum()
        + F.embedding(pf.tensor([3, 0]), pw, sparse=True).sum() * 2
    ).backward()
    (
        TF.embedding(torch.tensor([1, 3]), tw, sparse=True).sum()
        + TF.embedding(torch.tensor([3, 0]), tw, sparse=True).sum() * 2
    ).backward()
    np.testing.assert_allclose(pw.grad.to_dense().numpy(), tw.grad.to_dense().numpy())
    (g,) = pf.autograd.grad(F.embedding(pf.tensor([2, 2]), pw, sparse=True).sum(), pw)
    assert g.is_sparse and g.to_dense().tolist() == [[0.0] * 3, [0.0] * 3, [2.0] * 3, [0.0] * 3]


def test_embedding_sparse_module_and_errors(rng):
    emb = nn.Embedding(5, 3, sparse=True)
    assert "sparse=True" in repr(emb)
    emb(pf.tensor([1, 1])).sum().backward()
    assert emb.weight.grad.is_sparse and emb.weight.grad.coalesce().values().tolist() == [[2.0] * 3]
    w = leaf(f64(rng, 5, 3))
    out = F.embedding(pf.tensor([0, 0]), w, sparse=True, scale_grad_by_freq=True).sum()
    with pytest.raises(RuntimeError, match="scale_grad_by_freq not supported with sparse gradients"):
        out.backward()
    with pytest.raises(ValueError, match="max mode does not support sparse weights"):
        F.embedding_bag(pf.tensor([[0, 1]]), w, mode="max", sparse=True)


@pytest.mark.parametrize("mode, psw, padding_idx", [("sum", False, None), ("mean", False, None), ("sum", True, 2),
                                                     ("mean", False, 2)])  # fmt: skip
def test_embedding_bag_sparse_grad_matches_torch(rng, mode, psw, padding_idx):
    idx, offsets = np.array([1, 2, 1, 4, 2]), np.array([0, 0, 3])  # an empty bag first
    w = f64(rng, 5, 3)
    weights = rng.standard_normal(5) if psw else None
    pw, tw = leaf(w), torch.tensor(w, requires_grad=True)
    cot = rng.standard_normal((3, 3))
    kw = dict(mode=mode, sparse=True, padding_idx=padding_idx)
    pout = F.embedding_bag(pf.tensor(idx), pw, pf.tensor(offsets), per_sample_weights=None if weights is None else
                           pf.tensor(weights), **kw)  # fmt: skip
    tout = TF.embedding_bag(torch.tensor(idx), tw, torch.tensor(offsets), per_sample_weights=None if weights is None
                            else torch.tensor(weights), **kw)  # fmt: skip
    np.testing.assert_allclose(pout.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    (pout * pf.tensor(cot)).sum().backward()
    (tout * torch.tensor(cot)).sum().backward()
    _check_sparse_grad(pw.grad, tw.grad)
