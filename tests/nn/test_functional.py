"""pyframe.nn.functional against torch.nn.functional: forward values, gradients (with a random
cotangent), float64 finite-difference checks of the dedicated backwards, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn.functional as F
from pyframe.autograd import gradcheck

torch = pytest.importorskip("torch")
TF = torch.nn.functional


# ---- helpers -------------------------------------------------------------------------------


def _pair(arr: np.ndarray, grad: bool):
    """The same data as a pyframe and a torch tensor; floating ones require grad if asked."""
    g = grad and arr.dtype.kind == "f"
    return pf.tensor(arr, requires_grad=g), torch.tensor(arr, requires_grad=g)


def compare(pf_fn, torch_fn, *arrays, grad=True, rtol=1e-7, atol=1e-9, seed=0):
    """Both functions on copies of ``arrays``: equal outputs, and equal gradients of every
    floating input for one random cotangent."""
    pairs = [_pair(np.asarray(a), grad) for a in arrays]
    po = pf_fn(*(p for p, _ in pairs))
    to = torch_fn(*(t for _, t in pairs))
    assert tuple(po.shape) == tuple(to.shape), f"shape {tuple(po.shape)} != torch {tuple(to.shape)}"
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol, err_msg="forward")
    if not grad:
        return po, to
    cot = np.random.default_rng(seed).standard_normal(tuple(to.shape)).astype(arrays[0].dtype)
    po.backward(pf.tensor(cot))
    to.backward(torch.tensor(cot))
    for i, (p, t) in enumerate(pairs):
        if t.requires_grad:
            assert p.grad is not None, f"input {i} got no gradient"
            np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"grad {i}")
    return po, to


def gc(fn, *tensors):
    """gradcheck of ``fn`` contracted with a fixed random tensor (one backward, full VJP)."""
    out = fn(*tensors)
    w = pf.tensor(np.random.default_rng(7).standard_normal(tuple(out.shape)))
    assert gradcheck(lambda *a: (fn(*a) * w).sum(), tensors, eps=1e-6, atol=1e-6, rtol=1e-4)


def f64(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape)


def leaf(arr):
    return pf.tensor(arr, requires_grad=True)


# ---- linear --------------------------------------------------------------------------------


@pytest.mark.parametrize("xshape", [(5, 4), (4,), (2, 3, 4)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_matches_torch(rng, xshape, with_bias):
    arrays = [f64(rng, *xshape), f64(rng, 3, 4)] + ([f64(rng, 3)] if with_bias else [])
    compare(F.linear, TF.linear, *arrays)


def test_linear_float32_and_transposed_input(rng):
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 6), (5, 4), (5,)))
    compare(lambda x, w, b: F.linear(x.T, w, b), lambda x, w, b: TF.linear(x.T, w, b), x.T.copy().T, w, b, rtol=1e-5)
    compare(F.linear, TF.linear, x[:, :4].copy(), w, b, rtol=1e-5, atol=1e-6)


def test_linear_broadcast_bias_and_no_grad(rng):
    compare(F.linear, TF.linear, f64(rng, 2, 4), f64(rng, 3, 4), f64(rng, 1, 3))
    with pf.no_grad():
        out = F.linear(leaf(f64(rng, 2, 4)), leaf(f64(rng, 3, 4)), leaf(f64(rng, 3)))
    assert out.grad_fn is None and not out.requires_grad


def test_linear_bad_input(rng):
    with pytest.raises(ValueError, match=r"\[2, 5\].*\[3, 4\]"):
        F.linear(pf.randn(2, 5), pf.randn(3, 4))
    with pytest.raises(ValueError, match="weight must be 2-d"):
        F.linear(pf.randn(2, 4), pf.randn(4))
    with pytest.raises(TypeError, match="float64"):
        F.linear(pf.randn(2, 4), pf.randn(3, 4, dtype=pf.float64), pf.randn(3))


def test_bilinear_matches_torch(rng):
    compare(F.bilinear, TF.bilinear, f64(rng, 3, 4), f64(rng, 3, 5), f64(rng, 2, 4, 5), f64(rng, 2))


# ---- conv2d --------------------------------------------------------------------------------

CONV_CASES = [  # (N, C, H, W), (O, C/groups, kh, kw), stride, padding, dilation, groups
    ((2, 3, 7, 6), (4, 3, 3, 3), 1, 0, 1, 1),
    ((2, 3, 7, 6), (4, 3, 3, 2), 2, 1, 1, 1),
    ((1, 2, 9, 8), (3, 2, 3, 3), (2, 1), (1, 2), (2, 1), 1),
    ((2, 4, 6, 6), (6, 2, 3, 3), 1, 1, 1, 2),
    ((1, 4, 5, 5), (4, 1, 2, 2), 1, 0, 2, 4),
    ((2, 1, 5, 5), (2, 1, 1, 1), 1, 0, 1, 1),
    ((3, 1, 11, 9), (8, 1, 3, 3), 1, 1, 1, 1),  # small-CNN first layer: col2im's unit-stride rows
]


@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", CONV_CASES)
def test_conv2d_matches_torch(rng, xs, ws, stride, padding, dilation, groups):
    args = (stride, padding, dilation, groups)
    compare(
        lambda x, w, b: F.conv2d(x, w, b, *args),
        lambda x, w, b: TF.conv2d(x, w, b, *args),
        f64(rng, *xs), f64(rng, *ws), f64(rng, ws[0]),
    )  # fmt: skip


CONV_TILE_CASES = [  # shapes whose unfold is cut into tiles: tile edges mid-row, few samples split by channel
    ((1, 32, 20, 20), (16, 32, 3, 3), 1, 1, 1, 1, False),  # stride-1 'same' rows: one copy per tap
    ((2, 24, 17, 15), (6, 12, 3, 3), 2, 1, 1, 2, True),  # strided, grouped, permuted input
    ((3, 40, 18, 18), (8, 40, 3, 3), 1, 0, 2, 1, False),  # dilated, no padding
    ((9, 36, 16, 16), (5, 36, 5, 3), 1, (2, 1), 1, 1, True),  # more samples than weight-gradient blocks
]


@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups, permute", CONV_TILE_CASES)
def test_conv2d_in_tiles(rng, xs, ws, stride, padding, dilation, groups, permute):
    """Tiles of output positions, sample blocks and channel blocks cover everything once."""
    x = rng.standard_normal(xs).astype(np.float32)
    if permute:
        x = np.ascontiguousarray(x.transpose(0, 1, 3, 2))
    w, b = rng.standard_normal(ws).astype(np.float32), rng.standard_normal(ws[0]).astype(np.float32)
    args = (stride, padding, dilation, groups)
    t = (lambda x: x.permute(0, 1, 3, 2)) if permute else (lambda x: x)
    compare(
        lambda x, w, b: F.conv2d(t(x), w, b, *args),
        lambda x, w, b: TF.conv2d(t(x), w, b, *args),
        x, w, b, rtol=2e-4, atol=2e-4,
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(24))
def test_conv2d_random_geometry_matches_torch(seed):
    """Random strides, paddings (some wider than the kernel), dilations, groups and sizes,
    each way, through whichever kernel path the shape takes."""
    r = np.random.default_rng(1000 + seed)
    groups = int(r.choice([1, 1, 2, 3]))
    cg, og = int(r.integers(1, 6)), int(r.integers(1, 15))
    kh, kw = int(r.integers(1, 5)), int(r.integers(1, 5))
    s = (int(r.integers(1, 4)), int(r.integers(1, 4)))
    d = (int(r.integers(1, 3)), int(r.integers(1, 3)))
    p = (int(r.integers(0, 6)), int(r.integers(0, 6)))
    h = max(1, (kh - 1) * d[0] + 1 - 2 * p[0]) + int(r.integers(0, 12))
    w = max(1, (kw - 1) * d[1] + 1 - 2 * p[1]) + int(r.integers(0, 40))
    dtype = np.float32 if seed % 3 else np.float64
    x = r.standard_normal((int(r.integers(1, 5)), cg * groups, h, w)).astype(dtype)
    wt = r.standard_normal((og * groups, cg, kh, kw)).astype(dtype)
    b = r.standard_normal(og * groups).astype(dtype)
    args = (s, p, d, groups)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else {}
    compare(lambda x, w, b: F.conv2d(x, w, b, *args), lambda x, w, b: TF.conv2d(x, w, b, *args), x, wt, b, **tol)


def test_conv2d_gradients_do_not_depend_on_threads(rng):
    x = pf.tensor(rng.standard_normal((5, 12, 15, 15)).astype(np.float32), requires_grad=True)
    w = pf.tensor(rng.standard_normal((7, 12, 3, 3)).astype(np.float32), requires_grad=True)
    got, before = [], pf.get_num_threads()
    try:
        for threads in (1, 2, 3):
            pf.set_num_threads(threads)
            x.grad = w.grad = None
            y = F.conv2d(x, w, padding=1)
            y.backward(pf.ones(y.shape))
            got.append((y.detach().numpy().copy(), x.grad.numpy().copy(), w.grad.numpy().copy()))
    finally:
        pf.set_num_threads(before)
    for other in got[1:]:
        for a, b in zip(got[0], other, strict=True):
            np.testing.assert_array_equal(a, b)


def test_conv2d_float32_no_bias_and_unbatched(rng):
    x, w = rng.standard_normal((3, 8, 8)).astype(np.float32), rng.standard_normal((5, 3, 3, 3)).astype(np.float32)
    compare(lambda x, w: F.conv2d(x, w, padding=1), lambda x, w: TF.conv2d(x, w, padding=1), x, w, rtol=1e-4, atol=1e-5)


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("ks, dilation", [(3, 1), (4, 1), (2, 2), ((2, 3), 1)])
def test_conv2d_padding_same_and_valid(rng, ks, dilation):
    k = (ks, ks) if isinstance(ks, int) else ks
    for padding in ("same", "valid"):
        compare(
            lambda x, w, p=padding: F.conv2d(x, w, padding=p, dilation=dilation),
            lambda x, w, p=padding: TF.conv2d(x, w, padding=p, dilation=dilation),
            f64(rng, 1, 2, 7, 6), f64(rng, 3, 2, *k),
        )  # fmt: skip


@pytest.mark.parametrize("xs, ws, stride, padding, dilation, groups", [CONV_CASES[1], CONV_CASES[2], CONV_CASES[4]])
def test_conv2d_gradcheck(rng, xs, ws, stride, padding, dilation, groups):
    xs = (1,) + xs[1:]
    x, w, b = leaf(f64(rng, *xs)), leaf(f64(rng, *ws)), leaf(f64(rng, ws[0]))
    gc(lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups), x, w, b)


def test_conv2d_double_backward_matches_torch(rng):
    xa, wa = f64(rng, 1, 2, 5, 5), f64(rng, 3, 2, 3, 3)
    grads = []
    for lib, fn in ((pf, F.conv2d), (torch, TF.conv2d)):
        x, w = lib.tensor(xa, requires_grad=True), lib.tensor(wa, requires_grad=True)
        y = fn(x, w, padding=1)
        gx, gw = (pf.autograd if lib is pf else torch.autograd).grad((y * y).sum(), [x, w], create_graph=True)
        (gx.sum() + (gw * gw).sum()).backward()
        grads.append((x.grad.detach().numpy(), w.grad.detach().numpy()))
    for a, b in zip(grads[0], grads[1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


def test_conv2d_bad_input():
    x = pf.randn(2, 3, 8, 8)
    with pytest.raises(ValueError, match=r"weight of size \[4, 2, 3, 3\].*to have 2 channels, but got 3 channels"):
        F.conv2d(x, pf.randn(4, 2, 3, 3))
    with pytest.raises(ValueError, match=r"kernel size \(9, 9\).*larger than the padded input size \(8, 8\)"):
        F.conv2d(x, pf.randn(4, 3, 9, 9))
    with pytest.raises(ValueError, match=r"kernel size \(5, 5\) \(dilated \(9, 9\)\).*\(8, 8\)"):
        F.conv2d(x, pf.randn(4, 3, 5, 5), dilation=2)
    with pytest.raises(ValueError, match="3-d .* or 4-d"):
        F.conv2d(pf.randn(3, 8), pf.randn(4, 3, 3, 3))
    with pytest.raises(ValueError, match="weight must be 4-d"):
        F.conv2d(x, pf.randn(4, 3, 3))
    with pytest.raises(ValueError, match="not divisible by groups 2"):
        F.conv2d(pf.randn(1, 4, 5, 5), pf.randn(3, 2, 3, 3), groups=2)
    with pytest.raises(ValueError, match=r"bias must have shape \[4\]"):
        F.conv2d(x, pf.randn(4, 3, 3, 3), pf.randn(5))
    with pytest.raises(ValueError, match="stride must be >= 1"):
        F.conv2d(x, pf.randn(4, 3, 3, 3), stride=0)
    with pytest.raises(TypeError, match="float32 and float64"):
        F.conv2d(pf.ones(1, 1, 3, 3, dtype=pf.int64), pf.ones(1, 1, 1, 1, dtype=pf.int64))
    with pytest.raises(ValueError, match="strided"):
        F.conv2d(x, pf.randn(4, 3, 3, 3), stride=2, padding="same")


# ---- unfold / fold -------------------------------------------------------------------------


def test_unfold_fold_match_torch(rng):
    kw = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    compare(lambda x: F.unfold(x, **kw), lambda x: TF.unfold(x, **kw), f64(rng, 2, 3, 6, 7))
    col = TF.unfold(torch.zeros(2, 3, 6, 7), **kw)
    compare(lambda c: F.fold(c, (6, 7), **kw), lambda c: TF.fold(c, (6, 7), **kw), f64(rng, *col.shape))
    x = leaf(f64(rng, 1, 2, 4, 4))
    gc(lambda x: F.fold(F.unfold(x, 2, padding=1), (4, 4), 2, padding=1), x)


def test_fold_unit_and_strided_columns_match_torch(rng):
    """fold's unit-stride fast path and the strided loop (a transposed col) agree with torch."""
    kw = dict(kernel_size=3, padding=1)
    col = rng.standard_normal((2, 2 * 9, 13 * 10)).astype(np.float32)
    ref = TF.fold(torch.from_numpy(col), (13, 10), **kw).numpy()
    assert np.allclose(F.fold(pf.tensor(col), (13, 10), **kw).numpy(), ref, rtol=1e-6, atol=1e-6)
    ct = np.ascontiguousarray(col.transpose(0, 2, 1))
    strided = pf.tensor(ct).transpose(1, 2)
    assert np.allclose(F.fold(strided, (13, 10), **kw).numpy(), ref, rtol=1e-6, atol=1e-6)


def test_fold_bad_input(rng):
    with pytest.raises(ValueError, match="calculated number of sliding blocks 3 \\* 3 = 9, but got 10"):
        F.fold(pf.randn(1, 4, 10), (4, 4), 2)
    with pytest.raises(ValueError, match="divisible by the product of kernel_size 4"):
        F.fold(pf.randn(1, 5, 9), (4, 4), 2)


# ---- pooling -------------------------------------------------------------------------------

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
    with pytest.raises(NotImplementedError, match="ceil_mode=True"):
        F.max_pool2d(pf.randn(1, 1, 5, 5), 2, ceil_mode=True)
    with pytest.raises(ValueError, match="pad should be at most half of effective kernel size, but got pad=2"):
        F.max_pool2d(pf.randn(1, 1, 5, 5), 3, padding=2)
    with pytest.raises(ValueError, match=r"kernel size \(4, 4\).*\(3, 3\)"):
        F.max_pool2d(pf.randn(1, 1, 3, 3), 4)


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
    with pytest.raises(NotImplementedError, match="ceil_mode"):
        F.avg_pool2d(pf.randn(1, 1, 5, 5), 2, ceil_mode=True)


@pytest.mark.parametrize("size", [1, (2, 3), (3, 5)])
def test_adaptive_avg_pool2d_matches_torch(rng, size):
    compare(lambda x: F.adaptive_avg_pool2d(x, size), lambda x: TF.adaptive_avg_pool2d(x, size), f64(rng, 2, 3, 6, 9))


# ---- normalization -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (3, 2, 4, 5)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_training_matches_torch(rng, shape, affine):
    c = shape[1]
    rm, rv = f64(rng, c), f64(rng, c, lo=0.5, hi=2.0)
    prm, prv, trm, trv = pf.tensor(rm), pf.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    arrays = [f64(rng, *shape)] + ([f64(rng, c), f64(rng, c)] if affine else [])
    compare(
        lambda x, *wb: F.batch_norm(x, prm, prv, *wb, training=True, momentum=0.2),
        lambda x, *wb: TF.batch_norm(x, trm, trv, *wb, training=True, momentum=0.2),
        *arrays,
    )  # fmt: skip
    np.testing.assert_allclose(prm.numpy(), trm.numpy(), rtol=1e-12)
    np.testing.assert_allclose(prv.numpy(), trv.numpy(), rtol=1e-12)


def test_batch_norm_eval_and_no_running_stats(rng):
    rm, rv = f64(rng, 3), f64(rng, 3, lo=0.5, hi=2.0)
    compare(
        lambda x, w, b: F.batch_norm(x, pf.tensor(rm), pf.tensor(rv), w, b, training=False),
        lambda x, w, b: TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, b, training=False),
        f64(rng, 2, 3, 4, 4), f64(rng, 3), f64(rng, 3),
    )  # fmt: skip
    compare(
        lambda x: F.batch_norm(x, None, None, training=True),
        lambda x: TF.batch_norm(x, None, None, training=True),
        f64(rng, 4, 3),
    )  # fmt: skip


def test_batch_norm_float32(rng):
    x = rng.standard_normal((8, 4, 5, 5)).astype(np.float32)
    w, b = rng.standard_normal(4).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    compare(
        lambda x, w, b: F.batch_norm(x, None, None, w, b, True),
        lambda x, w, b: TF.batch_norm(x, None, None, w, b, True),
        x, w, b, rtol=1e-4, atol=1e-5,
    )  # fmt: skip


def test_batch_norm_gradcheck(rng):
    x, w, b = leaf(f64(rng, 3, 2, 2, 2)), leaf(f64(rng, 2)), leaf(f64(rng, 2))
    gc(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), x, w, b)


@pytest.mark.parametrize("kind", ["batch_norm", "layer_norm"])
def test_norm_double_backward_matches_torch(rng, kind):
    xa, wa = f64(rng, 4, 3), f64(rng, 3)
    results = []
    for lib, fns in ((pf, F), (torch, TF)):
        x, w = lib.tensor(xa, requires_grad=True), lib.tensor(wa, requires_grad=True)
        if kind == "batch_norm":
            y = fns.batch_norm(x, None, None, w, None, training=True)
        else:
            y = fns.layer_norm(x, (3,), w, None)
        (gx,) = (pf.autograd if lib is pf else torch.autograd).grad((y * y * y).sum(), [x], create_graph=True)
        (gx * gx).sum().backward()
        results.append((x.grad.detach().numpy(), w.grad.detach().numpy()))
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-7, atol=1e-9)


def test_batch_norm_bad_input():
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        F.batch_norm(pf.randn(1, 3), None, None, training=True)
    with pytest.raises(ValueError, match=r"running_mean should have shape \[3\].*got \[4\]"):
        F.batch_norm(pf.randn(2, 3), pf.zeros(4), pf.ones(3))
    with pytest.raises(ValueError, match="must be given when training=False"):
        F.batch_norm(pf.randn(2, 3), None, None)
    with pytest.raises(ValueError, match="at least 2 dims"):
        F.batch_norm(pf.randn(3), None, None, training=True)


@pytest.mark.parametrize("shape, norm", [((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((2, 3, 4), 4)])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_matches_torch(rng, shape, norm, affine):
    ns = (norm,) if isinstance(norm, int) else norm
    arrays = [f64(rng, *shape)] + ([f64(rng, *ns), f64(rng, *ns)] if affine else [])
    compare(lambda x, *wb: F.layer_norm(x, norm, *wb), lambda x, *wb: TF.layer_norm(x, ns, *wb), *arrays)


def test_layer_norm_gradcheck_and_bad_input(rng):
    x, w, b = leaf(f64(rng, 2, 3, 4)), leaf(f64(rng, 4)), leaf(f64(rng, 4))
    gc(lambda x, w, b: F.layer_norm(x, (4,), w, b), x, w, b)
    with pytest.raises(ValueError, match=r"normalized_shape=\[5\], expected input with shape \[\*, 5\].*\[2, 3, 4\]"):
        F.layer_norm(pf.randn(2, 3, 4), 5)
    with pytest.raises(ValueError, match=r"weight should have shape \[4\]"):
        F.layer_norm(pf.randn(2, 4), 4, pf.ones(3))


def test_group_norm_matches_torch(rng):
    compare(lambda x, w, b: F.group_norm(x, 2, w, b), lambda x, w, b: TF.group_norm(x, 2, w, b),
            f64(rng, 2, 4, 3, 3), f64(rng, 4), f64(rng, 4))  # fmt: skip


# ---- embedding, dropout, one_hot, pad ------------------------------------------------------


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_matches_torch(rng, padding_idx):
    idx = np.array([[0, 2, 4], [2, 2, 1]])
    w = f64(rng, 5, 3)
    pw, tw = leaf(w), torch.tensor(w, requires_grad=True)
    out = F.embedding(pf.tensor(idx), pw, padding_idx)
    tout = TF.embedding(torch.tensor(idx), tw, padding_idx)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy())
    cot = rng.standard_normal(tuple(tout.shape))
    out.backward(pf.tensor(cot))
    tout.backward(torch.tensor(cot))
    np.testing.assert_allclose(pw.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_embedding_bad_input():
    with pytest.raises(IndexError, match="index 5 is out of range for an embedding table of 5 rows"):
        F.embedding(pf.tensor([1, 5]), pf.randn(5, 2))
    with pytest.raises(IndexError, match="index -1"):
        F.embedding(pf.tensor([-1]), pf.randn(5, 2))
    with pytest.raises(TypeError, match="int64"):
        F.embedding(pf.tensor([1.0]), pf.randn(5, 2))


def test_dropout_reproducible_keep_ratio_and_scaling(restore_seed):
    x = pf.ones(200, 500)
    pf.manual_seed(123)
    a = F.dropout(x, 0.3)
    pf.manual_seed(123)
    b = F.dropout(x, 0.3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert not np.array_equal(a.numpy(), F.dropout(x, 0.3).numpy())
    vals = a.numpy()
    kept = vals != 0
    assert abs(kept.mean() - 0.7) < 0.01
    np.testing.assert_allclose(vals[kept], 1 / 0.7, rtol=1e-6)


def test_dropout_gradient_modes_and_errors(rng):
    x = leaf(f64(rng, 50, 40))
    y = F.dropout(x, 0.5)
    y.sum().backward()
    mask = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), mask * 2.0)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert np.all(F.dropout(x, 1.0).detach().numpy() == 0)
    z = pf.ones(10)
    assert F.dropout(z, 0.5, inplace=True) is z
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)


def test_one_hot_matches_torch():
    idx = np.array([[0, 3], [2, 1]])
    np.testing.assert_array_equal(F.one_hot(pf.tensor(idx)).numpy(), TF.one_hot(torch.tensor(idx)).numpy())
    out = F.one_hot(pf.tensor(idx), 6)
    assert out.dtype == pf.int64 and tuple(out.shape) == (2, 2, 6)
    with pytest.raises(RuntimeError, match="smaller than num_classes=3"):
        F.one_hot(pf.tensor(idx), 3)
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(pf.tensor([-1, 0]))
    with pytest.raises(TypeError, match="int64"):
        F.one_hot(pf.tensor([1.0]))


@pytest.mark.parametrize(
    "padding, mode, value",
    [((1, 2), "constant", 0.5), ((1, 0, 2, 1), "constant", None), ((-1, 2, 0, -1), "constant", 0.0),
     ((2, 1, 1, 2), "reflect", None), ((2, 3, 1, 0), "replicate", None), ((1, 2, 2, 1), "circular", None)],
)  # fmt: skip
def test_pad_matches_torch(rng, padding, mode, value):
    kw = {"value": value} if value is not None else {}
    compare(lambda x: F.pad(x, padding, mode, **kw), lambda x: TF.pad(x, padding, mode, **kw), f64(rng, 2, 3, 4, 5))


def test_pad_bad_input():
    with pytest.raises(ValueError, match="divisible by 2"):
        F.pad(pf.randn(2, 3), (1,))
    with pytest.raises(ValueError, match="padding length 6 and input of dimension 2"):
        F.pad(pf.randn(2, 3), (1, 1, 1, 1, 1, 1))
    with pytest.raises(ValueError, match="negative output size"):
        F.pad(pf.randn(2, 3), (-2, -2))
    with pytest.raises(ValueError, match="at most 2"):
        F.pad(pf.randn(2, 3), (3, 0), mode="reflect")


# ---- activations ---------------------------------------------------------------------------

ACTIVATIONS = [
    ("relu", F.relu, TF.relu),
    ("relu6", F.relu6, TF.relu6),
    ("leaky_relu", lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2)),
    ("elu", lambda x: F.elu(x, 0.7), lambda x: TF.elu(x, 0.7)),
    ("hardtanh", lambda x: F.hardtanh(x, -2.0, 3.0), lambda x: TF.hardtanh(x, -2.0, 3.0)),
    ("gelu", F.gelu, TF.gelu),
    ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh")),
    ("tanh", F.tanh, torch.tanh),
    ("sigmoid", F.sigmoid, torch.sigmoid),
    ("silu", F.silu, TF.silu),
    ("softplus", F.softplus, TF.softplus),
    ("softplus_beta", lambda x: F.softplus(x, 2.0, 5.0), lambda x: TF.softplus(x, 2.0, 5.0)),
    ("logsigmoid", F.logsigmoid, TF.logsigmoid),
    ("softmax", lambda x: F.softmax(x, 1), lambda x: TF.softmax(x, 1)),
    ("log_softmax", lambda x: F.log_softmax(x, -1), lambda x: TF.log_softmax(x, -1)),
    ("softmin", lambda x: F.softmin(x, 0), lambda x: TF.softmin(x, 0)),
    ("normalize", F.normalize, TF.normalize),
]


@pytest.mark.parametrize("name, pf_fn, torch_fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_matches_torch(rng, name, pf_fn, torch_fn):
    x = rng.uniform(-8, 8, size=(4, 6))
    x[0, :3] = [0.5, -0.5, 30.0]  # away from kinks; 30 is past softplus' threshold
    compare(pf_fn, torch_fn, x, rtol=1e-7, atol=1e-10)


def test_activation_inplace_and_errors(rng):
    x = pf.tensor(np.array([-1.0, 2.0]))
    assert F.relu(x, inplace=True) is x
    np.testing.assert_array_equal(x.numpy(), [0.0, 2.0])
    with pytest.raises(ValueError, match="approximate"):
        F.gelu(x, approximate="fast")
    with pytest.warns(UserWarning, match="Implicit dimension"):
        F.softmax(pf.randn(2, 3))


# ---- losses --------------------------------------------------------------------------------

REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "name, kw", [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}), ("huber_loss", {"delta": 0.7})]
)
def test_regression_losses_match_torch(rng, name, kw, reduction):
    compare(
        lambda x, t: getattr(F, name)(x, t, reduction=reduction, **kw),
        lambda x, t: getattr(TF, name)(x, t, reduction=reduction, **kw),
        f64(rng, 3, 4), f64(rng, 3, 4),
    )  # fmt: skip


def _class_case(rng, shape, c, ignore=True):
    x = f64(rng, *shape[:1], c, *shape[1:], lo=-3, hi=3)
    t = rng.integers(0, c, size=shape)
    if ignore:
        t.flat[1] = -100
    return x, t


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5,), (2, 3, 2)])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_and_cross_entropy_match_torch(rng, reduction, shape, weighted):
    x, t = _class_case(rng, shape, 4)
    w = f64(rng, 4, lo=0.2, hi=2.0) if weighted else None
    pw, tw = (pf.tensor(w), torch.tensor(w)) if weighted else (None, None)
    tt, ptt = torch.tensor(t), pf.tensor(t)
    compare(lambda x: F.nll_loss(x, ptt, pw, reduction=reduction),
            lambda x: TF.nll_loss(x, tt, tw, reduction=reduction), x)  # fmt: skip
    for ls in (0.0, 0.2):
        compare(
            lambda x, ls=ls: F.cross_entropy(x, ptt, pw, reduction=reduction, label_smoothing=ls),
            lambda x, ls=ls: TF.cross_entropy(x, tt, tw, reduction=reduction, label_smoothing=ls),
            x,
        )  # fmt: skip


def test_cross_entropy_ignore_index_and_unbatched(rng):
    x, t = _class_case(rng, (6,), 3, ignore=False)
    pt_, tt = pf.tensor(t), torch.tensor(t)
    compare(lambda x: F.cross_entropy(x, pt_, ignore_index=1), lambda x: TF.cross_entropy(x, tt, ignore_index=1), x)
    compare(lambda x: F.cross_entropy(x, pf.tensor(2)), lambda x: TF.cross_entropy(x, torch.tensor(2)), f64(rng, 5))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probability_targets(rng, reduction):
    x = f64(rng, 3, 4, 2)
    p = rng.dirichlet(np.ones(4), size=(3, 2)).transpose(0, 2, 1).copy()
    w = f64(rng, 4, lo=0.5, hi=1.5)
    for ls, weight in ((0.0, None), (0.1, w)):
        compare(
            lambda x, p, ls=ls, weight=weight: F.cross_entropy(
                x, p, None if weight is None else pf.tensor(weight), reduction=reduction, label_smoothing=ls),
            lambda x, p, ls=ls, weight=weight: TF.cross_entropy(
                x, p, None if weight is None else torch.tensor(weight), reduction=reduction, label_smoothing=ls),
            x, p,
        )  # fmt: skip


def test_classification_losses_gradcheck(rng):
    x, t = _class_case(rng, (2, 3), 4)
    t_ = pf.tensor(t)
    w = pf.tensor(f64(rng, 4, lo=0.5, hi=1.5))
    xl = leaf(x)
    assert gradcheck(lambda x: F.cross_entropy(x, t_, w, label_smoothing=0.1), [xl])
    assert gradcheck(lambda x: F.nll_loss(F.log_softmax(x, 1), t_, reduction="sum"), [xl])
    p = leaf(rng.uniform(0.05, 0.95, size=(3, 4)))
    y = leaf(rng.uniform(0, 1, size=(3, 4)))
    assert gradcheck(lambda p, y: F.binary_cross_entropy(p, y), [p, y])
    z, pw = leaf(f64(rng, 3, 4, lo=-3, hi=3)), leaf(f64(rng, 4, lo=0.5, hi=2))
    assert gradcheck(lambda z, y, pw: F.binary_cross_entropy_with_logits(z, y, pos_weight=pw), [z, y, pw])
    assert gradcheck(lambda x: F.mse_loss(x, y, reduction="sum") + F.l1_loss(x, y), [p])


def test_nll_loss_bad_input():
    with pytest.raises(IndexError, match="target 4 is out of bounds for 4 classes"):
        F.nll_loss(pf.randn(2, 4), pf.tensor([0, 4]))
    with pytest.raises(ValueError, match=r"expected target of shape \[2\] for input of shape \[2, 4\]"):
        F.nll_loss(pf.randn(2, 4), pf.tensor([0, 1, 2]))
    with pytest.raises(TypeError, match="int64"):
        F.nll_loss(pf.randn(2, 4), pf.tensor([0.5, 1.0]))
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        F.cross_entropy(pf.randn(2, 4), pf.tensor([0, 1]), reduction="avg")
    with pytest.raises(ValueError, match="'avg' is not a valid value"):
        F.mse_loss(pf.randn(2), pf.randn(2), reduction="avg")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_matches_torch(rng, reduction):
    p, t, w = rng.uniform(0.01, 0.99, size=(3, 4)), rng.uniform(0, 1, size=(3, 4)), f64(rng, 4, lo=0.5, hi=2)
    compare(lambda p, t: F.binary_cross_entropy(p, t, pf.tensor(w), reduction=reduction),
            lambda p, t: TF.binary_cross_entropy(p, t, torch.tensor(w), reduction=reduction), p, t)  # fmt: skip
    edge = np.array([0.0, 1.0, 1e-30, 0.5])  # logs clamp at -100; the gradient stays finite
    target = np.array([1.0, 0.0, 1.0, 0.5])
    compare(lambda p: F.binary_cross_entropy(p, pf.tensor(target)),
            lambda p: TF.binary_cross_entropy(p, torch.tensor(target)), edge)  # fmt: skip


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_matches_torch(rng, reduction):
    x, t = f64(rng, 3, 4, lo=-5, hi=5), rng.uniform(0, 1, size=(3, 4))
    x[0, :3] = [0.0, 60.0, -60.0]  # exact gradient at 0; stable far out
    w, pw = f64(rng, 3, 1, lo=0.5, hi=2), f64(rng, 4, lo=0.5, hi=3)
    compare(lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction),
            lambda x, t: TF.binary_cross_entropy_with_logits(x, t, reduction=reduction), x, t)  # fmt: skip
    compare(  # torch has no gradient for pos_weight (gradcheck covers pyframe's)
        lambda x, t: F.binary_cross_entropy_with_logits(
            x, t, pf.tensor(w), reduction=reduction, pos_weight=pf.tensor(pw)),
        lambda x, t: TF.binary_cross_entropy_with_logits(
            x, t, torch.tensor(w), reduction=reduction, pos_weight=torch.tensor(pw)),
        x, t,
    )  # fmt: skip


def test_binary_losses_bad_input():
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.binary_cross_entropy(pf.tensor([0.5, 1.5]), pf.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"target size \(\[3\]\) that is different to the input size \(\[2\]\)"):
        F.binary_cross_entropy_with_logits(pf.randn(2), pf.rand(3))


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none"])
def test_kl_div_matches_torch(rng, reduction):
    """Input log-probabilities; targets probabilities."""
    lp = np.log(rng.dirichlet(np.ones(4), size=3))
    q = rng.dirichlet(np.ones(4), size=3)
    compare(lambda a, b: F.kl_div(a, b, reduction=reduction), lambda a, b: TF.kl_div(a, b, reduction=reduction), lp, q)
    q[0, 0] = 0.0  # torch's target gradient is nan at 0; pyframe's is 0 (the limit): compare the input's only
    compare(lambda a: F.kl_div(a, pf.tensor(q), reduction=reduction),
            lambda a: TF.kl_div(a, torch.tensor(q), reduction=reduction), lp)  # fmt: skip


def test_every_public_name_exists():
    for name in F.__all__:
        assert callable(getattr(F, name)), name
    assert not math.isnan(float(F.mse_loss(pf.ones(2), pf.zeros(2))))


def _norm_call(m, norm, xt, wt):
    f = m.nn.functional
    if norm == "layer_norm":
        return f.layer_norm(xt, (3, 3))
    if norm == "batch_norm":
        return f.batch_norm(xt, None, None, wt, None, training=True)
    if norm == "group_norm":
        return f.group_norm(xt, 2, wt)
    return f.instance_norm(xt)


@pytest.mark.parametrize("norm", ["layer_norm", "batch_norm", "group_norm", "instance_norm"])
def test_float16_norms_take_their_statistics_in_float32_like_torch(norm):
    """Values in the thousands square past float16's 65504: the statistics must be taken in
    float32 (as torch) or the layer comes out as zeros and NaNs."""
    x = (np.random.default_rng(4).standard_normal((4, 4, 3, 3)) * 1000).astype(np.float16)
    w = np.linspace(0.5, 1.5, 4).astype(np.float16)
    outs = []
    for m in (pf, torch):
        xt = m.tensor(x, requires_grad=True)
        wt = m.tensor(w, requires_grad=True)
        y = _norm_call(m, norm, xt, wt)
        (y.float() * m.tensor(np.arange(y.numel(), dtype=np.float32).reshape(tuple(y.shape)) / 100)).sum().backward()
        outs.append([t.detach().float().numpy() for t in (y, xt.grad)])
    for got, want in zip(outs[0], outs[1], strict=True):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
