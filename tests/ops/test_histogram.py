"""Counting into bins: bincount, histc, histogram, histogramdd against torch (and NumPy's histogram), with edge
values, weights, density and the error cases."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe

RNG = np.random.default_rng(3)


def test_bincount_counts_and_weights():
    x = np.array([0, 1, 1, 3, 1])
    np.testing.assert_array_equal(pyframe.bincount(pyframe.tensor(x)).numpy(), np.bincount(x))
    got = pyframe.tensor(x).bincount(minlength=7)
    assert got.dtype == pyframe.int64 and got.numpy().tolist() == np.bincount(x, minlength=7).tolist()
    w = RNG.standard_normal(5).astype(np.float32)
    got = pyframe.bincount(pyframe.tensor(x), pyframe.tensor(w))
    assert got.dtype == pyframe.float32
    np.testing.assert_allclose(got.numpy(), np.bincount(x, w), rtol=1e-6)
    assert pyframe.bincount(pyframe.tensor(x), pyframe.tensor([1, 2, 3, 4, 5])).dtype == pyframe.float64
    assert pyframe.bincount(pyframe.zeros(0, dtype=pyframe.int64), minlength=2).numpy().tolist() == [0, 0]
    for bad in (pyframe.tensor([-1, 2]), pyframe.tensor([[1]]), pyframe.tensor([1.0])):
        with pytest.raises(RuntimeError, match="non-negative"):
            pyframe.bincount(bad)


def test_histc_matches_torch_including_the_edges():
    torch = pytest.importorskip("torch")
    for dtype in ("float32", "float64"):
        a = RNG.standard_normal(200).astype(dtype)
        a[:3] = [-1.0, 1.0, 0.5]  # on edges, and the last edge (which the last bin holds)
        for bins, lo, hi in ((7, -1.0, 1.0), (4, 0, 0), (1, -3.0, 3.0)):
            want = torch.histc(torch.tensor(a), bins, lo, hi)
            got = pyframe.tensor(a).histc(bins, lo, hi)
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(pyframe.histc(pyframe.tensor([2.0, 2.0]), 3).numpy(), [0, 2, 0])  # range +-1
    with pytest.raises(RuntimeError, match="bins"):
        pyframe.histc(pyframe.ones(3), 0)
    with pytest.raises(RuntimeError, match="floating"):
        pyframe.histc(pyframe.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="larger"):
        pyframe.histc(pyframe.ones(3), 3, 2.0, 1.0)


@pytest.mark.parametrize("density", [False, True])
def test_histogram_matches_torch_and_numpy(density):
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal(100).astype(np.float32)
    w = RNG.random(100).astype(np.float32)
    for bins in (5, np.array([-2.0, -0.5, 0.0, 0.1, 3.0], dtype=np.float32)):
        tb = torch.tensor(bins) if isinstance(bins, np.ndarray) else bins
        pb = pyframe.tensor(bins) if isinstance(bins, np.ndarray) else bins
        want = torch.histogram(torch.tensor(a), tb, weight=torch.tensor(w), density=density)
        got = pyframe.tensor(a).histogram(pb, weight=pyframe.tensor(w), density=density)
        np.testing.assert_allclose(got.hist.numpy(), want.hist.numpy(), rtol=1e-5)
        np.testing.assert_array_equal(got.bin_edges.numpy(), want.bin_edges.numpy())
        ref, _ = np.histogram(a, bins if isinstance(bins, np.ndarray) else want.bin_edges.numpy(), weights=w,
                              density=density)  # fmt: skip
        np.testing.assert_allclose(got.hist.numpy(), ref, rtol=1e-4)
    got = pyframe.histogram(pyframe.tensor([0.0, 1.0, 1.0]), 2, range=(0.0, 2.0))
    assert got.hist.numpy().tolist() == [1, 2] and got.bin_edges.numpy().tolist() == [0, 1, 2]


def test_histogramdd_matches_torch():
    torch = pytest.importorskip("torch")
    pts = RNG.standard_normal((50, 3))
    w = RNG.random(50)
    want = torch.histogramdd(torch.tensor(pts), [3, 4, 2], weight=torch.tensor(w), density=True)
    got = pyframe.histogramdd(pyframe.tensor(pts), [3, 4, 2], weight=pyframe.tensor(w), density=True)
    np.testing.assert_allclose(got.hist.numpy(), want.hist.numpy(), rtol=1e-10)
    for e, f in zip(got.bin_edges, want.bin_edges, strict=True):
        np.testing.assert_allclose(e.numpy(), f.numpy(), rtol=1e-12)
    edges = [torch.tensor([-1.0, 0.0, 1.0], dtype=torch.float64)] * 3
    want = torch.histogramdd(torch.tensor(pts), edges)
    got = pyframe.histogramdd(pyframe.tensor(pts), [pyframe.tensor([-1.0, 0.0, 1.0], dtype=pyframe.float64)] * 3)
    np.testing.assert_array_equal(got.hist.numpy(), want.hist.numpy())
    with pytest.raises(RuntimeError, match="sequences of bin edges"):
        pyframe.histogramdd(pyframe.tensor(pts), [pyframe.tensor([1.0, 0.0], dtype=pyframe.float64)])
