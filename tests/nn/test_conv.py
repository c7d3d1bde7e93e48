"""Conv1d, ConvTranspose1d/2d, the 1-d pools, interpolate/Upsample, PixelShuffle and the
channel dropouts against torch (float64, forward and gradients), gradchecks and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from pyframe.autograd import gradcheck

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def compare(pf_fn, torch_fn, *arrays, rtol=1e-9, atol=1e-10):
    ps = [pf.tensor(a, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    po, to = pf_fn(*ps), torch_fn(*ts)
    assert tuple(po.shape) == tuple(to.shape)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol)
    cot = rand(*to.shape, seed=99)
    po.backward(pf.tensor(cot))
    to.backward(torch.tensor(cot))
    for p, t in zip(ps, ts, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol)


CONV1D = [((2, 4, 9), (6, 4, 3), {}), ((2, 4, 9), (6, 2, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
          ((4, 9), (5, 4, 4), {"padding": "same"})]  # fmt: skip


@pytest.mark.parametrize("xs, ws, kw", CONV1D)
def test_conv1d(xs, ws, kw):
    compare(lambda x, w, b: F.conv1d(x, w, b, **kw), lambda x, w, b: TF.conv1d(x, w, b, **kw),
            rand(*xs), rand(*ws, seed=1), rand(ws[0], seed=2))  # fmt: skip


CONVT = [
    ((2, 4, 5, 6), (4, 3, 3, 3), {}),
    ((2, 4, 5, 6), (4, 3, 3, 2), {"stride": 2, "padding": 1, "output_padding": 1}),
    ((2, 4, 5, 6), (4, 2, 3, 3), {"stride": (2, 3), "groups": 2, "dilation": 2, "padding": (0, 2)}),
    ((4, 5, 6), (4, 3, 4, 4), {"stride": 2, "padding": 1}),
]


@pytest.mark.parametrize("xs, ws, kw", CONVT)
def test_conv_transpose2d(xs, ws, kw):
    o = ws[1] * kw.get("groups", 1)
    compare(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), lambda x, w, b: TF.conv_transpose2d(x, w, b, **kw),
            rand(*xs), rand(*ws, seed=1), rand(o, seed=2))  # fmt: skip


def test_conv_transpose1d_and_modules_match_torch():
    kw = {"stride": 3, "padding": 1, "output_padding": 2}
    compare(lambda x, w: F.conv_transpose1d(x, w, **kw), lambda x, w: TF.conv_transpose1d(x, w, **kw),
            rand(2, 3, 7), rand(3, 4, 4, seed=1))  # fmt: skip
    for build, shape in (
        (lambda n: n.Conv1d(3, 6, 3, stride=2, padding=1, groups=3), (2, 3, 10)),
        (lambda n: n.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1, bias=False), (2, 3, 5, 5)),
        (lambda n: n.ConvTranspose1d(3, 4, 5), (2, 3, 6)),
    ):
        t, p = build(torch.nn).double(), build(nn).double()
        assert [k for k, _ in t.named_parameters()] == [k for k, _ in p.named_parameters()]
        assert repr(t) == repr(p)
        with pf.no_grad():
            for a, b in zip(p.parameters(), t.parameters(), strict=True):
                a.copy_(pf.tensor(b.detach().numpy()))
        x = rand(*shape)
        np.testing.assert_allclose(p(pf.tensor(x)).detach().numpy(), t(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-9, atol=1e-10)  # fmt: skip


def test_conv_init_bounds_as_torch():
    pf.manual_seed(0)
    m = nn.ConvTranspose2d(64, 8, 3)  # torch's fan-in is weight.size(1) * k*k = 8 * 9
    bound = 1 / np.sqrt(8 * 9)
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    assert np.abs(m.weight.detach().numpy()).max() > 0.7 * bound


def test_conv_transpose_gradcheck():
    x = pf.tensor(rand(1, 2, 3, 3), requires_grad=True)
    w = pf.tensor(rand(2, 2, 2, 2, seed=1), requires_grad=True)
    assert gradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1).pow(2).sum(), (x, w), eps=1e-6,
                     atol=1e-6, rtol=1e-4)  # fmt: skip


def test_pools_1d():
    x = rand(2, 3, 11)
    compare(lambda x: F.max_pool1d(x, 3, 2, 1), lambda x: TF.max_pool1d(x, 3, 2, 1), x)
    compare(lambda x: F.avg_pool1d(x, 4, 2, 2, count_include_pad=False),
            lambda x: TF.avg_pool1d(x, 4, 2, 2, count_include_pad=False), x)  # fmt: skip
    compare(lambda x: F.adaptive_avg_pool1d(x, 4), lambda x: TF.adaptive_avg_pool1d(x, 4), x)
    compare(lambda x: nn.AdaptiveAvgPool1d(5)(x), lambda x: torch.nn.AdaptiveAvgPool1d(5)(x), x[0])
    v, i = F.max_pool1d(pf.tensor(x), 2, return_indices=True)
    tv, ti = TF.max_pool1d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


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
]


@pytest.mark.parametrize("shape, kw", INTERP)
def test_interpolate_matches_torch(shape, kw):
    compare(lambda x: F.interpolate(x, **kw), lambda x: TF.interpolate(x, **kw), rand(*shape))


def test_interpolate_float32_indices_as_torch():
    x = rand(1, 1, 7, 13).astype(np.float32)
    for kw in ({"scale_factor": 1.3}, {"size": (10, 30), "mode": "bilinear"}, {"size": (3, 5)}):
        np.testing.assert_allclose(F.interpolate(pf.tensor(x), **kw).numpy(),
                                   TF.interpolate(torch.tensor(x), **kw).numpy(), rtol=1e-6, atol=1e-6)  # fmt: skip
    up = nn.UpsamplingBilinear2d(scale_factor=2)
    np.testing.assert_allclose(up(pf.tensor(x)).numpy(), torch.nn.UpsamplingBilinear2d(scale_factor=2)(
        torch.tensor(x)).numpy(), rtol=1e-6, atol=1e-6)  # fmt: skip


def test_pixel_shuffle_roundtrip_matches_torch():
    x = rand(2, 12, 3, 4)
    compare(lambda x: F.pixel_shuffle(x, 2), lambda x: TF.pixel_shuffle(x, 2), x)
    compare(lambda x: nn.PixelUnshuffle(2)(x), lambda x: torch.nn.PixelUnshuffle(2)(x), rand(3, 4, 6, 8))
    y = F.pixel_unshuffle(F.pixel_shuffle(pf.tensor(x), 2), 2)
    np.testing.assert_array_equal(y.numpy(), x)


def test_channel_dropout():
    pf.manual_seed(0)
    x = pf.ones(4, 8, 3, 3)
    y = nn.Dropout2d(0.5)(x).numpy()
    per_channel = y.reshape(4, 8, 9)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    assert 0 < (per_channel[..., 0] == 0).sum() < 32
    assert nn.Dropout2d().eval()(x) is x
    with pytest.warns(UserWarning, match="3D input to dropout2d"):
        y = F.dropout2d(pf.ones(2, 6, 5))
    assert np.all((y.numpy() == 0).all(-1) | (y.numpy() == 2).all(-1))
    z = F.dropout1d(pf.ones(6, 5), 0.5).numpy()
    assert np.all((z == 0).all(-1) | (z == 2).all(-1))
    z = F.dropout3d(pf.ones(2, 3, 2, 2, 2), 0.5).numpy().reshape(2, 3, 8)
    assert np.all((z == 0).all(-1) | (z == 2).all(-1))


def test_bad_input():
    with pytest.raises(ValueError, match="3-d"):
        F.conv1d(pf.randn(2, 3, 4, 5), pf.randn(2, 3, 1))
    with pytest.raises(ValueError, match="expects 3"):
        F.conv_transpose2d(pf.randn(1, 2, 4, 4), pf.randn(3, 2, 3, 3))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(pf.randn(1, 2, 4, 4), pf.randn(2, 2, 3, 3), stride=1, output_padding=1)
    with pytest.raises(ValueError, match="only one of size or scale_factor"):
        F.interpolate(pf.randn(1, 1, 4, 4), size=3, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor"):
        F.interpolate(pf.randn(1, 1, 4, 4))
    with pytest.raises(ValueError, match="align_corners option"):
        F.interpolate(pf.randn(1, 1, 4, 4), size=3, align_corners=True)
    with pytest.raises(NotImplementedError, match="needs 4D input"):
        F.interpolate(pf.randn(1, 1, 4), size=3, mode="bilinear")
    with pytest.raises(ValueError, match="mode must be one of"):
        F.interpolate(pf.randn(1, 1, 4, 4), size=3, mode="cubic")
    with pytest.raises(ValueError, match="divisible by the square"):
        F.pixel_shuffle(pf.randn(1, 5, 2, 2), 2)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout2d(pf.randn(1, 2, 3, 3), 2.0)
    with pytest.raises(ValueError, match="4-d"):
        F.dropout2d(pf.randn(1, 2, 3, 3, 3))


def test_inplace_activation_after_conv_and_3d_linear_under_autograd():
    """Conv2d and Linear on 3-d input own their output (torch's _unsafe_view): the DCGAN pattern
    Conv2d -> LeakyReLU(inplace=True) trains, and its gradient matches the out-of-place one."""
    rng = np.random.default_rng(0)
    x = pf.tensor(rng.normal(size=(2, 1, 6, 6)).astype(np.float32))
    for make in (lambda: pf.nn.Conv2d(1, 3, 3, bias=False), lambda: pf.nn.Linear(6, 4)):
        m = make()
        grads = []
        for inplace in (True, False):
            m.zero_grad()
            y = pf.nn.LeakyReLU(0.2, inplace=inplace)(m(x))
            y.square().sum().backward()
            grads.append(m.weight.grad.numpy().copy())
        np.testing.assert_allclose(grads[0], grads[1], rtol=1e-6)
