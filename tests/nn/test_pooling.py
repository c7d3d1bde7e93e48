"""Pooling against torch: max (values, indices, gradients, NaN and ties, strided input, the C kernel's checks),
average, power-average and adaptive pools in 1-3 dims with ceil_mode, max_unpool, functional and modules;
gradchecks and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from pyframe._backend import ShapeError, check, lib
from tests._oracle import both, compare, compare_f64, f64, gc, grads_equal, leaf, rand, randn
from tests._tables import module_float64_table_test, module_table_test, reprs_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional


POOL_CASES = [  # kernel, stride, padding, dilation
    (2, None, 0, 1),
    (3, 2, 1, 1),
    ((2, 3), (1, 2), (1, 1), 1),
    (2, 1, 0, 2),
]


def _distinct(rng, *shape):
    """Values without ties, so that max pooling's gradient is well defined."""
    return rng.permutation(np.prod(shape)).reshape(shape) / 7.0 - 3.0


@pytest.mark.parametrize("k, s, p, d", POOL_CASES)
def test_max_pool2d_matches_torch(rng, k, s, p, d):
    x = _distinct(rng, 2, 3, 7, 8)
    compare(lambda x: F.max_pool2d(x, k, s, p, d), lambda x: TF.max_pool2d(x, k, s, p, d), x)
    out, idx = F.max_pool2d(pf.tensor(x), k, s, p, d, return_indices=True)
    tout, tidx = TF.max_pool2d(torch.tensor(x), k, s, p, d, return_indices=True)
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    assert idx.dtype == pf.int64


def test_max_pool2d_ties_and_nan_like_torch():
    """All-zero windows (common after ReLU) send the gradient to the first position; NaN wins."""
    x = np.zeros((1, 1, 4, 6))
    x[0, 0, 2, 3] = np.nan
    compare(lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), x)
    idx = F.max_pool2d(pf.tensor(x), 2, return_indices=True)[1]
    np.testing.assert_array_equal(idx.numpy(), TF.max_pool2d(torch.tensor(x), 2, return_indices=True)[1].numpy())


def test_max_pool2d_unbatched_and_float32(rng):
    x = _distinct(rng, 3, 6, 6).astype(np.float32)
    compare(lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), x)


@pytest.mark.parametrize("k, s, p, d", POOL_CASES[1:])
def test_max_pool2d_gradcheck(rng, k, s, p, d):
    x = leaf(_distinct(rng, 1, 2, 6, 6))
    gc(lambda x: F.max_pool2d(x, k, s, p, d), x)


def test_max_pool2d_bad_input():
    with pytest.raises(ValueError, match="pad should be at most half of effective kernel size, but got pad=2"):
        F.max_pool2d(pf.randn(1, 1, 5, 5), 3, padding=2)
    with pytest.raises(ShapeError, match=r"input size 3 with padding 0 is too small for kernel size 4"):
        F.max_pool2d(pf.randn(1, 1, 3, 3), 4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "k, s, p, d", [(2, 2, 0, 1), (3, 1, 1, 1), (3, 2, 1, 1), ((2, 3), (2, 1), (1, 0), 1), (2, 1, 1, 2), (3, 3, 0, 1)]
)
def test_max_pool2d_strided_input_values_indices_grads(dtype, k, s, p, d):
    rng = np.random.default_rng(3)
    # a permuted (non-contiguous) input with ties: zeros as after ReLU
    base = np.maximum(rng.standard_normal((2, 3, 9, 8)), 0).astype(dtype)
    px, tx = both(base)
    pv, tv = px.permute(0, 1, 3, 2), tx.permute(0, 1, 3, 2)
    po, pi = F.max_pool2d(pv, k, s, p, d, return_indices=True)
    to, ti = TF.max_pool2d(tv, k, s, p, d, return_indices=True)
    np.testing.assert_array_equal(pi.numpy(), ti.numpy())
    grads_equal(po, to, [px], [tx], rtol=0, atol=0)


def test_max_pool2d_nan_inf_and_odd_sizes():
    x = np.full((1, 2, 5, 7), -np.inf)
    x[0, 0, 1, 1] = np.nan
    x[0, 0, 0, 0] = np.nan  # two NaNs in one window: torch keeps the last one seen
    x[0, 1, 3, 4] = 2.0
    for k, s in ((2, 2), (3, 2), (2, 1)):
        po, pi = F.max_pool2d(pf.tensor(x), k, s, return_indices=True)
        to, ti = TF.max_pool2d(torch.tensor(x), k, s, return_indices=True)
        np.testing.assert_array_equal(po.numpy(), to.numpy())
        np.testing.assert_array_equal(pi.numpy(), ti.numpy())


def test_max_pool2d_double_backward_matches_torch():
    xa = np.random.default_rng(4).permutation(2 * 2 * 6 * 6).reshape(2, 2, 6, 6) / 5.0
    res = []
    for lib_, fns in ((pf, F), (torch, TF)):
        x = lib_.tensor(xa, requires_grad=True)
        y = fns.max_pool2d(x * x, 3, 2, 1)
        (gx,) = (pf.autograd if lib_ is pf else torch.autograd).grad((y * y).sum(), [x], create_graph=True)
        (gx * gx).sum().backward()
        res.append(x.grad.detach().numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12)


def test_max_pool_backward_kernel_refuses_bad_indices():
    gy, gx = pf.ones(1, 1, 1, 2, 2), pf.empty(1, 1, 1, 4, 4)
    idx = pf.tensor([[[[[0, 1], [4, 16]]]]])
    with pytest.raises(IndexError, match="index 16 .* outside the input plane of 16 elements"):
        check(lib.pf_max_pool_backward(gy._d(), idx._d(), gx._d()))
    with pytest.raises(TypeError, match="indices must be int64"):
        check(lib.pf_max_pool_backward(gy._d(), gy._d(), gx._d()))
    with pytest.raises(ValueError, match="output size 2 of spatial dim 1 should be 1"):  # the C core checks shapes
        check(lib.pf_max_pool(gx._d(), pf.empty(1, 1, 1, 2, 2)._d(), idx._d(), [1, 3, 3, 1, 3, 3, 0, 0, 0, 1, 1, 1, 0]))


CEIL_CASES = [  # kernel, stride, padding, input size
    (2, 2, 0, 5), (3, 2, 1, 6), (3, 2, 0, 8), (2, 3, 1, 7), (4, 3, 2, 9),
]  # fmt: skip


@pytest.mark.parametrize("k, s, p, n", CEIL_CASES)
def test_ceil_mode_pools_match_torch(rng, k, s, p, n):
    x = _distinct(rng, 2, 3, n, n + 1)
    for kw in ({}, {"count_include_pad": False}, {"divisor_override": 2}):
        compare(lambda x, kw=kw: F.avg_pool2d(x, k, s, p, True, **kw),
                lambda x, kw=kw: TF.avg_pool2d(x, k, s, p, True, **kw), x)  # fmt: skip
    compare(lambda x: F.max_pool2d(x, k, s, p, ceil_mode=True), lambda x: TF.max_pool2d(x, k, s, p, ceil_mode=True),
            x)  # fmt: skip
    compare(lambda x: F.max_pool1d(x, k, s, p, ceil_mode=True), lambda x: TF.max_pool1d(x, k, s, p, ceil_mode=True),
            x[0])  # fmt: skip
    compare(lambda x: F.avg_pool1d(x, k, s, p, True, False), lambda x: TF.avg_pool1d(x, k, s, p, True, False), x[0])
    _, pi = F.max_pool2d(pf.tensor(x), k, s, p, ceil_mode=True, return_indices=True)
    _, ti = TF.max_pool2d(torch.tensor(x), k, s, p, ceil_mode=True, return_indices=True)
    np.testing.assert_array_equal(pi.numpy(), ti.numpy())


def test_ceil_mode_gradcheck_and_double_backward(rng):
    x = leaf(_distinct(rng, 1, 2, 5, 7))
    gc(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), x)
    gc(lambda x: F.max_pool2d(x, 2, 2, ceil_mode=True), x)
    res = []
    for lib_, fns in ((pf, F), (torch, TF)):
        t = lib_.tensor(x.detach().numpy(), requires_grad=True)
        y = fns.avg_pool2d(t * t, 3, 2, 1, ceil_mode=True)
        (g,) = (pf.autograd if lib_ is pf else torch.autograd).grad((y * y).sum(), [t], create_graph=True)
        (g * g).sum().backward()
        res.append(t.grad.detach().numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-12)


POOL3D_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    (2, None, 0, 1, False), (3, 2, 1, 1, False), ((2, 3, 2), (1, 2, 2), (1, 1, 0), 1, True), (2, 1, 0, 2, False),
]  # fmt: skip


@pytest.mark.parametrize("k, s, p, d, ceil", POOL3D_CASES)
def test_pools_3d_match_torch(rng, k, s, p, d, ceil):
    x = _distinct(rng, 2, 2, 5, 6, 7)
    compare(lambda x: F.max_pool3d(x, k, s, p, d, ceil), lambda x: TF.max_pool3d(x, k, s, p, d, ceil), x)
    _, pi = F.max_pool3d(pf.tensor(x), k, s, p, d, ceil, return_indices=True)
    _, ti = TF.max_pool3d(torch.tensor(x), k, s, p, d, ceil, return_indices=True)
    np.testing.assert_array_equal(pi.numpy(), ti.numpy())
    if d == 1:
        for cip in (True, False):
            compare(lambda x, c=cip: F.avg_pool3d(x, k, s, p, ceil, c),
                    lambda x, c=cip: TF.avg_pool3d(x, k, s, p, ceil, c), x)  # fmt: skip
    compare(lambda x: F.lp_pool3d(x.abs() + 0.1, 2.0, k, s, ceil), lambda x: TF.lp_pool3d(x.abs() + 0.1, 2.0, k, s,
            ceil), x)  # fmt: skip


@pytest.mark.parametrize("size", [1, (2, 3, 4), (3, None, 5)])
def test_adaptive_pools_3d_match_torch(rng, size):
    x = _distinct(rng, 2, 3, 5, 6, 7)
    compare(lambda x: F.adaptive_avg_pool3d(x, size), lambda x: TF.adaptive_avg_pool3d(x, size), x)
    compare(lambda x: F.adaptive_max_pool3d(x, size), lambda x: TF.adaptive_max_pool3d(x, size), x)
    _, pi = F.adaptive_max_pool3d(pf.tensor(x), size, True)
    _, ti = TF.adaptive_max_pool3d(torch.tensor(x), size, True)
    np.testing.assert_array_equal(pi.numpy(), ti.numpy())
    gc(lambda x: F.adaptive_avg_pool3d(x, size), leaf(x[:1, :2]))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_matches_torch(rng, dims):
    shape = (2, 3) + (6, 8, 4)[:dims]
    x = _distinct(rng, *shape)
    pool, unpool = getattr(F, f"max_pool{dims}d"), getattr(F, f"max_unpool{dims}d")
    tpool, tunpool = getattr(TF, f"max_pool{dims}d"), getattr(TF, f"max_unpool{dims}d")
    out, idx = pool(pf.tensor(x), 2, return_indices=True)
    tout, tidx = tpool(torch.tensor(x), 2, return_indices=True)
    size = list(shape)
    compare(lambda v: unpool(v, idx, 2, output_size=size), lambda v: tunpool(v, tidx, 2, output_size=size),
            tout.numpy())  # fmt: skip
    compare(lambda v: unpool(v, idx[0], 2), lambda v: tunpool(v, tidx[0], 2), tout.numpy()[0])
    module = getattr(nn, f"MaxUnpool{dims}d")(2)
    assert repr(module) == repr(getattr(torch.nn, f"MaxUnpool{dims}d")(2))
    np.testing.assert_array_equal(module(out, idx).numpy(), tunpool(tout, tidx, 2).numpy())


def test_max_unpool_bad_input():
    x, idx = F.max_pool2d(pf.randn(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(x, idx, 2, output_size=(9, 9))
    with pytest.raises(IndexError, match="invalid max index 16"):
        F.max_unpool2d(x, pf.full_like(idx, 16), 2)
    with pytest.raises(TypeError, match="indices must be int64"):
        F.max_unpool2d(x, x, 2)


@pytest.mark.parametrize("k, s, p", [(2, None, 0), (3, 2, 1), ((2, 3), (1, 2), (1, 1))])
@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool2d_matches_torch(rng, k, s, p, count_include_pad):
    compare(
        lambda x: F.avg_pool2d(x, k, s, p, count_include_pad=count_include_pad),
        lambda x: TF.avg_pool2d(x, k, s, p, count_include_pad=count_include_pad),
        f64(rng, 2, 3, 7, 8),
    )  # fmt: skip


def test_avg_pool2d_divisor_override_gradcheck_and_errors(rng):
    compare(lambda x: F.avg_pool2d(x, 2, divisor_override=3), lambda x: TF.avg_pool2d(x, 2, divisor_override=3),
            f64(rng, 1, 2, 4, 4))  # fmt: skip
    x = leaf(f64(rng, 1, 2, 5, 5))
    gc(lambda x: F.avg_pool2d(x, 3, 2, 1, count_include_pad=False), x)
    with pytest.raises(ValueError, match="divisor_override must be a non-zero int"):
        F.avg_pool2d(pf.randn(1, 1, 5, 5), 2, divisor_override=0)


@pytest.mark.parametrize("size", [1, (2, 3), (3, 5)])
def test_adaptive_avg_pool2d_matches_torch(rng, size):
    compare(lambda x: F.adaptive_avg_pool2d(x, size), lambda x: TF.adaptive_avg_pool2d(x, size), f64(rng, 2, 3, 6, 9))


def test_pools_1d():
    x = rand(2, 3, 11)
    compare_f64(lambda x: F.max_pool1d(x, 3, 2, 1), lambda x: TF.max_pool1d(x, 3, 2, 1), x)
    compare_f64(lambda x: F.avg_pool1d(x, 4, 2, 2, count_include_pad=False),
            lambda x: TF.avg_pool1d(x, 4, 2, 2, count_include_pad=False), x)  # fmt: skip
    compare_f64(lambda x: F.adaptive_avg_pool1d(x, 4), lambda x: TF.adaptive_avg_pool1d(x, 4), x)
    compare_f64(lambda x: nn.AdaptiveAvgPool1d(5)(x), lambda x: torch.nn.AdaptiveAvgPool1d(5)(x), x[0])
    v, i = F.max_pool1d(pf.tensor(x), 2, return_indices=True)
    tv, ti = TF.max_pool1d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


def test_adaptive_max_pool2d_indices_match_torch():
    x = rand(2, 3, 4, 6)
    v, i = F.adaptive_max_pool2d(pf.tensor(x), (2, 3), return_indices=True)
    tv, ti = torch.nn.functional.adaptive_max_pool2d(torch.tensor(x), (2, 3), return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


def test_adaptive_max_pool2d_uneven_windows_indices_and_single_element_gradient():
    # uneven windows overlap; equal maxima and NaNs: the first maximum, the last NaN, the gradient to it alone
    x = np.array([[[[1.0, 3.0, 3.0, 2.0, 5.0], [5.0, np.nan, 5.0, 1.0, 1.0], [2.0, 2.0, 2.0, np.nan, np.nan]]]])
    p, t = pf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    v, i = F.adaptive_max_pool2d(p, (2, 3), return_indices=True)
    tv, ti = torch.nn.functional.adaptive_max_pool2d(t, (2, 3), return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_array_equal(v.detach().numpy(), tv.detach().numpy())
    w = np.arange(1.0, 7.0).reshape(1, 1, 2, 3)
    (v * pf.tensor(w)).sum().backward()
    (tv * torch.tensor(w)).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())


LAYERS = {
    "maxpool": (lambda n: n.MaxPool2d(2), [randn(2, 3, 6, 6)]),
    "maxpool_padded": (lambda n: n.MaxPool2d(3, stride=2, padding=1, dilation=1), [randn(1, 2, 7, 7)]),
    "maxpool_dilated": (lambda n: n.MaxPool2d((2, 3), stride=(1, 2), dilation=2), [randn(1, 2, 7, 9)]),
    "avgpool": (lambda n: n.AvgPool2d(2), [randn(2, 3, 6, 6)]),
    "avgpool_padded": (lambda n: n.AvgPool2d(3, stride=2, padding=1), [randn(1, 2, 7, 7)]),
    "avgpool_no_pad_count": (lambda n: n.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
                             [randn(1, 2, 7, 7)]),
    "adaptive_avgpool": (lambda n: n.AdaptiveAvgPool2d((2, 3)), [randn(2, 3, 6, 6)]),
    "adaptive_avgpool_uneven": (lambda n: n.AdaptiveAvgPool2d(3), [randn(1, 2, 5, 7)]),
    "maxpool3d_ceil": (lambda n: n.MaxPool3d(2, ceil_mode=True), [randn(1, 2, 5, 5, 3)]),
    "avgpool3d": (lambda n: n.AvgPool3d((1, 2, 2), padding=(0, 1, 0)), [randn(2, 2, 3, 4, 5)]),
    "lppool3d": (lambda n: n.LPPool3d(2, 2), [randn(1, 2, 4, 4, 4)]),
    "adaptive_avgpool3d": (lambda n: n.AdaptiveAvgPool3d((2, 3, 1)), [randn(2, 2, 5, 5, 5)]),
}  # fmt: skip


test_layer_matches_torch = module_table_test(LAYERS)


CASES = {
    "adaptive_max2d": (lambda n: n.AdaptiveMaxPool2d((3, 2)), [(2, 3, 7, 5)]),
    "adaptive_max2d_even": (lambda n: n.AdaptiveMaxPool2d(2), [(2, 3, 4, 6)]),
    "adaptive_max1d": (lambda n: n.AdaptiveMaxPool1d(3), [(2, 3, 8)]),
    "adaptive_max3d": (lambda n: n.AdaptiveMaxPool3d((3, 2, 2)), [(2, 2, 5, 4, 3)]),
    "avgpool1d_ceil": (lambda n: n.AvgPool1d(3, 2, ceil_mode=True), [(2, 3, 8)]),
}  # fmt: skip


test_layer_float64_matches_torch = module_float64_table_test(CASES)


test_reprs_match_torch = reprs_test(
    lambda n: n.MaxPool2d((2, 3), stride=1, padding=1, dilation=2),
    lambda n: n.AvgPool2d(3, count_include_pad=False),
    lambda n: n.AdaptiveAvgPool2d((None, 3)),
    lambda n: n.MaxPool3d(3, 2, 1, ceil_mode=True),
    lambda n: n.AvgPool3d(2),
    lambda n: n.AdaptiveMaxPool3d(2),
    lambda n: n.LPPool3d(2, 3),
)


FRACTIONAL = [(2, 2, {"output_ratio": (0.5, 0.5)}), (2, (2, 3), {"output_size": (4, 3)}),
              (3, 2, {"output_size": (2, 3, 2)}), (3, (1, 2, 2), {"output_ratio": (0.6, 0.6, 0.6)})]  # fmt: skip


@pytest.mark.parametrize("dims, k, kw", FRACTIONAL)
def test_fractional_max_pool_matches_torch(rng, dims, k, kw):
    shape = (2, 3, 5, 7) if dims == 2 else (2, 3, 4, 5, 6)
    x = _distinct(rng, *shape)
    samples = rng.uniform(size=(2, 3, dims))
    pool, tpool = getattr(F, f"fractional_max_pool{dims}d"), getattr(TF, f"fractional_max_pool{dims}d")
    compare(lambda x: pool(x, k, _random_samples=pf.tensor(samples), **kw),
            lambda x: tpool(x, k, _random_samples=torch.tensor(samples), **kw), x)  # fmt: skip
    _, pi = pool(pf.tensor(x), k, return_indices=True, _random_samples=pf.tensor(samples), **kw)
    _, ti = tpool(torch.tensor(x), k, return_indices=True, _random_samples=torch.tensor(samples), **kw)
    np.testing.assert_array_equal(pi.numpy(), ti.numpy())
    module = getattr(nn, f"FractionalMaxPool{dims}d")(k, _random_samples=pf.tensor(samples[:1]), **kw)
    tmodule = getattr(torch.nn, f"FractionalMaxPool{dims}d")(k, _random_samples=torch.tensor(samples[:1]), **kw)
    np.testing.assert_array_equal(module(pf.tensor(x[0])).numpy(), tmodule(torch.tensor(x[0])).numpy())


def test_fractional_max_pool_draws_its_own_samples_and_checks():
    x = pf.randn(2, 3, 9, 9)
    out = F.fractional_max_pool2d(x, 2, output_size=4)
    assert out.shape == (2, 3, 4, 4)
    with pytest.raises(ValueError, match="either an output_size or an output_ratio"):
        F.fractional_max_pool2d(x, 2)
    with pytest.raises(ValueError, match="pool size 3 too large"):
        F.fractional_max_pool2d(x, 3, output_size=8)
    with pytest.raises(ValueError, match="only one of output_size and output_ratio"):
        nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)


_POOL_HALF = {
    "max_pool1d": lambda F, x: F.max_pool1d(x(2, 3, 9), 2),
    "max_pool2d": lambda F, x: F.max_pool2d(x(2, 3, 8, 8), 3, 2, padding=1, return_indices=True),
    "max_pool3d": lambda F, x: F.max_pool3d(x(1, 2, 5, 5, 5), 2),
    "avg_pool1d": lambda F, x: F.avg_pool1d(x(2, 3, 9), 3, 2),
    "avg_pool2d": lambda F, x: F.avg_pool2d(x(2, 3, 8, 8), 3, 2, padding=1),
    "adaptive_avg_pool2d": lambda F, x: F.adaptive_avg_pool2d(x(2, 3, 8, 8), 3),
    "adaptive_max_pool2d": lambda F, x: F.adaptive_max_pool2d(x(2, 3, 8, 8), 3, return_indices=True),
    "adaptive_avg_pool3d": lambda F, x: F.adaptive_avg_pool3d(x(1, 2, 5, 5, 5), 2),
}


@pytest.mark.parametrize("name", _POOL_HALF)
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_dtypes_match_torch(name, dt):
    # computed in float32 and rounded once, as torch's CPU kernels: values, indices and gradients
    x = np.random.default_rng(0).standard_normal(600).astype(np.float32)
    p = pf.tensor(x).to(getattr(pf, dt)).requires_grad_()
    t = torch.tensor(x).to(getattr(torch, dt)).requires_grad_()
    ours = _POOL_HALF[name](F, lambda *s: p[: int(np.prod(s))].reshape(s))
    theirs = _POOL_HALF[name](TF, lambda *s: t[: int(np.prod(s))].reshape(s))
    ours, theirs = (ours if isinstance(ours, tuple) else (ours,)), (theirs if isinstance(theirs, tuple) else (theirs,))
    assert ours[0].dtype is getattr(pf, dt)
    eps = 2.0**-10 if dt == "float16" else 2.0**-7
    for a, b in zip(ours, theirs, strict=True):
        va, vb = a.detach().float().numpy(), b.detach().float().numpy()
        if name == "adaptive_avg_pool3d":  # torch's 3-d adaptive average sums in the 16-bit dtype: ulps apart
            np.testing.assert_allclose(va, vb, rtol=2 * eps, atol=2 * eps * np.abs(vb).max())
        else:
            np.testing.assert_array_equal(va, vb)
    ours[0].float().pow(2).sum().backward()
    theirs[0].float().pow(2).sum().backward()
    assert p.grad.dtype is getattr(pf, dt)
    g, tg = p.grad.float().numpy(), t.grad.float().numpy()
    if "max" in name:  # the gradient lands where the maximum was, no arithmetic
        np.testing.assert_array_equal(g, tg)
    else:  # torch sums overlapping windows' gradients in the 16-bit dtype, we in float32: an ulp apart
        np.testing.assert_allclose(g, tg, rtol=2 * eps, atol=2 * eps * np.abs(tg).max())
