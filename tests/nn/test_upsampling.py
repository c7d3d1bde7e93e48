"""interpolate/Upsample in every mode and pixel_shuffle/unshuffle against torch (float64 forward and
gradients, float32 indices), and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from tests._oracle import compare_f64, rand

torch = pytest.importorskip("torch")
TF = torch.nn.functional


INTERP = [
    ((2, 3, 5, 4), {"size": (7, 9)}),
    ((2, 3, 5, 4), {"scale_factor": 2}),
    ((2, 3, 5, 4), {"scale_factor": 0.6, "mode": "nearest"}),
    ((2, 3, 5, 4), {"scale_factor": 1.7, "mode": "nearest-exact"}),
    ((2, 3, 5, 4), {"size": (8, 3), "mode": "bilinear"}),
    ((2, 3, 5, 4), {"scale_factor": 2.5, "mode": "bilinear"}),
    ((2, 3, 5, 4), {"size": (8, 7), "mode": "bilinear", "align_corners": True}),
    ((2, 3, 5, 4), {"scale_factor": 1.5, "mode": "bilinear", "recompute_scale_factor": True}),
    ((2, 3, 6), {"size": 11, "mode": "linear"}),
    ((2, 3, 6), {"scale_factor": 3, "mode": "nearest"}),
    ((1, 2, 3, 4, 5), {"size": (5, 3, 7), "mode": "trilinear", "align_corners": False}),
    ((2, 3, 6, 9), {"size": (4, 5), "mode": "area"}),
    ((1, 2, 5, 6, 7), {"size": (3, 4, 2), "mode": "area"}),
    ((2, 3, 5, 4), {"size": (9, 7), "mode": "bicubic"}),
    ((2, 3, 5, 4), {"scale_factor": 0.7, "mode": "bicubic", "align_corners": True}),
    ((2, 3, 9, 13), {"size": (4, 5), "mode": "bilinear", "antialias": True}),
    ((2, 3, 9, 13), {"size": (18, 6), "mode": "bicubic", "antialias": True}),
    ((2, 3, 9, 13), {"scale_factor": 0.3, "mode": "bicubic", "antialias": True, "align_corners": True}),
]


@pytest.mark.parametrize("shape, kw", INTERP)
def test_interpolate_matches_torch(shape, kw):
    compare_f64(lambda x: F.interpolate(x, **kw), lambda x: TF.interpolate(x, **kw), rand(*shape))


def test_interpolate_float32_indices_as_torch():
    x = rand(1, 1, 7, 13).astype(np.float32)
    for kw in ({"scale_factor": 1.3}, {"size": (10, 30), "mode": "bilinear"}, {"size": (3, 5)}):
        np.testing.assert_allclose(F.interpolate(pf.tensor(x), **kw).numpy(),
                                   TF.interpolate(torch.tensor(x), **kw).numpy(), rtol=1e-6, atol=1e-6)  # fmt: skip
    up = nn.UpsamplingBilinear2d(scale_factor=2)
    np.testing.assert_allclose(up(pf.tensor(x)).numpy(), torch.nn.UpsamplingBilinear2d(scale_factor=2)(
        torch.tensor(x)).numpy(), rtol=1e-6, atol=1e-6)  # fmt: skip


def test_upsample_nearest_and_bilinear_match_torch():
    x = rand(2, 3, 4, 5)
    compare_f64(lambda x: F.upsample_nearest(x, scale_factor=2), lambda x: TF.interpolate(x, scale_factor=2), x)
    compare_f64(lambda x: F.upsample_bilinear(x, (7, 3)),
                lambda x: TF.interpolate(x, (7, 3), mode="bilinear", align_corners=True), x)  # fmt: skip


def test_pixel_shuffle_roundtrip_matches_torch():
    x = rand(2, 12, 3, 4)
    compare_f64(lambda x: F.pixel_shuffle(x, 2), lambda x: TF.pixel_shuffle(x, 2), x)
    compare_f64(lambda x: nn.PixelUnshuffle(2)(x), lambda x: torch.nn.PixelUnshuffle(2)(x), rand(3, 4, 6, 8))
    y = F.pixel_unshuffle(F.pixel_shuffle(pf.tensor(x), 2), 2)
    np.testing.assert_array_equal(y.numpy(), x)


def test_interpolate_and_pixel_shuffle_bad_input():
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(pf.randn(1, 1, 4, 4), size=3, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(pf.randn(1, 1, 4, 4))
    with pytest.raises(ValueError, match="align_corners option"):
        F.interpolate(pf.randn(1, 1, 4, 4), size=3, align_corners=True)
    with pytest.raises(NotImplementedError, match="needs 4D input"):
        F.interpolate(pf.randn(1, 1, 4), size=3, mode="bilinear")
    with pytest.raises(NotImplementedError, match="anti-alias option is restricted"):
        F.interpolate(pf.randn(1, 1, 4, 4), size=3, antialias=True)
    with pytest.raises(NotImplementedError, match="bicubic mode needs 4D input"):
        F.interpolate(pf.randn(1, 1, 4), size=3, mode="bicubic")
    with pytest.raises(ValueError, match="mode must be one of"):
        F.interpolate(pf.randn(1, 1, 4, 4), size=3, mode="cubic")
    with pytest.raises(ValueError, match="divisible by the square"):
        F.pixel_shuffle(pf.randn(1, 5, 2, 2), 2)


def test_channel_shuffle_module_matches_torch():
    x = np.arange(2 * 6 * 2 * 3, dtype=np.float32).reshape(2, 6, 2, 3)
    for groups in (1, 2, 3, 6):
        m, t = nn.ChannelShuffle(groups), torch.nn.ChannelShuffle(groups)
        assert repr(m) == repr(t)
        np.testing.assert_array_equal(m(pf.tensor(x)).numpy(), t(torch.tensor(x)).numpy())
    with pytest.raises(RuntimeError, match="divisible by groups"):
        nn.ChannelShuffle(4)(pf.tensor(x))
