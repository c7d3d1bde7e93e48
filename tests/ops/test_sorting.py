"""Sorting, selection, scans, rearranging, einsum, comparisons and in-place unary ops: values against
NumPy (and torch when installed), float64 finite-difference gradients, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from pyframe.ops.inplace import inplace_unary_ops

RNG = np.random.default_rng(0)


def t64(arr, requires_grad=False):
    return pyframe.tensor(np.asarray(arr, dtype=np.float64), requires_grad=requires_grad)


def gradcheck(fn, *arrays, eps=1e-6, tol=1e-6):
    """Analytic gradient of sum(fn(*xs) * w) against central differences, in float64."""
    xs = [t64(a, requires_grad=True) for a in arrays]
    out = fn(*xs)
    w = RNG.standard_normal(tuple(out.shape))
    (out * t64(w)).sum().backward()
    for k, a in enumerate(arrays):
        num = np.zeros_like(a, dtype=np.float64)
        it = np.nditer(a, flags=["multi_index"])
        for _ in it:
            i = it.multi_index
            hi = [np.array(b, dtype=np.float64) for b in arrays]
            lo = [np.array(b, dtype=np.float64) for b in arrays]
            hi[k][i] += eps
            lo[k][i] -= eps
            f = lambda args: float((fn(*[t64(b) for b in args]).numpy() * w).sum())  # noqa: E731
            num[i] = (f(hi) - f(lo)) / (2 * eps)
        np.testing.assert_allclose(xs[k].grad.numpy(), num, rtol=tol, atol=tol)


# ---- sort / topk / kthvalue -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_sort_matches_numpy_stable(dtype, dim):
    a = RNG.integers(-5, 5, size=(7, 9, 4)).astype(dtype)  # many ties: stability shows
    for descending in (False, True):
        v, i = pyframe.sort(pyframe.tensor(a), dim=dim, descending=descending)
        key = -a.astype(np.float64) if descending else a
        ref_i = np.argsort(key, axis=dim, kind="stable")
        np.testing.assert_array_equal(i.numpy(), ref_i)
        np.testing.assert_array_equal(v.numpy(), np.take_along_axis(a, ref_i, axis=dim))
        assert v.dtype == pyframe.tensor(a).dtype and i.dtype == pyframe.int64


def test_sort_nan_is_largest_and_non_contiguous_input():
    a = np.array([[3.0, np.nan, -1.0, 2.0], [np.nan, 0.0, 5.0, np.nan]], dtype=np.float32)
    x = pyframe.tensor(a).t()  # a transposed view
    v, i = x.sort(dim=0)
    np.testing.assert_array_equal(i.numpy(), np.argsort(a.T, axis=0, kind="stable"))
    v, i = pyframe.sort(pyframe.tensor(a), descending=True)
    assert np.isnan(v.numpy()[:, 0]).all() and v.numpy()[0, 1:].tolist() == [3.0, 2.0, -1.0]
    assert pyframe.argsort(pyframe.tensor([2, 0, 1])).tolist() == [1, 2, 0]
    assert pyframe.msort(pyframe.tensor([[2.0], [1.0]])).tolist() == [[1.0], [2.0]]


@pytest.mark.parametrize("k", [1, 3, 40, 100])
@pytest.mark.parametrize("largest", [True, False])
def test_topk_matches_sort(k, largest):
    a = RNG.standard_normal((5, 100)).astype(np.float32)
    v, i = pyframe.topk(pyframe.tensor(a), k, largest=largest)
    ref = np.sort(a, axis=1)[:, ::-1] if largest else np.sort(a, axis=1)
    np.testing.assert_array_equal(v.numpy(), ref[:, :k])
    np.testing.assert_array_equal(np.take_along_axis(a, i.numpy(), 1), v.numpy())
    v0, _ = pyframe.tensor(a).topk(k, dim=0, largest=largest) if k <= 5 else (None, None)
    if v0 is not None:
        np.testing.assert_array_equal(v0.numpy(), (np.sort(a, 0)[::-1] if largest else np.sort(a, 0))[:k])


def test_topk_int64_large_values_and_ties():
    big = 2**60
    x = pyframe.tensor([big + 1, big, big + 2, 5, big + 2])
    v, i = x.topk(3)
    assert v.tolist() == [big + 2, big + 2, big + 1] and i.tolist() == [2, 4, 0]


def test_kthvalue_and_vs_torch():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((4, 6, 3))
    for k, dim, keep in ((1, 1, False), (4, 1, True), (2, 0, False), (3, -1, True)):
        got = pyframe.kthvalue(t64(a), k, dim, keep)
        ref = torch.kthvalue(torch.tensor(a), k, dim, keep)
        np.testing.assert_array_equal(got.values.numpy(), ref.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), ref.indices.numpy())
    ref = torch.topk(torch.tensor(a), 2, dim=1)
    got = pyframe.topk(t64(a), 2, dim=1)
    np.testing.assert_array_equal(got.values.numpy(), ref.values.numpy())


def test_select_gradients():
    a = RNG.standard_normal((3, 5))
    gradcheck(lambda x: pyframe.sort(x, dim=1)[0], a)
    gradcheck(lambda x: pyframe.sort(x, dim=0, descending=True).values, a)
    gradcheck(lambda x: pyframe.topk(x, 2, dim=1).values, a)
    gradcheck(lambda x: pyframe.kthvalue(x, 2, 0).values, a)
    assert pyframe.topk(t64(a, True), 2).values.grad_fn.name == "TopkBackward0"


def test_select_bad_input():
    x = pyframe.randn(3, 4)
    with pytest.raises(RuntimeError, match="k = 5 is out of range"):
        x.topk(5)
    with pytest.raises(ValueError, match="out of range"):
        x.kthvalue(0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.sort(dim=2)
    with pytest.raises(TypeError, match="Tensor"):
        pyframe.sort([3, 1])
    assert x.topk(0).values.shape == (3, 0)


def test_unique():
    a = np.array([[3, 1, 3], [2, 1, 7]])
    u, inv, cnt = pyframe.unique(pyframe.tensor(a), return_inverse=True, return_counts=True)
    ru, rinv, rcnt = np.unique(a, return_inverse=True, return_counts=True)
    assert u.tolist() == ru.tolist() and cnt.tolist() == rcnt.tolist()
    assert inv.tolist() == rinv.reshape(a.shape).tolist()
    assert pyframe.tensor([2.0, 2.0, -1.0]).unique().tolist() == [-1.0, 2.0]
    assert pyframe.unique(pyframe.tensor([], dtype=pyframe.int64)).tolist() == []
    with pytest.raises(ValueError, match="dim"):
        pyframe.unique(pyframe.tensor(a), dim=0)


# ---- scans ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
def test_cumsum_cumprod_match_numpy(dtype):
    a = RNG.integers(0, 3, size=(3, 4, 5)).astype(dtype)
    x = pyframe.tensor(a)
    for dim in (0, 1, 2, -1):
        s, p = pyframe.cumsum(x, dim), x.cumprod(dim)
        np.testing.assert_allclose(s.numpy(), np.cumsum(a, axis=dim, dtype=np.float64))
        np.testing.assert_allclose(p.numpy(), np.cumprod(a, axis=dim, dtype=np.float64))
        expect = dtype if dtype.startswith("float") else "int64"
        assert s.dtype == expect and p.dtype == expect
    assert x.cumsum(1, dtype=pyframe.float64).dtype == pyframe.float64
    np.testing.assert_allclose(x.t().cumsum(0).numpy() if x.ndim == 2 else x[:, ::2].cumsum(1).numpy(),
                               np.cumsum(a[:, ::2], axis=1, dtype=np.float64))  # fmt: skip


def test_scan_gradients():
    a = RNG.standard_normal((3, 4))
    gradcheck(lambda x: pyframe.cumsum(x, 1), a)
    gradcheck(lambda x: pyframe.cumsum(x, 0), a)
    gradcheck(lambda x: pyframe.cumprod(x, 1), a)
    z = a.copy()
    z[1, 2] = 0.0
    z[2, 0] = 0.0
    gradcheck(lambda x: pyframe.cumprod(x, 1), z)  # zeros: the division-free path
    gradcheck(lambda x: pyframe.cumprod(x, 0), z)


def test_scan_vs_torch():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    for dim in range(3):
        np.testing.assert_allclose(pyframe.tensor(a).cumsum(dim).numpy(), torch.tensor(a).cumsum(dim).numpy(),
                                   rtol=1e-6)  # fmt: skip
        np.testing.assert_allclose(pyframe.tensor(a).cumprod(dim).numpy(), torch.tensor(a).cumprod(dim).numpy(),
                                   rtol=1e-6)  # fmt: skip


# ---- rearranging ------------------------------------------------------------------------------


def test_flip_roll_repeat_tile_match_numpy():
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    x = pyframe.tensor(a)
    np.testing.assert_array_equal(pyframe.flip(x, (0, 2)).numpy(), np.flip(a, (0, 2)))
    np.testing.assert_array_equal(x.flip(1).numpy(), np.flip(a, 1))
    np.testing.assert_array_equal(x.flip(0, 1).numpy(), np.flip(a, (0, 1)))
    np.testing.assert_array_equal(pyframe.fliplr(x).numpy(), np.fliplr(a))
    np.testing.assert_array_equal(pyframe.roll(x, 1).numpy(), np.roll(a, 1))
    np.testing.assert_array_equal(pyframe.roll(x, (1, -5), (0, 2)).numpy(), np.roll(a, (1, -5), (0, 2)))
    np.testing.assert_array_equal(x.repeat(2, 1, 3).numpy(), np.tile(a, (2, 1, 3)))
    np.testing.assert_array_equal(x.repeat(2, 1, 1, 1).numpy(), np.tile(a, (2, 1, 1, 1)))
    np.testing.assert_array_equal(pyframe.tile(x, (2,)).numpy(), np.tile(a, 2))
    np.testing.assert_array_equal(x.repeat_interleave(2, dim=1).numpy(), np.repeat(a, 2, axis=1))
    np.testing.assert_array_equal(pyframe.repeat_interleave(x, 3).numpy(), np.repeat(a, 3))
    counts = np.array([0, 2, 1])
    np.testing.assert_array_equal(x.repeat_interleave(pyframe.tensor(counts), dim=1).numpy(),
                                  np.repeat(a, counts, axis=1))  # fmt: skip
    assert pyframe.repeat_interleave(pyframe.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    assert pyframe.flatten(x, 1).shape == (2, 12) and pyframe.unflatten(x, 2, (2, -1)).shape == (2, 3, 2, 2)
    assert x.unflatten(1, (3, 1)).shape == (2, 3, 1, 4)
    y = x.repeat(1, 1, 1)
    y.zero_()
    assert x.abs().sum().item() > 0  # repeat copies


def test_rearrange_gradients():
    a = RNG.standard_normal((2, 3))
    gradcheck(lambda x: pyframe.flip(x, (0, 1)), a)
    gradcheck(lambda x: pyframe.roll(x, 2, 1), a)
    gradcheck(lambda x: x.repeat(2, 3), a)
    gradcheck(lambda x: x.repeat_interleave(pyframe.tensor([2, 0, 1]), dim=1), a)
    gradcheck(lambda x: x.repeat_interleave(2), a)


def test_rearrange_bad_input():
    x = pyframe.ones(2, 3)
    with pytest.raises(ValueError, match="can not be smaller"):
        x.repeat(2)
    with pytest.raises(ValueError, match="same length"):
        pyframe.roll(x, (1, 2), 0)
    with pytest.raises(ValueError, match="same dim twice"):
        pyframe.flip(x, (0, 0))
    with pytest.raises(ValueError, match="don't multiply"):
        pyframe.unflatten(x, 1, (2, 2))
    with pytest.raises(ValueError, match="repeats"):
        x.repeat_interleave(pyframe.tensor([1, 2]), dim=1)


# ---- einsum -----------------------------------------------------------------------------------

EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,kj->ik", [(3, 4), (5, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("bhqd,bhkd->bhqk", [(2, 2, 3, 4)] * 2),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("ijk->kj", [(2, 3, 4)]), ("ij,ij->i", [(3, 4), (3, 4)]),
]  # fmt: skip


@pytest.mark.parametrize(("eq", "shapes"), EINSUMS)
def test_einsum_matches_numpy(eq, shapes):
    arrs = [RNG.standard_normal(s) for s in shapes]
    got = pyframe.einsum(eq, *[t64(a) for a in arrs])
    np.testing.assert_allclose(got.numpy(), np.einsum(eq, *arrs), rtol=1e-12, atol=1e-12)
    assert pyframe.einsum(eq, [t64(a) for a in arrs]).shape == got.shape


def test_einsum_gradients():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4))
    gradcheck(lambda x, y: pyframe.einsum("ij,jk->ik", x, y), a, b)
    gradcheck(lambda x: pyframe.einsum("ii->i", x), RNG.standard_normal((3, 3)))
    gradcheck(lambda x, y: pyframe.einsum("ij,ij->j", x, y), a, a + 1)


def test_einsum_bad_input():
    with pytest.raises(ValueError, match="operands"):
        pyframe.einsum("ij,jk->ik", pyframe.ones(2, 2))
    with pytest.raises(ValueError, match="names 2 dims"):
        pyframe.einsum("ij", pyframe.ones(2))
    with pytest.raises(ValueError, match="sizes"):
        pyframe.einsum("ij,jk->ik", pyframe.ones(2, 3), pyframe.ones(4, 2))
    with pytest.raises(ValueError, match="appears in no operand"):
        pyframe.einsum("ij->iz", pyframe.ones(2, 3))


# ---- comparisons, in-place unary, new_* ----------------------------------------------------------


def test_isclose_allclose_equal_dist():
    a = pyframe.tensor([1.0, 2.0, float("nan"), float("inf")])
    b = pyframe.tensor([1.0 + 1e-7, 2.1, float("nan"), float("inf")])
    assert pyframe.isclose(a, b).tolist() == [True, False, False, True]
    assert pyframe.isclose(a, b, equal_nan=True).tolist() == [True, False, True, True]
    assert not pyframe.allclose(a, b) and pyframe.allclose(a[:1], b[:1]) and a[:2].allclose(b[:2], atol=0.2)
    assert pyframe.equal(a[:2], a[:2].clone()) and not pyframe.equal(a, a) and not pyframe.equal(a[:1], a[:2])
    x, y = t64([[0.0, 3.0]]), t64([[4.0, 0.0]])
    assert pyframe.dist(x, y).item() == 5.0 and pyframe.dist(x, y, 1).item() == 7.0
    gradcheck(lambda u, v: pyframe.dist(u, v), np.array([1.0, 2.0]), np.array([0.5, -1.0]))
    with pytest.raises(ValueError, match="non-negative"):
        pyframe.isclose(a, b, rtol=-1)


@pytest.mark.parametrize("name", sorted(inplace_unary_ops))
def test_every_unary_op_has_an_inplace_variant(name):
    a = RNG.uniform(0.1, 2.0, size=(3, 4)).astype(np.float32)
    x = pyframe.tensor(a)
    ref = getattr(pyframe, name[:-1])(x)
    y = x.clone()
    assert getattr(y, name)() is y
    np.testing.assert_array_equal(y.numpy(), ref.numpy())
    z = pyframe.tensor(a).t()  # a strided view is written through
    getattr(z, name)()
    np.testing.assert_array_equal(z.numpy(), ref.numpy().T)


def test_inplace_unary_autograd_and_rules():
    a = RNG.uniform(0.5, 1.5, size=(2, 3))
    gradcheck(lambda x: (x * 1.0).sin_(), a)
    gradcheck(lambda x: (x * 2.0).exp_().sqrt_(), a)
    leaf = t64(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.exp_()
    with pytest.raises(TypeError, match="can't be cast"):
        pyframe.tensor([1, 2]).exp_()
    i = pyframe.tensor([-1, 2])
    assert i.neg_().tolist() == [1, -2] and i.abs_().tolist() == [1, 2]
    assert pyframe.relu_(pyframe.tensor([-1.0, 1.0])).tolist() == [0.0, 1.0]


def test_new_factories():
    x = pyframe.ones(2, dtype=pyframe.float64)
    assert x.new_ones(3).dtype == pyframe.float64 and x.new_ones((2, 3)).shape == (2, 3)
    assert x.new_zeros(2, 2).sum().item() == 0 and x.new_empty(4).shape == (4,)
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0] and x.new_tensor([1, 2]).dtype == pyframe.float64
    assert (
        x.new_ones(2, dtype=pyframe.int64).dtype == pyframe.int64 and x.new_zeros(1, requires_grad=True).requires_grad
    )
