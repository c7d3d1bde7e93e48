"""Scans: cumsum and cumprod against NumPy in every dtype, float64 finite-difference gradients and torch's."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    fd_gradcheck,
)

RNG = np.random.default_rng(0)


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
    fd_gradcheck(lambda x: pyframe.cumsum(x, 1), a)
    fd_gradcheck(lambda x: pyframe.cumsum(x, 0), a)
    fd_gradcheck(lambda x: pyframe.cumprod(x, 1), a)
    z = a.copy()
    z[1, 2] = 0.0
    z[2, 0] = 0.0
    fd_gradcheck(lambda x: pyframe.cumprod(x, 1), z)  # zeros: the division-free path
    fd_gradcheck(lambda x: pyframe.cumprod(x, 0), z)


def test_scan_vs_torch():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    for dim in range(3):
        np.testing.assert_allclose(pyframe.tensor(a).cumsum(dim).numpy(), torch.tensor(a).cumsum(dim).numpy(),
                                   rtol=1e-6)  # fmt: skip
        np.testing.assert_allclose(pyframe.tensor(a).cumprod(dim).numpy(), torch.tensor(a).cumprod(dim).numpy(),
                                   rtol=1e-6)  # fmt: skip


@pytest.mark.parametrize("name", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32", "bool"])
def test_cummax_cummin_match_torch(name, dtype):
    torch = pytest.importorskip("torch")
    a = RNG.integers(0, 3, size=(3, 6)).astype(dtype)
    if dtype.startswith("float"):
        a[1, 2] = a[2, 4] = np.nan  # NaN takes over and stays; the index is the latest NaN's
    for dim in (0, 1, -1):
        want = getattr(torch, name)(torch.tensor(a), dim)
        got = getattr(pyframe.tensor(a), name)(dim)
        np.testing.assert_array_equal(got.values.numpy(), want.values.numpy())
        np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())  # ties: the latest index
    x = pyframe.tensor(a.astype(np.float64)[:, ::-1].copy())  # gradient to the element each output copied
    if dtype == "float64":
        b = RNG.standard_normal((3, 6))
        fd_gradcheck(lambda t: getattr(pyframe, name)(t, 1).values, b)
    assert getattr(pyframe, name)(x[0, 0], 0).values.shape == ()


def test_logcumsumexp_matches_torch_and_is_stable():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((4, 5)) * 30
    a[0, 0] = -np.inf
    a[1, :] = 1000.0  # exp overflows; the log-space sum does not
    for dim in (0, 1):
        np.testing.assert_allclose(pyframe.logcumsumexp(pyframe.tensor(a), dim).numpy(),
                                   torch.logcumsumexp(torch.tensor(a), dim).numpy(), rtol=1e-12)  # fmt: skip
    b = RNG.standard_normal((3, 4))
    fd_gradcheck(lambda t: pyframe.logcumsumexp(t, 1), b)
    fd_gradcheck(lambda t: t.logcumsumexp(0), b)
    with pytest.raises(RuntimeError, match="floating"):
        pyframe.logcumsumexp(pyframe.tensor([1, 2]), 0)
