"""Sorting and selection: sort (stable, NaN last), topk, kthvalue, unique against NumPy and torch; float64
gradients and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    fd_gradcheck,
    t64,
)

RNG = np.random.default_rng(0)


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


def _stable_order(a: np.ndarray, descending: bool) -> np.ndarray:
    """torch's stable order along the last dim: NaN after every number (before them when descending), -0 equal
    to +0, ties in index order."""
    key = np.where(np.isnan(a), np.inf, a) if a.dtype.kind == "f" else a.astype(np.float64)
    nan = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
    if descending:  # NaN first, then descending values; lexsort's last key is the primary one
        return np.lexsort((np.broadcast_to(np.arange(a.shape[-1]), a.shape), -key, ~nan), axis=-1)
    return np.lexsort((np.broadcast_to(np.arange(a.shape[-1]), a.shape), key, nan), axis=-1)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "uint8"])
@pytest.mark.parametrize("n", [256, 1000])
def test_long_rows_sort_stably_with_nan_and_signed_zeros(dtype, n):
    """Rows of 256 and more take the radix path: keys must order like the comparisons they replace."""
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        a = RNG.integers(-3, 3, (3, n)).astype(np.float64)  # ties
        m = RNG.random(a.shape)
        a[m < 0.1], a[(m > 0.1) & (m < 0.2)], a[(m > 0.2) & (m < 0.25)] = np.nan, -0.0, -np.inf
        a[(m > 0.25) & (m < 0.3)] = np.inf
        a[0] = RNG.standard_normal(n) * 1e30  # a row of distinct values spread over the exponents
    elif dtype == "int64":
        a = RNG.integers(-(2**62), 2**62, (3, n))
        a[1] = RNG.integers(-2, 2, n)
    else:
        info = np.iinfo(dtype)
        a = RNG.integers(info.min, int(info.max) + 1, (3, n)).astype(np.int64)
        a[1] = RNG.integers(0, 3, n)
    x = pyframe.tensor(a, dtype=getattr(pyframe, dtype))
    exact = x.to(pyframe.float64).numpy() if dtype != "int64" else a  # the values as the dtype holds them
    for descending in (False, True):
        for dim, t in ((1, x), (0, x.t().contiguous())):
            v, i = pyframe.sort(t, dim=dim, descending=descending)
            got = i.numpy() if dim == 1 else i.numpy().T
            np.testing.assert_array_equal(got, _stable_order(exact, descending))
            vals = v.to(pyframe.float64).numpy() if dtype != "int64" else v.numpy()
            np.testing.assert_array_equal(vals if dim == 1 else vals.T, np.take_along_axis(exact, got, 1))
            if dtype == "float32":  # -0 keeps its sign through the sort
                signs = np.signbit(v.numpy() if dim == 1 else v.numpy().T)
                np.testing.assert_array_equal(signs, np.signbit(np.take_along_axis(a, got, 1)))


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("nan_share", [0.0, 0.01, 0.5, 0.999])
def test_topk_small_k_is_the_sorts_prefix(largest, nan_share):
    """topk's heap path tests blocks of 64 against the worst kept value before comparing exactly: with NaN in
    the row (the largest value) and ties it must still pick what the stable sort puts first."""
    a = RNG.integers(-4, 4, (4, 3000)).astype(np.float32)
    a[RNG.random(a.shape) < nan_share] = np.nan
    x = pyframe.tensor(a)
    for k in (1, 10, 300):
        v, i = pyframe.topk(x, k, largest=largest)
        sv, si = pyframe.sort(x, descending=largest)
        np.testing.assert_array_equal(i.numpy(), si.numpy()[:, :k])
        np.testing.assert_array_equal(v.numpy(), sv.numpy()[:, :k])


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
    fd_gradcheck(lambda x: pyframe.sort(x, dim=1)[0], a)
    fd_gradcheck(lambda x: pyframe.sort(x, dim=0, descending=True).values, a)
    fd_gradcheck(lambda x: pyframe.topk(x, 2, dim=1).values, a)
    fd_gradcheck(lambda x: pyframe.kthvalue(x, 2, 0).values, a)
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


# ---- rearranging ------------------------------------------------------------------------------


# ---- einsum -----------------------------------------------------------------------------------


# ---- comparisons, in-place unary, new_* ----------------------------------------------------------


def test_topk_and_kthvalue_refuse_bool_as_torch():
    for call in (lambda x: pyframe.topk(x, 1), lambda x: pyframe.kthvalue(x, 1)):
        with pytest.raises(TypeError, match="bool"):
            call(pyframe.tensor([True, False]))
    assert pyframe.sort(pyframe.tensor([True, False])).values.tolist() == [False, True]  # sort takes bools


def test_searchsorted_and_bucketize_match_torch():
    torch = pytest.importorskip("torch")
    seq = np.sort(RNG.integers(0, 10, (3, 8)), axis=1).astype(np.float64)
    vals = RNG.integers(-1, 11, (3, 5)).astype(np.float64)
    for kw in (dict(), dict(right=True), dict(side="right"), dict(out_int32=True)):
        want = torch.searchsorted(torch.tensor(seq), torch.tensor(vals), **kw)
        got = pyframe.searchsorted(pyframe.tensor(seq), pyframe.tensor(vals), **kw)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    flat = np.array([1.0, 3.0, 3.0, 7.0, np.nan])
    for right in (False, True):
        want = torch.searchsorted(torch.tensor(flat), torch.tensor([[3.0, np.nan], [0.0, 8.0]]), right=right)
        got = pyframe.searchsorted(pyframe.tensor(flat), pyframe.tensor([[3.0, np.nan], [0.0, 8.0]]), right=right)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        got = pyframe.bucketize(pyframe.tensor(vals), pyframe.tensor(flat[:4]), right=right)
        np.testing.assert_array_equal(got, torch.bucketize(torch.tensor(vals), torch.tensor(flat[:4]), right=right))
    perm = np.array([1, 2, 0])  # argsort of [5, 1, 3]
    got = pyframe.searchsorted(pyframe.tensor([5, 1, 3]), pyframe.tensor([2, 4]), sorter=pyframe.tensor(perm))
    assert got.numpy().tolist() == [1, 2]
    with pytest.raises(RuntimeError, match="opposites"):
        pyframe.searchsorted(pyframe.tensor([1]), pyframe.tensor([1]), right=True, side="left")
    with pytest.raises(RuntimeError, match="boundaries"):
        pyframe.searchsorted(pyframe.tensor([[1, 2]]), pyframe.tensor([1, 2]))


def test_isin_unique_consecutive_and_mode_match_torch():
    torch = pytest.importorskip("torch")
    a = RNG.integers(0, 6, (4, 5))
    t = np.array([1, 4, 4, 9])
    for invert in (False, True):
        np.testing.assert_array_equal(pyframe.isin(pyframe.tensor(a), pyframe.tensor(t), invert=invert).numpy(),
                                      np.isin(a, t, invert=invert))  # fmt: skip
    assert bool(pyframe.isin(3, pyframe.tensor([1, 3])))
    assert not pyframe.isin(pyframe.tensor([1.0]), pyframe.zeros(0)).any()
    runs = np.array([1, 1, 2, 2, 3, 1, 1, 2])
    got = pyframe.unique_consecutive(pyframe.tensor(runs), return_inverse=True, return_counts=True)
    want = torch.unique_consecutive(torch.tensor(runs), return_inverse=True, return_counts=True)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    rows = np.array([[1, 2], [1, 2], [0, 2], [1, 2]])
    got = pyframe.tensor(rows).unique_consecutive(return_counts=True, dim=0)
    want = torch.tensor(rows).unique_consecutive(return_counts=True, dim=0)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    m = RNG.integers(0, 4, (3, 9)).astype(np.float64)
    for dim in (0, 1):
        want = torch.mode(torch.tensor(m), dim)
        got = pyframe.tensor(m).mode(dim, keepdim=False)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())  # the last occurrence
    fd_gradcheck(lambda x: pyframe.mode(x, 1, keepdim=True).values, RNG.standard_normal((3, 4)))
