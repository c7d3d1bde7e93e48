"""Sparse CSR matrices against torch: construction and torch's invariants, conversions, to_dense, the product
with a dense matrix (sparse.mm with reduce=, torch.mm, @) and sparse.sampled_addmm, with their gradients."""

import pickle

import numpy as np
import pytest

import pyframe

torch = pytest.importorskip("torch")

DENSE = np.array([[1.0, 0, 2], [0, 0, 0], [3, 4, 0], [0, 0, -5]])


def _both(dense=DENSE, grad=False):
    p = pyframe.tensor(dense).to_sparse_csr()
    t = torch.tensor(dense).to_sparse_csr()
    if grad:
        p.requires_grad_()
        t.requires_grad_()
    return p, t


def test_construction_and_conversions():
    p, t = _both()
    assert p.layout == pyframe.sparse_csr and p.is_sparse_csr and not p.is_sparse and p.shape == (4, 3)
    for name in ("crow_indices", "col_indices", "values"):
        np.testing.assert_array_equal(getattr(p, name)().numpy(), getattr(t, name)().numpy())
    np.testing.assert_array_equal(p.to_dense().numpy(), DENSE)
    coo = p.to_sparse()
    assert coo.is_sparse and coo.indices().tolist() == t.to_sparse().indices().tolist()
    assert pyframe.tensor(DENSE).to_sparse().to_sparse_csr().crow_indices().tolist() == [0, 2, 2, 4, 5]
    assert pyframe.tensor(DENSE).to_sparse(layout=pyframe.sparse_csr).col_indices().tolist() == [0, 2, 0, 1, 2]
    made = pyframe.sparse_csr_tensor([0, 1, 2], [1, 0], [1.0, 2.0])
    assert made.shape == (2, 2) and made.to_dense().tolist() == [[0, 1], [2, 0]]
    assert pyframe.sparse_csr_tensor([0, 1, 2], [1, 0], [1.0, 2.0], (2, 5)).shape == (2, 5)
    empty = pyframe.eye(0, 5).to_sparse_csr()
    assert empty.shape == (0, 5) and empty._nnz() == 0 and empty.crow_indices().tolist() == [0]


@pytest.mark.parametrize("crow, col, size, match", [
    ([0, 2, 1], [1, 0], None, "crow_indices"),  # decreasing
    ([1, 1, 2], [1, 0], None, r"crow_indices\[\.\.\., 0\] == 0"),
    ([0, 1, 3], [1, 0], None, "nnz"),
    ([0, 1, 2], [1, 7], (2, 5), "col_indices"),
    ([0, 1, 2], [1, -1], (2, 5), "col_indices"),
])  # fmt: skip
def test_invariants_are_checked(crow, col, size, match):
    with pytest.raises((ValueError, IndexError, RuntimeError), match=match):
        pyframe.sparse_csr_tensor(crow, col, [1.0, 2.0], size)
    with pytest.raises(RuntimeError):
        torch.sparse_csr_tensor(torch.tensor(crow), torch.tensor(col), torch.tensor([1.0, 2.0]), size or (2, 2),
                                check_invariants=True)  # fmt: skip


@pytest.mark.parametrize("reduce", ["sum", "mean", "amax", "amin"])
def test_mm_reduce_matches_torch(rng, reduce):
    d = rng.standard_normal((3, 5))
    d[2, 2] = d[0, 2] * DENSE[0, 0] / DENSE[0, 2]  # a tie in row 0 for amax/amin: the first entry wins
    p, t = _both(grad=True)
    pd, td = pyframe.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    pout, tout = pyframe.sparse.mm(p, pd, reduce), torch.sparse.mm(t, td, reduce)
    np.testing.assert_allclose(pout.detach().numpy(), tout.detach().numpy(), rtol=1e-12)
    cot = rng.standard_normal((4, 5))
    pg = pyframe.autograd.grad(pout, (p, pd), pyframe.tensor(cot))
    tg = torch.autograd.grad(tout, (t, td), torch.tensor(cot))
    assert pg[0].layout == pyframe.sparse_csr
    np.testing.assert_allclose(pg[0].values().numpy(), tg[0].values().numpy(), rtol=1e-12)
    np.testing.assert_allclose(pg[1].numpy(), tg[1].numpy(), rtol=1e-12)


def test_products_of_every_form(rng):
    p, t = _both()
    d = rng.standard_normal((3, 2))
    want = DENSE @ d
    for got in (pyframe.mm(p, pyframe.tensor(d)), p @ pyframe.tensor(d), pyframe.sparse.mm(p, pyframe.tensor(d)),
                pyframe.matmul(p, pyframe.tensor(d))):  # fmt: skip
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose((p @ pyframe.tensor(d[:, 0])).numpy(), want[:, 0], rtol=1e-12)
    coo = pyframe.tensor(DENSE).to_sparse()
    np.testing.assert_allclose(pyframe.mm(coo, pyframe.tensor(d)).numpy(), want, rtol=1e-12)
    with pytest.raises(ValueError, match="reduce argument must be"):
        pyframe.sparse.mm(p, pyframe.tensor(d), "max")
    with pytest.raises(NotImplementedError, match="CSR"):
        pyframe.sparse.mm(coo, pyframe.tensor(d), "sum")
    with pytest.raises(ValueError, match="cannot be multiplied"):
        pyframe.sparse.mm(p, pyframe.ones(4, 2, dtype=pyframe.float64))
    with pytest.raises(TypeError, match="same dtype"):
        pyframe.sparse.mm(p, pyframe.ones(3, 2))
    with pytest.raises(NotImplementedError, match="to_dense"):
        _ = p + 1


@pytest.mark.parametrize("m, n, k", [(4, 3, 2), (4, 3, 0), (0, 3, 2)])
def test_sampled_addmm_matches_torch(rng, m, n, k):
    dense = DENSE[:m] if m else np.zeros((0, n))
    p, t = _both(dense, grad=True)
    a, b = rng.standard_normal((m, k)), rng.standard_normal((k, n))
    pa, pb = pyframe.tensor(a, requires_grad=True), pyframe.tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    pout = pyframe.sparse.sampled_addmm(p, pa, pb, alpha=0.6, beta=0.2)
    tout = torch.sparse.sampled_addmm(t, ta, tb, alpha=0.6, beta=0.2)
    assert pout.layout == pyframe.sparse_csr
    np.testing.assert_array_equal(pout.crow_indices().numpy(), tout.crow_indices().numpy())
    np.testing.assert_allclose(pout.to_dense().detach().numpy(), tout.to_dense().detach().numpy(), rtol=1e-12)
    cot = rng.standard_normal((m, n))
    pg = pyframe.autograd.grad(pout, (p, pa, pb), pyframe.tensor(cot), allow_unused=True)
    tg = torch.autograd.grad(tout, (t, ta, tb), torch.tensor(cot), allow_unused=True)
    # torch's gradient to the sparse input is dense (beta * the cotangent); at the stored entries they agree
    mask = dense != 0
    np.testing.assert_allclose(pg[0].to_dense().numpy()[mask], tg[0].to_dense().numpy()[mask], rtol=1e-12)
    for got, want in zip(pg[1:], tg[1:], strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)


def test_sampled_addmm_errors():
    p, _ = _both()
    with pytest.raises(ValueError, match="does not give"):
        pyframe.sparse.sampled_addmm(
            p, pyframe.ones(4, 2, dtype=pyframe.float64), pyframe.ones(3, 3, dtype=pyframe.float64)
        )
    with pytest.raises(TypeError, match="sparse CSR"):
        pyframe.sparse.sampled_addmm(pyframe.ones(4, 3), pyframe.ones(4, 2), pyframe.ones(2, 3))


def test_layouts_and_dense_only_errors_name_the_layout():
    for lay in (pyframe.sparse_coo, pyframe.sparse_csr, pyframe.strided):
        assert isinstance(lay, pyframe.layout) and pickle.loads(pickle.dumps(lay)) is lay
    csr, coo = pyframe.tensor(DENSE).to_sparse_csr(), pyframe.tensor(DENSE).to_sparse()
    for s, kind in ((csr, "sparse CSR matrix of size \\[4, 3\\]"), (coo, "sparse COO tensor of size \\[4, 3\\]")):
        for access in (s.numpy, s.item, s.tolist):
            with pytest.raises(NotImplementedError, match=kind):
                access()
        with pytest.raises(NotImplementedError, match="views of a sparse tensor"):
            s.view(12)
        s.requires_grad_()
        assert s.requires_grad and s.values().requires_grad and s._nnz() == 5
