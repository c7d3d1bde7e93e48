"""The CNN step's fused C kernels against torch: max pooling (values, indices, gradients) on
strided and odd inputs, batch norm with batch statistics (cancellation, strides, running
statistics) and where's branch-free runs."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn.functional as F
from pyframe._backend import NULL, check, lib

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _both(arr: np.ndarray, grad: bool = True):
    return pf.tensor(arr, requires_grad=grad), torch.tensor(arr, requires_grad=grad)


def _grads_equal(po, to, pins, tins, rtol, atol, seed=1):
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol, err_msg="forward")
    cot = np.random.default_rng(seed).standard_normal(tuple(to.shape)).astype(po.detach().numpy().dtype)
    po.backward(pf.tensor(cot))
    to.backward(torch.tensor(cot).to(to.dtype))
    for i, (p, t) in enumerate(zip(pins, tins, strict=True)):
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"grad {i}")


# ---- max pooling ----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    "k, s, p, d", [(2, 2, 0, 1), (3, 1, 1, 1), (3, 2, 1, 1), ((2, 3), (2, 1), (1, 0), 1), (2, 1, 1, 2), (3, 3, 0, 1)]
)
def test_max_pool2d_strided_input_values_indices_grads(dtype, k, s, p, d):
    rng = np.random.default_rng(3)
    # a permuted (non-contiguous) input with ties: zeros as after ReLU
    base = np.maximum(rng.standard_normal((2, 3, 9, 8)), 0).astype(dtype)
    px, tx = _both(base)
    pv, tv = px.permute(0, 1, 3, 2), tx.permute(0, 1, 3, 2)
    po, pi = F.max_pool2d(pv, k, s, p, d, return_indices=True)
    to, ti = TF.max_pool2d(tv, k, s, p, d, return_indices=True)
    np.testing.assert_array_equal(pi.numpy(), ti.numpy())
    _grads_equal(po, to, [px], [tx], rtol=0, atol=0)


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


def test_max_pool2d_backward_kernel_refuses_bad_indices():
    gy, gx = pf.ones(1, 1, 2, 2), pf.empty(1, 1, 4, 4)
    idx = pf.tensor([[[[0, 1], [4, 16]]]])
    with pytest.raises(IndexError, match="index 16 .* outside the 4x4 input plane"):
        check(lib.pf_max_pool2d_backward(gy._d(), idx._d(), gx._d(), 2, 2, 2, 2, 0, 0, 1, 1))
    with pytest.raises(TypeError, match="indices must be int64"):
        check(lib.pf_max_pool2d_backward(gy._d(), gy._d(), gx._d(), 2, 2, 2, 2, 0, 0, 1, 1))


# ---- batch norm -----------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-4), (np.float64, 1e-8)])
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 37), (8, 4, 9, 11)])
@pytest.mark.parametrize("offset", [0.0, 1000.0])
def test_batch_norm_fused_matches_torch(dtype, tol, shape, offset):
    """Against torch in float64 on the same values: with a large mean beside a small spread a
    folded x * scale + shift in float32 (torch's own float32 kernel) is off by 1e-2, and a
    one-pass sum of squares would cancel to garbage."""
    rng = np.random.default_rng(5)
    c = shape[1]
    spread = 0.01 if offset else 1.0
    xa = (offset + spread * rng.standard_normal(shape)).astype(dtype)
    wa, ba = rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype)
    px, pw, pb = (pf.tensor(a, requires_grad=True) for a in (xa, wa, ba))
    tx, tw, tb = (torch.tensor(a.astype(np.float64), requires_grad=True) for a in (xa, wa, ba))
    prm, prv = pf.zeros(c, dtype=px.dtype), pf.ones(c, dtype=px.dtype)
    trm, trv = torch.zeros(c, dtype=torch.float64), torch.ones(c, dtype=torch.float64)
    po = F.batch_norm(px, prm, prv, pw, pb, training=True, momentum=0.3, eps=1e-3)
    to = TF.batch_norm(tx, trm, trv, tw, tb, training=True, momentum=0.3, eps=1e-3)
    assert po.dtype == px.dtype
    _grads_equal(po, to, [px, pw, pb], [tx, tw, tb], rtol=tol, atol=tol)
    np.testing.assert_allclose(prm.numpy(), trm.numpy(), rtol=tol)
    np.testing.assert_allclose(prv.numpy(), trv.numpy(), rtol=tol * 10, atol=tol)


def test_batch_norm_fused_strided_input_and_partial_grads():
    rng = np.random.default_rng(6)
    xa = rng.standard_normal((6, 5, 4, 3))
    (px, tx), (pw, tw) = _both(xa), _both(rng.standard_normal(4), grad=False)
    # channels from dim 2 of the leaf: the normalized input is a non-contiguous view
    po = F.batch_norm(px.transpose(1, 2), None, None, pw, None, training=True)
    to = TF.batch_norm(tx.transpose(1, 2), None, None, tw, None, training=True)
    _grads_equal(po, to, [px], [tx], rtol=1e-10, atol=1e-10)
    assert pw.grad is None


def test_batch_norm2d_module_trains_like_torch():
    rng = np.random.default_rng(7)
    pm, tm = pf.nn.BatchNorm2d(3), torch.nn.BatchNorm2d(3)
    for _ in range(3):
        xa = rng.standard_normal((4, 3, 5, 5)).astype(np.float32) * 3 + 1
        po, to = pm(pf.tensor(xa)), tm(torch.tensor(xa))
        np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(pm.running_mean.numpy(), tm.running_mean.numpy(), rtol=1e-5)
    np.testing.assert_allclose(pm.running_var.numpy(), tm.running_var.numpy(), rtol=1e-5)
    assert int(pm.num_batches_tracked.item()) == 3


def test_batch_norm_kernel_refuses_bad_shapes():
    x, y = pf.randn(2, 3, 4), pf.empty(2, 3, 4)
    mean, var, short = pf.empty(3, dtype=pf.float64), pf.empty(3, dtype=pf.float64), pf.empty(2)
    with pytest.raises(ValueError, match=r"weight must have shape \[3\]"):
        check(lib.pf_batch_norm_forward(x._d(), short._d(), NULL, 1e-5, 0.1, NULL, NULL, y._d(), mean._d(), var._d()))
    with pytest.raises(TypeError, match="mean must be float64, got float32"):
        check(lib.pf_batch_norm_forward(x._d(), NULL, NULL, 1e-5, 0.1, NULL, NULL, y._d(), y[0, :, 0]._d(), var._d()))
    with pytest.raises(ValueError, match="output must be contiguous"):
        yt = pf.empty(3, 2, 4).transpose(0, 1)
        check(lib.pf_batch_norm_forward(x._d(), NULL, NULL, 1e-5, 0.1, NULL, NULL, yt._d(), mean._d(), var._d()))


# ---- where ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.float16])
def test_where_branch_free_runs(dtype):
    rng = np.random.default_rng(8)
    c = rng.standard_normal((3, 50, 7)) > 0
    a = (rng.standard_normal((3, 50, 7)) * 10).astype(dtype)
    b = (rng.standard_normal((50, 7)) * 10).astype(dtype)
    pc, pa, pb = pf.tensor(c), pf.tensor(a), pf.tensor(b)
    np.testing.assert_array_equal(pf.where(pc, pa, 0).numpy(), np.where(c, a, 0).astype(dtype))
    np.testing.assert_array_equal(pf.where(pc, pa, pb).numpy(), np.where(c, a, b))
    # strided operands take the general run
    b3 = (rng.standard_normal((3, 50, 7)) * 10).astype(dtype)
    got = pf.where(pc.transpose(0, 2), pa.transpose(0, 2), pf.tensor(b3).transpose(0, 2))
    np.testing.assert_array_equal(got.numpy(), np.where(c, a, b3).transpose(2, 1, 0))


def test_where_keeps_nan_payload_and_relu_grad():
    bits = np.array([0x7FC01234, 0x3F800000], dtype=np.uint32).view(np.float32)
    out = pf.where(pf.tensor([True, False]), pf.tensor(bits), 2.0).numpy()
    assert out.view(np.uint32)[0] == 0x7FC01234 and out[1] == 2.0
    xa = np.random.default_rng(9).standard_normal((64, 40)).astype(np.float32)
    (px, tx) = _both(xa)
    _grads_equal(px.relu(), tx.relu(), [px], [tx], rtol=0, atol=0)


def test_batch_norm_output_takes_inplace_relu_under_autograd():
    """DCGAN's BatchNorm2d -> ReLU(inplace=True): the output owns its memory, not a view."""
    xa = np.random.default_rng(10).standard_normal((4, 3, 5, 5)).astype(np.float32)
    res = []
    for lib_, fns in ((pf, F), (torch, TF)):
        x = lib_.tensor(xa, requires_grad=True)
        y = fns.relu(fns.batch_norm(x, None, None, training=True), inplace=True)
        (y * y).sum().backward()
        res.append(x.grad.numpy())
    np.testing.assert_allclose(res[0], res[1], rtol=1e-4, atol=1e-5)


# ---- conv2d ---------------------------------------------------------------------------------


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
        _both(xa),
        _both(rng.standard_normal(ws).astype(np.float32)),
        _both(rng.standard_normal(ws[0]).astype(np.float32)),
    )
    args = (stride, padding, dilation, groups)
    view = (lambda t: t.transpose(2, 3)) if transposed else (lambda t: t)
    po = F.conv2d(view(px), pw, pb, *args)
    to = TF.conv2d(view(tx), tw, tb, *args)
    _grads_equal(po, to, [px, pw, pb], [tx, tw, tb], rtol=1e-4, atol=1e-4)
