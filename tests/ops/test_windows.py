"""Window functions: torch's formulas, periodic and symmetric, against NumPy's symmetric windows and torch."""

import math

import numpy as np
import pytest

import pyframe

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
NUMPY = {"hann_window": np.hanning, "hamming_window": np.hamming, "blackman_window": np.blackman,
         "bartlett_window": np.bartlett, "kaiser_window": lambda n: np.kaiser(n, 12.0)}  # fmt: skip


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("n", [2, 3, 8, 17])
def test_symmetric_windows_are_numpys(name, n):
    w = getattr(pyframe, name)(n, periodic=False, dtype=pyframe.float64)
    np.testing.assert_allclose(w.numpy(), NUMPY[name](n), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", WINDOWS)
def test_periodic_is_the_symmetric_window_one_longer_without_its_last_point(name):
    fn = getattr(pyframe, name)
    assert fn(9, dtype=pyframe.float64).tolist() == fn(10, periodic=False, dtype=pyframe.float64)[:-1].tolist()


@pytest.mark.parametrize("name", WINDOWS)
def test_lengths_zero_and_one_dtypes_and_errors(name):
    fn = getattr(pyframe, name)
    assert fn(0).shape == (0,) and fn(1).tolist() == [1.0] and fn(4).dtype is pyframe.float32
    assert fn(4, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="non-negative"):
        fn(-1)
    with pytest.raises(RuntimeError, match="floating point"):
        fn(4, dtype=pyframe.int64)


def test_hamming_takes_its_coefficients():
    w = pyframe.hamming_window(8, False, alpha=0.5, beta=0.5, dtype=pyframe.float64)
    assert w.tolist() == pytest.approx(pyframe.hann_window(8, False, dtype=pyframe.float64).tolist(), abs=1e-15)
    assert pyframe.kaiser_window(5, False, beta=0.0).tolist() == [1.0] * 5  # I0(0) / I0(0)
    assert math.isclose(pyframe.hann_window(4)[2].item(), 1.0)


@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(name, periodic):
    torch = pytest.importorskip("torch")
    for n in (0, 1, 2, 5, 16, 33):
        for pdt, tdt, tol in ((pyframe.float32, torch.float32, 2e-6), (pyframe.float64, torch.float64, 1e-14)):
            got = getattr(pyframe, name)(n, periodic, dtype=pdt).numpy()
            want = getattr(torch, name)(n, periodic, dtype=tdt).numpy()
            np.testing.assert_allclose(got, want, rtol=0, atol=tol)
