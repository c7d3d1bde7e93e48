"""Convolutions against torch (float64 and float32, forward and gradients): conv1d, conv2d on every kernel path,
conv3d, conv_transpose1d/2d/3d, unfold/fold, the Conv modules (padding modes, lazy forms) and their
initialisation; gradchecks and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from pyframe._backend import ShapeError
from pyframe.autograd import gradcheck
from tests._oracle import both, compare, compare_f64, f64, gc, grads_equal, leaf, rand, randn
from tests._tables import constructor_errors_test, module_float64_table_test, module_table_test, reprs_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional


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


@pytest.mark.parametrize(
    "xs, ws, stride, padding, dilation, groups",
    [
        ((3, 4, 24, 24), (6, 2, 3, 3), 1, 1, 1, 2),  # 576 positions: one GEMM per sample
        ((5, 4, 10, 12), (6, 4, 3, 3), 1, 1, 1, 1),  # small images: one GEMM per chunk
        ((4, 3, 11, 9), (6, 1, 3, 3), 1, (2, 1), 1, 3),  # taller output than input, depthwise
        ((2, 2, 13, 13), (3, 2, 3, 3), 2, 1, 2, 1),
        ((2, 1, 28, 28), (8, 1, 3, 3), 1, 0, 1, 1),
    ],
)
@pytest.mark.parametrize("transposed", [False, True])
def test_conv2d_paths_match_torch(xs, ws, stride, padding, dilation, groups, transposed):
    rng = np.random.default_rng(11)
    xa = rng.standard_normal(xs[:2] + (xs[:1:-1] if transposed else xs[2:])).astype(np.float32)
    (px, tx), (pw, tw), (pb, tb) = (
        both(xa),
        both(rng.standard_normal(ws).astype(np.float32)),
        both(rng.standard_normal(ws[0]).astype(np.float32)),
    )
    args = (stride, padding, dilation, groups)
    view = (lambda t: t.transpose(2, 3)) if transposed else (lambda t: t)
    po = F.conv2d(view(px), pw, pb, *args)
    to = TF.conv2d(view(tx), tw, tb, *args)
    grads_equal(po, to, [px, pw, pb], [tx, tw, tb], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(
    "xs, ws, stride, padding, dilation",
    [
        ((32, 256, 4, 4), (64, 256, 3, 3), 1, 1, 1),  # late ResNet stage: dense tiles, the weight packed once
        ((6, 64, 7, 7), (48, 64, 3, 3), 1, 1, 1),  # 7x7: samples split across tiles
        ((4, 40, 8, 8), (40, 40, 3, 3), 2, 1, 1),  # stride 2 over the position table
        ((3, 40, 9, 7), (36, 40, 3, 2), 1, (2, 0), 2),  # dilation and uneven padding
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_conv2d_small_planes_match_torch(xs, ws, stride, padding, dilation, dtype):
    rng = np.random.default_rng(5)
    (px, tx), (pw, tw), (pb, tb) = (
        both(rng.standard_normal(xs).astype(dtype)),
        both((rng.standard_normal(ws) * 0.05).astype(dtype)),
        both(rng.standard_normal(ws[0]).astype(dtype)),
    )
    po = F.conv2d(px, pw, pb, stride, padding, dilation)
    to = TF.conv2d(tx, tw, tb, stride, padding, dilation)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    grads_equal(po, to, [px, pw, pb], [tx, tw, tb], rtol=tol, atol=tol)


@pytest.mark.parametrize(
    "xs, ws, stride, padding, dilation, groups",
    [
        ((32, 256, 4, 4), (512, 256, 3, 3), 1, 1, 1, 1),  # the last ResNet stage: one sample block
        ((9, 128, 8, 8), (256, 128, 3, 3), 2, 1, 1, 1),  # stride 2, sample blocks of unequal size
        ((5, 64, 8, 8), (128, 64, 1, 1), 2, 0, 1, 1),  # a 1x1 stride-2 shortcut
        ((3, 40, 9, 7), (96, 40, 3, 2), 1, (2, 0), 2, 1),  # dilation, uneven padding, a part-empty panel
        ((4, 34, 6, 6), (192, 17, 3, 3), 1, 1, 1, 2),  # groups of 17 channels
        ((2, 48, 20, 20), (128, 48, 3, 3), 1, 1, 1, 1),  # a plane of 400 positions: a sample per chunk
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_weight_gradient_paths_match_torch(xs, ws, stride, padding, dilation, groups, dtype, threads):
    """Layers with many output channels take the weight gradient as an implicit GEMM (float32 on
    AVX-512): grad_out packed once, B's panels gathered from x."""
    rng = np.random.default_rng(8)
    (px, tx) = both(rng.standard_normal(xs).astype(dtype))
    (pw, tw) = both((rng.standard_normal(ws) * 0.05).astype(dtype))
    before = pf.get_num_threads()
    try:
        pf.set_num_threads(threads)
        po = F.conv2d(px, pw, None, stride, padding, dilation, groups)
        to = TF.conv2d(tx, tw, None, stride, padding, dilation, groups)
        tol = 1e-4 if dtype == np.float32 else 1e-10
        grads_equal(po, to, [px, pw], [tx, tw], rtol=tol, atol=tol)
    finally:
        pf.set_num_threads(before)


@pytest.mark.parametrize(
    "xs, ws, stride, padding, groups",
    [
        ((1, 512, 4, 4), (512, 512, 3, 3), 1, 1, 1),  # batch 1, one tile: two blocks of output channels
        ((1, 256, 8, 8), (512, 256, 1, 1), 2, 0, 1),  # a 1x1 stride-2 shortcut at batch 1
        ((2, 128, 7, 7), (200, 128, 3, 3), 1, 1, 1),  # blocks of 128 and 72 rows
        ((16, 64, 4, 4), (48, 64, 3, 3), 1, 1, 1),  # more positions than channels: the tile split in two
        ((5, 96, 4, 4), (240, 48, 3, 3), 1, 1, 2),  # groups: two items already, no split
        ((32, 512, 4, 4), (512, 512, 3, 3), 1, 1, 1),  # 3 tiles made 4 of equal length
        ((24, 256, 8, 8), (256, 256, 3, 3), 1, 1, 1),  # 4 tiles (the last short) made 4 of equal length
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_dense_forward_splits_match_torch(xs, ws, stride, padding, groups, dtype, threads):
    """Small planes take dense tiles over the batch: tiles of equal length, and a single item split in
    two (its tile, or its output channels with the bias), at any thread count."""
    rng = np.random.default_rng(9)
    (px, tx) = both(rng.standard_normal(xs).astype(dtype))
    (pw, tw) = both((rng.standard_normal(ws) * 0.05).astype(dtype))
    (pb, tb) = both(rng.standard_normal(ws[0]).astype(dtype))
    before = pf.get_num_threads()
    try:
        pf.set_num_threads(threads)
        tol = 1e-4 if dtype == np.float32 else 1e-10
        with pf.no_grad():
            po = F.conv2d(px, pw, pb, stride, padding, 1, groups)
        to = TF.conv2d(tx, tw, tb, stride, padding, 1, groups)
        np.testing.assert_allclose(po.numpy(), to.detach().numpy(), rtol=tol, atol=tol)
        if xs[0] < 32:  # and the gradients, through the same forward; float32 grad_w sums 1,536 products to values
            # up to 40, where torch's own float32 answer is 2.4e-4 from float64's (pyframe's 8e-5)
            gtol = tol if dtype == np.float64 else 5e-4
            grads_equal(F.conv2d(px, pw, pb, stride, padding, 1, groups), to, [px, pw, pb], [tx, tw, tb], rtol=tol,
                        atol=gtol)  # fmt: skip
    finally:
        pf.set_num_threads(before)


@pytest.mark.parametrize(
    "xs, ws, padding, dilation, groups, channels_last",
    [
        ((8, 64, 4, 4), (64, 64, 3, 3), 1, 1, 1, False),  # a 4x4 layer: 128 positions, 64 channels
        ((4, 48, 8, 8), (40, 48, 3, 3), 1, 1, 1, True),  # 8x8, x channels-last: grad_x in x's layout
        ((6, 64, 5, 5), (64, 32, 3, 3), (0, 2), 1, 2, False),  # uneven padding, groups
        ((3, 32, 6, 6), (36, 32, 3, 3), 2, 2, 1, False),  # dilation: padding (k-1)*d - p = 2
        ((2, 64, 4, 4), (256, 64, 3, 3), 1, 1, 1, False),  # fewer positions than channels: the tiled path
    ],
)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_conv2d_dense_grad_x_matches_torch(xs, ws, padding, dilation, groups, channels_last, threads):
    """Stride-1 layers on small planes (dense tiles over the batch) take grad_x as the forward of grad_out with the
    flipped, transposed weight; against torch at several thread counts, and the same bits at any of them."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) * 0.05).astype(np.float32)
    px, tx = pf.tensor(x), torch.tensor(x)
    if channels_last:
        px, tx = px.contiguous(memory_format=pf.channels_last), tx.contiguous(memory_format=torch.channels_last)
    px.requires_grad_(True), tx.requires_grad_(True)
    (pw, tw) = both(w)
    before = pf.get_num_threads()
    try:
        pf.set_num_threads(threads)
        po = F.conv2d(px, pw, None, 1, padding, dilation, groups)
        to = TF.conv2d(tx, tw, None, 1, padding, dilation, groups)
        grads_equal(po, to, [px, pw], [tx, tw], rtol=1e-4, atol=1e-4)
        gy = pf.tensor(np.random.default_rng(3).standard_normal(tuple(to.shape)).astype(np.float32))
        (gx,) = pf.autograd.grad(F.conv2d(px, pw.detach(), None, 1, padding, dilation, groups), px, gy)
        pf.set_num_threads(1)
        (gx1,) = pf.autograd.grad(F.conv2d(px, pw.detach(), None, 1, padding, dilation, groups), px, gy)
        assert np.array_equal(gx.numpy(), gx1.numpy())
    finally:
        pf.set_num_threads(before)


@pytest.mark.parametrize(
    "xs, ws, padding, dilation, groups, channels_last",
    [
        ((3, 64, 32, 32), (64, 64, 3, 3), 1, 1, 1, False),  # CIFAR ResNet's first stage: 10 x 6 + 4 rows
        ((2, 128, 16, 16), (128, 128, 3, 3), 1, 1, 1, True),  # its second (21 x 6 + 2 rows), x channels-last
        ((2, 32, 26, 26), (64, 32, 3, 3), 0, 1, 1, False),  # MNIST's second layer: no padding
        ((2, 40, 13, 11), (22, 20, 3, 3), (2, 1), (2, 1), 2, False),  # groups, dilation, uneven padding, 22 rows
        ((2, 24, 9, 12), (17, 24, 3, 5), (0, 3), 1, 1, False),  # padding wider than the kernel: rows of OW
        ((1, 96, 20, 20), (32, 96, 1, 1), 1, 1, 1, False),  # a 1x1 kernel over a zero border
        ((3, 3, 32, 32), (64, 3, 3, 3), 1, 1, 1, False),  # CIFAR ResNet's stem: K 27, a last block of 3 rows
        ((2, 32, 47, 47), (40, 16, 3, 3), 1, 1, 2, False),  # groups of 20 channels (16-lane blocks), 2 chunks of q
    ],
)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_conv2d_wide_planes_on_avx2_match_torch(
    xs, ws, padding, dilation, groups, channels_last, threads, restore_gemm
):
    """Stride-1 float32 layers on large planes, on the AVX2 path: the forward's kernels read the padded planes in
    place (rows sharing their zero columns), grad_x as the forward of grad_out with the flipped weight, grad_w by
    kernels that broadcast the planes against grad_out transposed in blocks of 16 channels (16 or more output
    channels, else dot kernels on planes of 512 positions or more); against torch at several thread counts, and the
    same bits at any of them."""
    if not restore_gemm.pf_cpu_supports(b"avx2"):
        pytest.skip("no AVX2")
    assert restore_gemm.pf_gemm_select(b"avx2") == 0
    rng = np.random.default_rng(12)
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) * 0.05).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    # torch in float64: its float32 weight gradient of the 32x32 layer is 10x further from it than pyframe's
    px, tx = pf.tensor(x), torch.tensor(x, dtype=torch.float64)
    if channels_last:
        px, tx = px.contiguous(memory_format=pf.channels_last), tx.contiguous(memory_format=torch.channels_last)
    px.requires_grad_(True), tx.requires_grad_(True)
    pw, tw = pf.tensor(w).requires_grad_(), torch.tensor(w, dtype=torch.float64).requires_grad_()
    pb, tb = pf.tensor(b).requires_grad_(), torch.tensor(b, dtype=torch.float64).requires_grad_()
    before = pf.get_num_threads()
    try:
        pf.set_num_threads(threads)
        po = F.conv2d(px, pw, pb, 1, padding, dilation, groups)
        to = TF.conv2d(tx, tw, tb, 1, padding, dilation, groups)
        grads_equal(po, to, [px, pw, pb], [tx, tw, tb], rtol=1e-4, atol=1e-4)
        gy = pf.tensor(np.random.default_rng(3).standard_normal(tuple(to.shape)).astype(np.float32))
        y = po.detach()
        gx, gw = pf.autograd.grad(F.conv2d(px, pw, None, 1, padding, dilation, groups), [px, pw], gy)
        pf.set_num_threads(1)
        with pf.no_grad():
            y1 = F.conv2d(px, pw, pb, 1, padding, dilation, groups)
        gx1, gw1 = pf.autograd.grad(F.conv2d(px, pw, None, 1, padding, dilation, groups), [px, pw], gy)
        assert np.array_equal(y.numpy(), y1.numpy()) and np.array_equal(gx.numpy(), gx1.numpy())
        assert np.array_equal(gw.numpy(), gw1.numpy())
    finally:
        pf.set_num_threads(before)


@pytest.mark.parametrize(
    "xs, ws, stride, padding, dilation, channels_last",
    [
        ((3, 64, 32, 32), (128, 64, 3, 3), 2, 1, 1, False),  # CIFAR ResNet's 64 -> 128 stride-2 layer
        ((2, 16, 32, 32), (40, 16, 5, 5), 2, 2, 1, True),  # 5x5, x channels-last, 40 rows (6 x 6 + 4)
        ((2, 24, 48, 48), (32, 24, 3, 3), 3, 1, 1, False),  # stride 3: nine phases
        ((2, 32, 32, 35), (48, 32, 4, 4), 2, (1, 0), 1, False),  # an even kernel, uneven padding
        ((2, 16, 32, 32), (32, 16, 3, 3), 2, 2, 2, False),  # dilation 2: every tap in one phase
        ((2, 20, 33, 34), (20, 20, 3, 3), 2, (1, 2), 1, False),  # 17 x 18 outputs: grad_w only, 20 of 32 lanes
    ],
)
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_conv2d_strided_phase_planes_on_avx2_match_torch(
    xs, ws, stride, padding, dilation, channels_last, threads, restore_gemm
):
    """Strided float32 layers on the AVX2 path: the forward (output rows of a multiple of 16) reads phase planes of
    the padded input with wide2's kernels, and grad_w (16 or more output columns) broadcasts the same planes against
    grad_out transposed; against torch in float64, and the same bits at any thread count."""
    if not restore_gemm.pf_cpu_supports(b"avx2"):
        pytest.skip("no AVX2")
    assert restore_gemm.pf_gemm_select(b"avx2") == 0
    _check_conv_float64(xs, ws, stride, padding, dilation, True, channels_last, threads, seeds=(5, 6), atol=1e-4)


@pytest.mark.parametrize(
    "xs, ws, padding, dilation, bias, channels_last",
    [
        ((32, 64, 4, 4), (96, 64, 3, 3), 1, 1, True, False),  # 4x4: classes of whole panels (corners, edges)
        ((8, 48, 7, 7), (64, 48, 3, 3), 1, 1, False, False),  # 7x7 at batch 8: the chain of classes
        ((3, 64, 7, 7), (72, 64, 3, 3), 1, 1, True, False),  # lanes past the batch's positions
        ((9, 48, 4, 4), (40, 48, 3, 3), 1, 1, True, True),  # x channels-last
        ((6, 32, 6, 6), (64, 32, 3, 3), 2, 2, True, False),  # dilation
        ((6, 32, 5, 5), (64, 32, 3, 3), (0, 2), 1, False, False),  # uneven padding
        ((16, 32, 5, 5), (64, 32, 3, 3), 0, 1, True, False),  # no padding: one class
        ((10, 24, 8, 8), (96, 24, 5, 5), 2, 1, True, False),  # 25 taps
        ((12, 40, 6, 6), (33, 40, 2, 2), 1, 1, True, False),  # an even kernel
        ((4, 16, 3, 3), (32, 16, 3, 3), 3, 1, True, False),  # padding past the kernel: outputs that are the bias
    ],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_tap_classes_match_float64(xs, ws, padding, dilation, bias, channels_last, threads, restore_gemm):
    """Small planes (at most 8x8 outputs, 128 positions or more) skip the taps that read padding: output positions
    in classes by the taps they read (conv_taps.c, on the AVX2 kernels, forced where the CPU has them).
    Forward and both gradients (grad_x as the forward of grad_out with the weight read flipped) against float64,
    and the same bits at any thread count."""
    if restore_gemm.pf_cpu_supports(b"avx2"):
        assert restore_gemm.pf_gemm_select(b"avx2") == 0
    _check_conv_float64(xs, ws, 1, padding, dilation, bias, channels_last, threads)


@pytest.mark.parametrize(
    "xs, ws, stride, padding, bias, channels_last",
    [
        ((1, 512, 4, 4), (512, 512, 3, 3), 1, 1, False, False),  # CIFAR ResNet-18's layer4 at batch 1
        ((1, 256, 8, 8), (256, 256, 3, 3), 1, 1, True, False),  # its layer3: 64 positions
        ((1, 256, 8, 8), (512, 256, 3, 3), 2, 1, False, False),  # stride 2 down to 4x4
        ((1, 256, 8, 8), (512, 256, 1, 1), 2, 0, False, True),  # the 1x1 shortcut, x channels-last
        ((1, 40, 7, 7), (50, 40, 3, 3), 1, 1, True, False),  # 49 positions: the last 8 lanes in 12-row tiles
        ((3, 24, 4, 4), (17, 24, 3, 3), 1, 1, True, True),  # batch 3: 48 positions; rows past whole tiles
        ((1, 16, 5, 5), (20, 16, 3, 3), 2, 1, True, False),  # 9 positions
    ],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_conv2d_few_positions_on_avx2_match_float64(
    xs, ws, stride, padding, bias, channels_last, threads, restore_gemm
):
    """At most 64 output positions in the batch (the late layers at batch 1): the weight read in place, no pack
    (conv_taps.c's rows_gemm, on the AVX2 kernels, forced where the CPU has them). Forward and both gradients
    against float64, and the same bits at any thread count."""
    if restore_gemm.pf_cpu_supports(b"avx2"):
        assert restore_gemm.pf_gemm_select(b"avx2") == 0
    _check_conv_float64(xs, ws, stride, padding, 1, bias, channels_last, threads)


def _check_conv_float64(xs, ws, stride, padding, dilation, bias, channels_last, threads, seeds=(12, 13), atol=None):
    """conv2d's forward and both gradients against torch in float64 (within rtol 1e-4 and atol, by default 1e-4 of
    the reference's largest magnitude), and the same bits at `threads` threads as at one. seeds: the inputs' and
    grad_out's."""
    rng = np.random.default_rng(seeds[0])
    x = rng.standard_normal(xs).astype(np.float32)
    w = (rng.standard_normal(ws) * 0.05).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32) if bias else None
    tx, tw = torch.tensor(x, dtype=torch.float64, requires_grad=True), torch.tensor(w, dtype=torch.float64,
                                                                                   requires_grad=True)  # fmt: skip
    to = TF.conv2d(tx, tw, None if b is None else torch.tensor(b, dtype=torch.float64), stride, padding, dilation)
    gy = np.random.default_rng(seeds[1]).standard_normal(tuple(to.shape)).astype(np.float32)
    to.backward(torch.tensor(gy, dtype=torch.float64))
    before = pf.get_num_threads()
    got = []
    try:
        for t in (threads, 1):
            pf.set_num_threads(t)
            px = pf.tensor(x)
            if channels_last:
                px = px.contiguous(memory_format=pf.channels_last)
            px.requires_grad_(True)
            pw = pf.tensor(w, requires_grad=True)
            po = F.conv2d(px, pw, None if b is None else pf.tensor(b), stride, padding, dilation)
            po.backward(pf.tensor(gy))
            got.append((po.detach().numpy(), px.grad.numpy(), pw.grad.numpy()))
    finally:
        pf.set_num_threads(before)
    for ours, ref in zip(got[0], (to.detach().numpy(), tx.grad.numpy(), tw.grad.numpy()), strict=True):
        np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4 * np.abs(ref).max() if atol is None else atol)
    for a, c in zip(got[0], got[1], strict=True):
        assert np.array_equal(a, c)


@pytest.mark.parametrize("how", ["add_", "data", "copy_", "numpy"])
def test_conv2d_sees_a_weight_changed_in_place_between_calls(how):
    """The weight is packed for the GEMM per call: a change in place between two calls (any way
    of making it) is in the second call's output and gradients, never a stale pack."""
    rng = np.random.default_rng(6)
    x = pf.tensor(rng.standard_normal((32, 256, 4, 4)).astype(np.float32), requires_grad=True)
    w = pf.tensor((rng.standard_normal((64, 256, 3, 3)) * 0.05).astype(np.float32), requires_grad=True)
    y1 = F.conv2d(x, w, padding=1)
    y1.sum().backward()
    gx1 = x.grad.clone()
    new = (rng.standard_normal((64, 256, 3, 3)) * 0.05).astype(np.float32)
    with pf.no_grad():
        if how == "add_":
            w.add_(pf.tensor(new) - w)
        elif how == "data":
            w.data.copy_(pf.tensor(new))
        elif how == "copy_":
            w.copy_(pf.tensor(new))
        else:
            w.detach().numpy()[...] = new
    x.grad = None
    y2 = F.conv2d(x, w, padding=1)
    y2.sum().backward()
    ref_w = pf.tensor(new, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_(True)
    ref = F.conv2d(x_ref, ref_w, padding=1)
    ref.sum().backward()
    np.testing.assert_allclose(y2.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(x.grad.numpy(), x_ref.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert not np.allclose(y1.detach().numpy(), y2.detach().numpy(), atol=1e-2)
    assert not np.allclose(gx1.numpy(), x.grad.numpy(), atol=1e-2)


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
    with pytest.raises(TypeError, match="floating operands of one dtype"):
        F.conv2d(pf.ones(1, 1, 3, 3, dtype=pf.int64), pf.ones(1, 1, 1, 1, dtype=pf.int64))
    with pytest.raises(ValueError, match="strided"):
        F.conv2d(x, pf.randn(4, 3, 3, 3), stride=2, padding="same")


CONV1D = [((2, 4, 9), (6, 4, 3), {}), ((2, 4, 9), (6, 2, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
          ((4, 9), (5, 4, 4), {"padding": "same"})]  # fmt: skip


@pytest.mark.parametrize("xs, ws, kw", CONV1D)
def test_conv1d(xs, ws, kw):
    compare_f64(lambda x, w, b: F.conv1d(x, w, b, **kw), lambda x, w, b: TF.conv1d(x, w, b, **kw),
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
    compare_f64(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), lambda x, w, b: TF.conv_transpose2d(x, w, b, **kw),
            rand(*xs), rand(*ws, seed=1), rand(o, seed=2))  # fmt: skip


def test_conv_transpose1d_and_modules_match_torch():
    kw = {"stride": 3, "padding": 1, "output_padding": 2}
    compare_f64(lambda x, w: F.conv_transpose1d(x, w, **kw), lambda x, w: TF.conv_transpose1d(x, w, **kw),
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


def test_conv_transpose_gradcheck():
    x = pf.tensor(rand(1, 2, 3, 3), requires_grad=True)
    w = pf.tensor(rand(2, 2, 2, 2, seed=1), requires_grad=True)
    assert gradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1).pow(2).sum(), (x, w), eps=1e-6,
                     atol=1e-6, rtol=1e-4)  # fmt: skip


def test_conv1d_and_conv_transpose_bad_input():
    with pytest.raises(ValueError, match="3-d"):
        F.conv1d(pf.randn(2, 3, 4, 5), pf.randn(2, 3, 1))
    with pytest.raises(ValueError, match="expects 3"):
        F.conv_transpose2d(pf.randn(1, 2, 4, 4), pf.randn(3, 2, 3, 3))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose2d(pf.randn(1, 2, 4, 4), pf.randn(2, 2, 3, 3), stride=1, output_padding=1)


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


LAYERS = {
    "conv": (lambda n: n.Conv2d(3, 4, 3), [randn(2, 3, 7, 7)]),
    "conv_strided_grouped": (lambda n: n.Conv2d(4, 6, (3, 2), stride=2, padding=1, dilation=(1, 2), groups=2),
                             [randn(2, 4, 9, 8)]),
    "conv_same_nobias": (lambda n: n.Conv2d(3, 2, 3, padding="same", bias=False), [randn(1, 3, 5, 6)]),
    "conv_unbatched": (lambda n: n.Conv2d(2, 3, 2, stride=(1, 2)), [randn(2, 5, 5)]),
    "conv_reflect": (lambda n: n.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="reflect"), [randn(2, 2, 5, 6)]),
    "conv_circular_same": (lambda n: n.Conv2d(2, 3, 4, padding="same", padding_mode="circular"),
                           [randn(1, 2, 5, 6)]),
    "conv1d_replicate": (lambda n: n.Conv1d(2, 3, 3, padding=2, padding_mode="replicate"), [randn(2, 2, 7)]),
    "conv3d": (lambda n: n.Conv3d(2, 4, (2, 3, 2), stride=(1, 2, 1), padding=1, groups=2), [randn(2, 2, 4, 5, 6)]),
    "conv3d_same_dilated": (lambda n: n.Conv3d(3, 2, 2, padding="same", dilation=2, bias=False),
                            [randn(1, 3, 5, 4, 6)]),
    "conv_transpose3d": (lambda n: n.ConvTranspose3d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2),
                         [randn(2, 4, 3, 2, 3)]),
}  # fmt: skip


test_layer_matches_torch = module_table_test(LAYERS)


CASES = {
    "unfold": (lambda n: n.Unfold(2, padding=1, stride=2), [(2, 3, 5, 4)]),
    "fold": (lambda n: n.Fold((4, 5), 2), [(2, 12, 12)]),
}  # fmt: skip


test_layer_float64_matches_torch = module_float64_table_test(CASES)


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": 1}, {"dilation": (1, 2, 1), "groups": 2},
                                {"padding": "same"}, {"stride": (1, 2, 3), "padding": (0, 1, 2)}])  # fmt: skip
def test_conv3d_and_transpose_match_torch(rng, kw):
    x, w, b = f64(rng, 2, 4, 5, 6, 7), f64(rng, 6, 4 // kw.get("groups", 1), 3, 2, 3), f64(rng, 6)
    compare(lambda x, w, b: F.conv3d(x, w, b, **kw), lambda x, w, b: TF.conv3d(x, w, b, **kw), x, w, b)
    if kw.get("padding") != "same":
        wt = f64(rng, 4, 6 // kw.get("groups", 1), 3, 2, 3)
        compare(lambda x, w: F.conv_transpose3d(x, w, **kw), lambda x, w: TF.conv_transpose3d(x, w, **kw), x, wt)


def test_conv3d_gradcheck_and_bad_input(rng):
    x, w = leaf(f64(rng, 1, 2, 3, 4, 3)), leaf(f64(rng, 2, 2, 2, 2, 2))
    gc(lambda x, w: F.conv3d(x, w, stride=(1, 2, 1), padding=1), x, w)
    gc(lambda x, w: F.conv_transpose3d(x, w, stride=2), x, w)
    with pytest.raises(ShapeError, match="weight must be 5-d"):
        F.conv3d(pf.randn(1, 2, 3, 3, 3), pf.randn(2, 2, 3, 3))
    with pytest.raises(ShapeError, match="to have 4 channels, but got 2"):
        F.conv3d(pf.randn(1, 2, 3, 3, 3), pf.randn(2, 2, 1, 1, 1), groups=2)
    with pytest.raises(ShapeError, match="larger than the padded input"):
        F.conv3d(pf.randn(1, 2, 3, 3, 3), pf.randn(2, 2, 4, 1, 1))
    with pytest.raises(ValueError, match="output_padding"):
        F.conv_transpose3d(pf.randn(1, 2, 3, 3, 3), pf.randn(2, 2, 1, 1, 1), output_padding=1)


LAZY = [("LazyConv1d", (3, 2)), ("LazyConv2d", (3, 3, 2, 1)), ("LazyConv3d", (4, 2)), ("LazyConvTranspose1d", (3, 2)),
        ("LazyConvTranspose2d", (4, 3, 2)), ("LazyConvTranspose3d", (2, 2))]  # fmt: skip


@pytest.mark.parametrize("name, args", LAZY)
def test_lazy_convs_infer_in_channels_like_torch(name, args):
    dims = 1 if "1d" in name else 2 if "2d" in name else 3
    x = randn(2, 4, *(5, 6, 4)[:dims])
    m, t = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert isinstance(m.weight, nn.UninitializedParameter) and m.in_channels == 0
    assert m.has_uninitialized_params()
    out = m(pf.tensor(x))
    tout = t(torch.tensor(x))
    assert type(m).__name__ == type(t).__name__ and m.in_channels == t.in_channels == 4
    assert not isinstance(m.weight, nn.UninitializedParameter) and type(m.weight) is nn.Parameter
    assert m.weight.shape == tuple(t.weight.shape) and out.shape == tuple(tout.shape)
    m.load_state_dict({k: pf.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    np.testing.assert_allclose(m(pf.tensor(x)).detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    fresh, tfresh = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)  # a materialized state loads into
    fresh.load_state_dict(m.state_dict())  # a fresh lazy module, which stays lazy until its first call
    tfresh.load_state_dict(t.state_dict())
    assert type(fresh).__name__ == type(tfresh).__name__ == name and fresh.weight.shape == m.weight.shape
    assert fresh.in_channels == 4 and not fresh.has_uninitialized_params()
    np.testing.assert_allclose(fresh(pf.tensor(x)).detach().numpy(), tfresh(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)  # fmt: skip
    assert type(fresh).__name__ == type(tfresh).__name__ == type(t).__name__


def test_conv_init_bounds_as_torch():
    pf.manual_seed(0)
    m = nn.ConvTranspose2d(64, 8, 3)  # torch's fan-in is weight.size(1) * k*k = 8 * 9
    bound = 1 / np.sqrt(8 * 9)
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    assert np.abs(m.weight.detach().numpy()).max() > 0.7 * bound


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


test_constructor_errors = constructor_errors_test(
    lambda: nn.Conv2d(3, 4, 3, groups=2),
    lambda: nn.Conv2d(4, 3, 3, groups=2),
    lambda: nn.Conv2d(4, 4, 3, groups=0),
    lambda: nn.Conv2d(4, 4, 3, padding="full"),
    lambda: nn.Conv2d(4, 4, 3, stride=2, padding="same"),
    lambda: nn.Conv2d(4, 4, 3, padding_mode="mirror"),
)


test_reprs_match_torch = reprs_test(
    lambda n: n.Conv2d(3, 4, 3, padding="same", bias=False),
    lambda n: n.Conv2d(3, 4, (1, 3), stride=(2, 1), padding=(0, 1), dilation=2, groups=1),
    lambda n: n.Conv2d(3, 4, 3, padding=1, padding_mode="reflect"),
    lambda n: n.Conv3d(3, 4, (1, 3, 2), stride=2),
    lambda n: n.ConvTranspose3d(3, 4, 2, output_padding=1, stride=2),
)


HALF = [(pf.float16, torch.float16), (pf.bfloat16, torch.bfloat16)]
_CONV_HALF = {
    "conv1d": lambda F, x, w: F.conv1d(x(2, 3, 9), w(4, 3, 3), padding=1),
    "conv2d": lambda F, x, w: F.conv2d(x(2, 3, 8, 8), w(4, 3, 3, 3), w(4), padding=1, stride=2),
    "conv3d": lambda F, x, w: F.conv3d(x(1, 2, 5, 5, 5), w(2, 2, 3, 3, 3)),
    "conv_transpose2d": lambda F, x, w: F.conv_transpose2d(x(2, 3, 6, 6), w(3, 4, 3, 3), stride=2),
    "conv_transpose3d": lambda F, x, w: F.conv_transpose3d(x(1, 2, 3, 3, 3), w(2, 2, 2, 2, 2)),
    "unfold": lambda F, x, w: F.unfold(x(2, 3, 6, 6), 2),
    "fold": lambda F, x, w: F.fold(x(2, 12, 25), (6, 6), 2),
}


@pytest.mark.parametrize("name", _CONV_HALF)
@pytest.mark.parametrize(("pdt", "tdt"), HALF, ids=["float16", "bfloat16"])
def test_half_dtypes_match_torch(name, pdt, tdt):
    # computed in float32 and rounded once, as torch's CPU kernels mostly are; gradients in the 16-bit dtype
    def maker(lib, dt, seed, leaves, compute=None):
        rng = np.random.default_rng(seed)

        def make(*shape):
            t = lib.tensor(rng.standard_normal(shape).astype(np.float32)).to(dt)
            leaves.append((t if compute is None else t.to(compute)).requires_grad_())
            return leaves[-1]

        return make

    ours_leaves, their_leaves = [], []
    ours = _CONV_HALF[name](F, maker(pf, pdt, 0, ours_leaves), maker(pf, pdt, 1, ours_leaves))
    theirs = _CONV_HALF[name](TF, maker(torch, tdt, 0, their_leaves), maker(torch, tdt, 1, their_leaves))
    once = _CONV_HALF[name](TF, maker(torch, tdt, 0, [], torch.float32), maker(torch, tdt, 1, [], torch.float32))
    assert ours.dtype is pdt
    eps = 2.0**-10 if pdt is pf.float16 else 2.0**-7
    o, t = ours.float().detach().numpy(), theirs.float().detach().numpy()
    r = once.detach().to(tdt).float().numpy()
    # torch's float32 result rounded once, within that rounding (the float32 sums' order differs); torch's own
    # 16-bit kernels are not always that: its col2im (fold, and conv_transpose on AVX2 CPUs) sums in the 16-bit dtype
    np.testing.assert_allclose(o, r, rtol=eps, atol=eps * np.abs(r).max())
    np.testing.assert_allclose(o, t, rtol=4 * eps, atol=4 * eps * np.abs(t).max())
    ours.sum().backward()
    theirs.sum().backward()
    for a, b in zip(ours_leaves, their_leaves, strict=True):
        assert a.grad.dtype is pdt
        g, tg = a.grad.float().numpy(), b.grad.float().numpy()
        np.testing.assert_allclose(g, tg, rtol=2 * eps, atol=2 * eps * np.abs(tg).max())


def test_half_conv_refuses_mixed_dtypes():
    with pytest.raises(TypeError, match="one dtype"):
        F.conv2d(pf.randn(1, 3, 5, 5).half(), pf.randn(2, 3, 3, 3))
