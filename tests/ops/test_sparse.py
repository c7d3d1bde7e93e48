"""Sparse COO tensors: construction, to_sparse/to_dense, coalesce, indices/values, and the sparse-dense product
with gradients to the dense operand and the values, against dense math and torch."""

import numpy as np
import pytest

import pyframe

F64 = pyframe.float64


def _adj():
    # a 3x4 matrix with a duplicate entry at (0, 1): 1 + 2
    idx = pyframe.tensor([[0, 2, 0, 1], [1, 3, 1, 0]])
    vals = pyframe.tensor([1.0, 5.0, 2.0, -1.0], dtype=F64)
    return pyframe.sparse_coo_tensor(idx, vals, (3, 4))


DENSE = np.array([[0, 3, 0, 0], [-1, 0, 0, 0], [0, 0, 0, 5]], dtype=np.float64)


def test_construction_and_dense():
    s = _adj()
    assert s.is_sparse and s.shape == (3, 4) and s._nnz() == 4 and not s.is_coalesced()
    assert s.layout == pyframe.sparse_coo and pyframe.ones(1).layout == pyframe.strided
    assert np.array_equal(s.to_dense().numpy(), DENSE)
    with pytest.raises(RuntimeError, match="coalesce"):
        s.indices()
    c = s.coalesce()
    assert c.is_coalesced() and c._nnz() == 3
    assert c.indices().tolist() == [[0, 1, 2], [1, 0, 3]] and c.values().tolist() == [3.0, -1.0, 5.0]
    inferred = pyframe.sparse_coo_tensor([[0, 4]], [1.0, 2.0])
    assert inferred.shape == (5,)


def test_to_sparse_round_trip():
    x = pyframe.tensor(DENSE)
    s = x.to_sparse()
    assert s.is_coalesced() and s.indices().tolist() == [[0, 1, 2], [1, 0, 3]]
    assert np.array_equal(s.to_dense().numpy(), DENSE) and x.to_dense() is x
    t3 = pyframe.zeros(2, 2, 2)
    t3[1, 0, 1] = 4.0
    assert np.array_equal(t3.to_sparse().to_dense().numpy(), t3.numpy())


def test_hybrid_tensors():
    x = pyframe.tensor([[[1.0, 0], [0, 0]], [[0, 0], [2, 3]]])
    s = x.to_sparse(1)
    assert s.sparse_dim() == 1 and s.dense_dim() == 2 and s.indices().tolist() == [[0, 1]]
    assert s.values().shape == (2, 2, 2) and np.array_equal(s.to_dense().numpy(), x.numpy())
    s2 = x.to_sparse(2)
    assert s2.indices().tolist() == [[0, 1], [0, 1]] and s2.values().tolist() == [[1, 0], [2, 3]]
    dup = pyframe.sparse_coo_tensor([[1, 0, 1]], pyframe.ones(3, 2))
    assert dup.shape == (2, 2) and dup.coalesce().values().tolist() == [[1, 1], [2, 2]]
    assert np.array_equal(dup.to_dense().numpy(), [[1, 1], [2, 2]])


def test_errors_are_clear():
    with pytest.raises(RuntimeError, match="inconsistent"):
        pyframe.sparse_coo_tensor([[0, 3]], [1.0, 2.0], (3,))
    with pytest.raises(RuntimeError, match="negative"):
        pyframe.sparse_coo_tensor([[0, -1]], [1.0, 2.0], (3,))
    with pytest.raises(NotImplementedError, match="hybrid"):
        pyframe.sparse.mm(pyframe.sparse_coo_tensor([[0, 1], [1, 0]], pyframe.ones(2, 2)), pyframe.ones(2, 2))
    with pytest.raises(RuntimeError, match="sparse_dim"):
        pyframe.ones(2, 2).to_sparse(3)
    s = _adj()
    with pytest.raises(NotImplementedError, match="to_dense"):
        _ = s + 1
    with pytest.raises(NotImplementedError, match="to_dense"):
        s.reshape(12)
    with pytest.raises(ValueError, match="cannot be multiplied"):
        pyframe.sparse.mm(s, pyframe.ones(3, 2, dtype=F64))


def test_mm_and_gradients():
    s = _adj()
    rng = np.random.default_rng(0)
    d = pyframe.tensor(rng.standard_normal((4, 5)), requires_grad=True)
    s.requires_grad_()
    out = pyframe.sparse.mm(s, d)
    assert np.allclose(out.detach().numpy(), DENSE @ d.detach().numpy())
    assert np.allclose((s @ d).detach().numpy(), out.detach().numpy())
    assert np.allclose(pyframe.spmm(s, d).detach().numpy(), out.detach().numpy())
    g = rng.standard_normal((3, 5))
    out.backward(pyframe.tensor(g))
    assert np.allclose(d.grad.numpy(), DENSE.T @ g)
    # each stored value (i, j) gets <g[i], d[j]>, duplicates each their own; s.grad, as torch's, holds each
    # position once (its dense form is the dense gradient where s stores entries)
    rows, cols = [0, 2, 0, 1], [1, 3, 1, 0]
    want = [g[i] @ d.detach().numpy()[j] for i, j in zip(rows, cols, strict=True)]
    assert np.allclose(s._values().grad.numpy(), want)
    assert s.grad.is_coalesced() and s.grad._nnz() == 3
    assert np.allclose(s.grad.to_dense().numpy(), (g @ d.detach().numpy().T) * (DENSE != 0))


def test_gradients_through_coalesce_and_to_dense():
    vals = pyframe.tensor([1.0, 5.0, 2.0, -1.0], dtype=F64, requires_grad=True)
    s = pyframe.sparse_coo_tensor([[0, 2, 0, 1], [1, 3, 1, 0]], vals, (3, 4))
    w = pyframe.tensor(np.arange(12.0).reshape(3, 4))
    (s.coalesce().to_dense() * w).sum().backward()
    assert vals.grad.tolist() == [1.0, 11.0, 1.0, 4.0]


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    idx = np.stack([rng.integers(0, 6, 20), rng.integers(0, 7, 20)])
    vals, dense, g = rng.standard_normal(20), rng.standard_normal((7, 3)), rng.standard_normal((6, 3))
    res = {}
    for lib in (torch, pyframe):
        v = lib.tensor(vals, requires_grad=True)
        d = lib.tensor(dense, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(idx), v, (6, 7))
        out = lib.sparse.mm(s, d)
        out.backward(lib.tensor(g))
        c = s.coalesce()
        res[lib.__name__] = (out.detach().numpy(), d.grad.numpy(), v.grad.numpy(), c.indices().numpy(),
                             c.values().detach().numpy())  # fmt: skip
    for a, b in zip(res["torch"], res["pyframe"], strict=True):
        assert np.allclose(a, b)


def test_arithmetic_matches_torch():
    torch = pytest.importorskip("torch")
    idx_a, idx_b = [[0, 2, 0], [1, 3, 1]], [[2, 1], [3, 0]]
    got, want = [], []
    for lib, out in ((pyframe, got), (torch, want)):
        a = lib.sparse_coo_tensor(lib.tensor(idx_a), lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64), (3, 4))
        b = lib.sparse_coo_tensor(lib.tensor(idx_b), lib.tensor([10.0, -4.0], dtype=lib.float64), (3, 4))
        for s in (a + b, a - b * 2, a.coalesce() + b.coalesce(), (a * 3) / 2, -a, a.clone(), b.add(a, alpha=2)):
            out.append((s._indices().tolist(), s._values().tolist(), s.is_coalesced()))
        dense = lib.arange(12.0, dtype=lib.float64).reshape(3, 4)
        out.append((dense + a).tolist())
        out.append(dense.clone().add_(b, alpha=-0.5).tolist())
        m = dense.sparse_mask(a)
        out.append((m._indices().tolist(), m._values().tolist(), m.is_coalesced()))
        out.append(round(float(a.norm()), 12))
        z = a.clone().zero_()
        out.append((z._nnz(), z.shape == a.shape))
    assert got == want
    s = _adj()
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s + pyframe.ones(3, 4, dtype=F64)
    with pytest.raises(RuntimeError, match="same size"):
        s + pyframe.sparse_coo_tensor([[0], [0]], [1.0], (4, 4))


def test_dense_at_sparse_is_dense_with_gradient_to_the_dense_operand():
    pf = pyframe
    # pytorch/examples' gcn renormalises its adjacency as degree(sparse) @ adj(dense) @ degree(sparse)
    torch = pytest.importorskip("torch")
    rs = np.random.RandomState(3)
    d = rs.randn(3, 4).astype(np.float32)
    s = (rs.randn(4, 5) * (rs.rand(4, 5) > 0.5)).astype(np.float32)
    a = pf.tensor(d, requires_grad=True)
    out = a @ pf.tensor(s).to_sparse()
    ta = torch.tensor(d, requires_grad=True)
    tout = ta @ torch.tensor(s).to_sparse()
    assert not out.is_sparse and np.allclose(out.detach().numpy(), tout.detach().numpy(), atol=1e-6)
    out.sum().backward()
    tout.sum().backward()
    assert np.allclose(a.grad.numpy(), ta.grad.numpy(), atol=1e-6)
    assert np.allclose(pf.mm(a, pf.tensor(s).to_sparse()).detach().numpy(), tout.detach().numpy(), atol=1e-6)
