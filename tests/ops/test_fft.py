"""pyframe.fft (pyframe/ops/fft.py, core_c/src/fft.c): the real-to-real transforms of torch.fft on real inputs
against torch, every length (powers of two and the Bluestein path), n/s cutting and padding, each norm, the
float64 gradients, and fftshift, ifftshift, fftfreq, rfftfreq."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf

torch = pytest.importorskip("torch")

CASES = [
    ("irfft", (31,), {}), ("irfft", (5, 6, 7), {"n": 10, "dim": 1, "norm": "ortho"}), ("irfft", (4, 9), {"n": 7}),
    ("irfft", (3, 17), {"dim": 0, "norm": "forward"}), ("irfft", (2,), {}), ("irfft", (64,), {}),
    ("irfft2", (5, 6, 7), {}), ("irfft2", (5, 6, 7), {"s": (3, 10), "dim": (0, 2), "norm": "ortho"}),
    ("irfftn", (5, 6, 7), {}), ("irfftn", (5, 6, 7), {"s": (8,)}), ("irfftn", (4, 5, 6), {"dim": (0, -1)}),
    ("hfft", (31,), {}), ("hfft", (5, 6, 7), {"n": 10, "dim": 1, "norm": "ortho"}),
    ("hfft", (6, 8), {"norm": "forward"}),
    ("hfft2", (5, 6, 7), {"s": (6, 8)}), ("hfftn", (5, 6, 7), {"dim": (-3, -2, -1)}), ("hfftn", (3, 4), {"s": (5, 9)}),
]  # fmt: skip


@pytest.mark.parametrize(("fn", "shape", "kw"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_real_transforms_match_torch_with_gradients(fn, shape, kw, rng):
    x = rng.standard_normal(shape)
    for dt, tol in ((np.float64, 1e-10), (np.float32, 2e-4)):
        ours = getattr(pf.fft, fn)(pf.tensor(x.astype(dt)), **kw)
        theirs = getattr(torch.fft, fn)(torch.tensor(x.astype(dt)), **kw)
        assert ours.dtype == (pf.float64 if dt is np.float64 else pf.float32)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)
    p, t = pf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    yp, yt = getattr(pf.fft, fn)(p, **kw), getattr(torch.fft, fn)(t, **kw)
    w = rng.standard_normal(tuple(yt.shape))
    (gp,) = pf.autograd.grad((yp * pf.tensor(w)).sum(), p)
    (gt,) = torch.autograd.grad((yt * torch.tensor(w)).sum(), t)
    np.testing.assert_allclose(gp.numpy(), gt.numpy(), rtol=1e-9, atol=1e-10)


def test_shifts_frequencies_and_errors():
    x = np.arange(30.0).reshape(5, 6)
    for dim in (None, 0, (1,), (0, 1)):
        np.testing.assert_array_equal(pf.fft.fftshift(pf.tensor(x), dim).numpy(), np.fft.fftshift(x, dim))
        np.testing.assert_array_equal(pf.fft.ifftshift(pf.tensor(x), dim).numpy(), np.fft.ifftshift(x, dim))
    for n in (1, 6, 7):
        np.testing.assert_allclose(pf.fft.fftfreq(n, 0.5).numpy(), np.fft.fftfreq(n, 0.5), rtol=1e-7)
        np.testing.assert_allclose(pf.fft.rfftfreq(n).numpy(), np.fft.rfftfreq(n), rtol=1e-7)
    assert pf.fft.irfft(pf.tensor([1, 2, 3])).dtype == pf.float32  # integers compute in the default dtype
    with pytest.raises(ValueError, match="normalization"):
        pf.fft.irfft(pf.ones(4), norm="twice")
    with pytest.raises(RuntimeError, match="number of data points"):
        pf.fft.irfft(pf.ones(1))
    with pytest.raises(ValueError, match="same length"):
        pf.fft.irfftn(pf.ones(4, 4), s=(4,), dim=(0, 1))
