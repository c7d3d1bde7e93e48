"""Normalization against torch: batch_norm (the fused C kernel: cancellation, strides, running statistics),
layer_norm, group_norm, instance_norm, rms_norm, functional and modules; float16 statistics in float32,
gradchecks, double backward, the C kernels' checks and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from pyframe._backend import NULL, check, lib
from tests._oracle import (
    both,
    close_or_none,
    compare,
    compare_module,
    f64,
    gc,
    grads_equal,
    leaf,
    rand,
    randn,
    twin,
    twin_random,
)
from tests._tables import constructor_errors_test, module_float64_table_test, module_table_test, reprs_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional


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
    for m, fns in ((pf, F), (torch, TF)):
        x, w = m.tensor(xa, requires_grad=True), m.tensor(wa, requires_grad=True)
        if kind == "batch_norm":
            y = fns.batch_norm(x, None, None, w, None, training=True)
        else:
            y = fns.layer_norm(x, (3,), w, None)
        (gx,) = (pf.autograd if m is pf else torch.autograd).grad((y * y * y).sum(), [x], create_graph=True)
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


@pytest.mark.parametrize("dtype, tol", [(np.float32, 2e-4), (np.float64, 1e-8)])
@pytest.mark.parametrize("shape", [(5, 3), (4, 3, 37), (8, 4, 9, 11), (64, 6, 4, 4), (40, 3, 7, 7)])
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
    grads_equal(po, to, [px, pw, pb], [tx, tw, tb], rtol=tol, atol=tol)
    np.testing.assert_allclose(prm.numpy(), trm.numpy(), rtol=tol)
    np.testing.assert_allclose(prv.numpy(), trv.numpy(), rtol=tol * 10, atol=tol)


@pytest.mark.parametrize(
    "shape", [(32, 64, 32, 32), (32, 16, 16, 16), (9, 8, 8, 8), (6, 5, 4, 4), (4, 3, 700), (3, 2, 13)]
)
def test_batch_norm_backward_same_bits_on_every_kernel_set(shape, restore_gemm):
    """The backward's sums over a channel (short rows kept in lanes across rows, long rows flushed every 512
    values) have written-out AVX2 loops for float32: the same operations in the same order as the generic ones, so
    the same bits on every kernel set the CPU has; and against torch in float64."""
    rng = np.random.default_rng(8)
    xa = (3.0 + rng.standard_normal(shape)).astype(np.float32)
    ga = rng.standard_normal(shape).astype(np.float32)
    wa, ba = rng.standard_normal(shape[1]).astype(np.float32), rng.standard_normal(shape[1]).astype(np.float32)
    got = {}
    for path in (b"portable", b"avx2", b"avx512"):
        if path != b"portable" and not restore_gemm.pf_cpu_supports(path):
            continue
        assert restore_gemm.pf_gemm_select(path) == 0
        px, pw, pb = (pf.tensor(a, requires_grad=True) for a in (xa, wa, ba))
        F.batch_norm(px, None, None, pw, pb, training=True).backward(pf.tensor(ga))
        got[path] = [t.grad.numpy() for t in (px, pw, pb)]
    first = next(iter(got.values()))
    for grads in got.values():
        assert all(np.array_equal(a, b) for a, b in zip(first, grads, strict=True))
    tx, tw, tb = (torch.tensor(a.astype(np.float64), requires_grad=True) for a in (xa, wa, ba))
    TF.batch_norm(tx, None, None, tw, tb, training=True).backward(torch.tensor(ga.astype(np.float64)))
    for mine, ref in zip(first, (tx.grad, tw.grad, tb.grad), strict=True):
        np.testing.assert_allclose(mine, ref.numpy(), rtol=2e-4, atol=2e-4)


def test_batch_norm_fused_strided_input_and_partial_grads():
    rng = np.random.default_rng(6)
    xa = rng.standard_normal((6, 5, 4, 3))
    (px, tx), (pw, tw) = both(xa), both(rng.standard_normal(4), grad=False)
    # channels from dim 2 of the leaf: the normalized input is a non-contiguous view
    po = F.batch_norm(px.transpose(1, 2), None, None, pw, None, training=True)
    to = TF.batch_norm(tx.transpose(1, 2), None, None, tw, None, training=True)
    grads_equal(po, to, [px], [tx], rtol=1e-10, atol=1e-10)
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


@pytest.mark.parametrize("dtype, tol", [(np.float32, 1e-5), (np.float64, 1e-12)])
@pytest.mark.parametrize("shape", [(1, 64, 32, 32), (3, 5), (2, 7, 9), (0, 4, 3, 3), (2, 16, 4, 4)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm_eval_without_grad_matches_torch(dtype, tol, shape, affine):
    """Eval with nothing needing a gradient is one C pass (pf_batch_norm_eval): the same values as
    torch's and as the differentiable composition taken when a gradient is needed."""
    rng = np.random.default_rng(3)
    c = shape[1]
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    stats = [rng.standard_normal(c).astype(dtype), (rng.random(c) + 0.5).astype(dtype)]
    params = [rng.standard_normal(c).astype(dtype), rng.standard_normal(c).astype(dtype)] if affine else [None, None]
    pf_args = [None if a is None else pf.tensor(a) for a in stats + params]
    t_args = [None if a is None else torch.tensor(a) for a in stats + params]
    with pf.no_grad():
        py = F.batch_norm(pf.tensor(x), *pf_args, False, 0.1, 1e-3)
    ty = torch.nn.functional.batch_norm(torch.tensor(x), *t_args, False, 0.1, 1e-3)
    np.testing.assert_allclose(py.numpy(), ty.numpy(), rtol=tol, atol=tol)
    xg = pf.tensor(x, requires_grad=True)  # the composition
    np.testing.assert_allclose(py.numpy(), F.batch_norm(xg, *pf_args, False, 0.1, 1e-3).detach().numpy(), rtol=tol,
                               atol=tol)  # fmt: skip


def test_batch_norm_eval_strided_input_and_module():
    """A non-contiguous input, and BatchNorm2d.eval() under no_grad after training steps, as torch."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 6, 5, 3)).astype(np.float32)
    pm, tm = nn.BatchNorm2d(6), torch.nn.BatchNorm2d(6)
    for _ in range(2):
        pm(pf.tensor(x * 2 + 1))
        tm(torch.tensor(x * 2 + 1))
    pm.eval(), tm.eval()
    with pf.no_grad(), torch.no_grad():
        py = pm(pf.tensor(x).permute(0, 1, 3, 2))
        ty = tm(torch.tensor(x).permute(0, 1, 3, 2))
    np.testing.assert_allclose(py.numpy(), ty.numpy(), rtol=1e-5, atol=1e-5)


def test_batch_norm_eval_kernel_refuses_bad_input():
    x, y = pf.randn(2, 3, 4), pf.empty(2, 3, 4)
    rm, rv, short = pf.zeros(3), pf.ones(3), pf.ones(2)
    with pytest.raises(ValueError, match=r"running_var must have shape \[3\]"):
        check(lib.pf_batch_norm_eval(x._d(), NULL, NULL, rm._d(), short._d(), 1e-5, y._d()))
    with pytest.raises(ValueError, match="running_mean and running_var must be given"):
        check(lib.pf_batch_norm_eval(x._d(), NULL, NULL, NULL, rv._d(), 1e-5, y._d()))
    with pytest.raises(TypeError, match="weight must be float32, got float64"):
        check(lib.pf_batch_norm_eval(x._d(), pf.ones(3, dtype=pf.float64)._d(), NULL, rm._d(), rv._d(), 1e-5, y._d()))
    with pytest.raises(ValueError, match="output must be contiguous"):
        yt = pf.empty(3, 2, 4).transpose(0, 1)
        check(lib.pf_batch_norm_eval(x._d(), NULL, NULL, rm._d(), rv._d(), 1e-5, yt._d()))
    with pytest.raises(ValueError, match="eps must be >= 0"):
        check(lib.pf_batch_norm_eval(x._d(), NULL, NULL, rm._d(), rv._d(), -1.0, y._d()))
    with pytest.raises(ValueError, match="input must be 3-d"):
        check(lib.pf_batch_norm_eval(pf.randn(2, 3)._d(), NULL, NULL, rm._d(), rv._d(), 1e-5, y._d()))


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


@pytest.mark.parametrize("dims", [(6, 4), (6, 4, 3)])
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"momentum": None}, {"affine": False}, {"track_running_stats": False}, {"momentum": 0.3, "eps": 1e-3}],
)
def test_batchnorm1d_matches_torch(dims, kwargs):
    x = lambda: randn(*dims, seed=np.random.randint(1000))  # noqa: E731 - a fresh batch per step
    t, p = compare_module(lambda n: n.BatchNorm1d(4, **kwargs), x, steps=3)
    if kwargs.get("track_running_stats", True):
        assert int(p.num_batches_tracked) == 3
    compare_module(lambda n: n.BatchNorm1d(4, **kwargs), randn(*dims), train=False)


def test_batchnorm2d_train_then_eval_matches_torch():
    t, p = twin_random(lambda n: n.BatchNorm2d(3))
    for step in range(3):
        x = randn(4, 3, 5, 5, seed=step)
        close_or_none(p(pf.from_numpy(x)), t(torch.from_numpy(x)))
    close_or_none(p.running_mean, t.running_mean)
    close_or_none(p.running_var, t.running_var)
    t.eval()
    p.eval()
    x = randn(2, 3, 5, 5, seed=9)
    close_or_none(p(pf.from_numpy(x)), t(torch.from_numpy(x)))
    assert int(p.num_batches_tracked) == 3
    compare_module(lambda n: n.BatchNorm2d(3, bias=False), randn(2, 3, 4, 4))


def test_batchnorm_checks_input_dims():
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3)(pf.zeros(2, 3, 4, 5))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(pf.zeros(2, 3))


def test_batchnorm_loads_old_checkpoints_without_num_batches_tracked():
    bn = nn.BatchNorm1d(2)
    sd = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    assert bn.load_state_dict(sd).missing_keys == []  # no _metadata: treated as version 1
    sd_new = bn.state_dict()
    del sd_new["num_batches_tracked"]
    with pytest.raises(RuntimeError, match="num_batches_tracked"):
        bn.load_state_dict(sd_new)  # version 2 metadata: really missing


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


@pytest.mark.parametrize("rows", [3, 1200])  # 1200 x 64 passes the parallel grain
@pytest.mark.parametrize("affine", ["wb", "w", "b", ""])
def test_layer_norm_float32(rows, affine):
    rng = np.random.default_rng(rows)
    x = (rng.standard_normal((rows, 64)) * 3 + 1).astype("float32")
    w, b = rng.standard_normal(64).astype("float32"), rng.standard_normal(64).astype("float32")
    arrays = [x] + ([w] if "w" in affine else []) + ([b] if "b" in affine else [])

    def call(F_, x, *rest):
        it = iter(rest)
        return F_.layer_norm(x, (64,), next(it) if "w" in affine else None, next(it) if "b" in affine else None)

    compare(lambda *a: call(F, *a), lambda *a: call(TF, *a), *arrays, rtol=1e-4, atol=1e-4, seed=1)


def test_layer_norm_strided_input_and_two_dims():
    x = np.random.default_rng(2).standard_normal((6, 5, 4)).astype("float64")
    compare(lambda x: F.layer_norm(x.transpose(0, 1), (6, 4)), lambda x: TF.layer_norm(x.transpose(0, 1), (6, 4)),
         x, rtol=1e-10, atol=1e-12, seed=1)  # fmt: skip


def test_layer_norm_core_checks():
    with pytest.raises(TypeError, match="float32 or float64"):
        pf._backend.check(lib.pf_layer_norm(3, NULL, NULL, NULL, NULL, NULL, NULL, 1, 4, 1e-5))
    with pytest.raises(ValueError, match="NULL"):
        pf._backend.check(lib.pf_layer_norm(0, NULL, NULL, NULL, NULL, NULL, NULL, 1, 4, 1e-5))


def test_group_norm_matches_torch(rng):
    compare(lambda x, w, b: F.group_norm(x, 2, w, b), lambda x, w, b: TF.group_norm(x, 2, w, b),
            f64(rng, 2, 4, 3, 3), f64(rng, 4), f64(rng, 4))  # fmt: skip


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


def test_instance_norm_eval_uses_running_stats():
    build = lambda n: n.InstanceNorm1d(3, affine=True, track_running_stats=True)  # noqa: E731
    t, p = twin(build, jitter=0.1)
    x = rand(4, 3, 6)
    for _ in range(2):
        t(torch.tensor(x))
        p(pf.tensor(x))
    t.eval()
    p.eval()
    np.testing.assert_allclose(p(pf.tensor(x * 2)).detach().numpy(), t(torch.tensor(x * 2)).detach().numpy(),
                               rtol=1e-9, atol=1e-12)  # fmt: skip


def test_rms_norm_float32_matches_torch():
    x32 = rand(3, 8).astype(np.float32)
    np.testing.assert_allclose(F.rms_norm(pf.tensor(x32), (8,)).numpy(),
                               torch.nn.functional.rms_norm(torch.tensor(x32), (8,)).numpy(), rtol=1e-6)  # fmt: skip


def test_instance_and_rms_norm_bad_input():
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.InstanceNorm2d(3)(pf.randn(3, 4))
    with pytest.raises(ValueError, match="normalized_shape"):
        F.rms_norm(pf.randn(2, 5), (4,))


LAYERS = {
    "layernorm": (lambda n: n.LayerNorm(6), [randn(3, 6)]),
    "layernorm_2d": (lambda n: n.LayerNorm((4, 6), eps=1e-3), [randn(2, 4, 6)]),
    "layernorm_plain": (lambda n: n.LayerNorm(6, elementwise_affine=False), [randn(3, 6)]),
    "layernorm_nobias": (lambda n: n.LayerNorm(6, bias=False), [randn(3, 6)]),
    "groupnorm": (lambda n: n.GroupNorm(2, 4), [randn(3, 4, 5)]),
    "groupnorm_nobias": (lambda n: n.GroupNorm(2, 4, bias=False), [randn(3, 4, 5)]),
    "groupnorm_plain": (lambda n: n.GroupNorm(1, 4, eps=1e-3, affine=False), [randn(2, 4, 3, 3)]),
}  # fmt: skip


test_layer_matches_torch = module_table_test(LAYERS)


CASES = {
    "instnorm1d": (lambda n: n.InstanceNorm1d(3), [(2, 3, 7)]),
    "instnorm2d_affine_stats": (lambda n: n.InstanceNorm2d(3, affine=True, track_running_stats=True), [(2, 3, 4, 5)]),
    "instnorm2d_unbatched": (lambda n: n.InstanceNorm2d(3, affine=True), [(3, 4, 5)]),
    "rmsnorm": (lambda n: n.RMSNorm(6), [(2, 4, 6)]),
    "rmsnorm_2d_eps": (lambda n: n.RMSNorm((4, 6), eps=1e-3), [(2, 4, 6)]),
}  # fmt: skip


test_layer_float64_matches_torch = module_float64_table_test(CASES)


test_constructor_errors = constructor_errors_test(
    lambda: nn.GroupNorm(3, 4),
)


test_reprs_match_torch = reprs_test(
    lambda n: n.BatchNorm1d(5, affine=False, track_running_stats=False),
    lambda n: n.LayerNorm([3, 4], elementwise_affine=False),
    lambda n: n.GroupNorm(2, 4, affine=False),
)


@pytest.mark.parametrize("size", [1, 2, 3, 4, 5, 9])
def test_cross_map_lrn2d_matches_torch_including_its_window(size):
    x = np.random.default_rng(size).standard_normal((2, 7, 3, 4))
    m, t = nn.CrossMapLRN2d(size, 0.5, 0.75, 1.5), torch.nn.CrossMapLRN2d(size, 0.5, 0.75, 1.5)
    np.testing.assert_allclose(m(pf.tensor(x)).numpy(), t(torch.tensor(x)).numpy(), rtol=1e-12, atol=1e-12)
    assert repr(m) == repr(t)
    # its gradient is the exact one of this forward (torch's hand-written backward differs in the last digits)
    gc(lambda a: nn.CrossMapLRN2d(size, 0.5, 0.75, 1.5)(a), pf.tensor(x[:1, :, :2, :2], requires_grad=True))


def test_cross_map_lrn2d_bad_input():
    with pytest.raises(ValueError, match="Expected input to be 4D, got 3D"):
        nn.CrossMapLRN2d(3)(pf.ones(2, 3, 4))
    with pytest.raises(ValueError, match="size must be a positive int"):
        nn.CrossMapLRN2d(0)(pf.ones(1, 2, 2, 2))


_NORM_HALF = {
    "layer_norm": lambda F, x, w: F.layer_norm(x, (5,), w(5), w(5)),
    "group_norm": lambda F, x, w: F.group_norm(x, 3, w(6), w(6)),
    "batch_norm": lambda F, x, w: F.batch_norm(x, None, None, w(6), w(6), training=True),
    "instance_norm": lambda F, x, w: F.instance_norm(x),
}


@pytest.mark.parametrize("name", _NORM_HALF)
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_dtypes_match_torch(name, dt):
    # normalized in float32 and rounded once, as torch (a half variance of values near 100 would overflow in
    # float16 and lose bits in bfloat16): within an ulp of torch's (batch and instance norm gather the statistics
    # in another order)
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 6, 5, 5)) * 30 + 100).astype(np.float32)
    ws = [rng.standard_normal(n).astype(np.float32) for n in (6, 6)]

    def run(lib, F):
        it = iter(ws)
        dtype = getattr(lib, dt)
        return _NORM_HALF[name](F, lib.tensor(x).to(dtype), lambda n: lib.tensor(next(it)[:n]).to(dtype))

    ours, theirs = run(pf, F), run(torch, torch.nn.functional)
    assert ours.dtype is getattr(pf, dt)
    o, t = ours.float().numpy(), theirs.float().numpy()
    eps = 2.0**-10 if dt == "float16" else 2.0**-7
    np.testing.assert_allclose(o, t, rtol=eps, atol=eps * np.abs(t).max())
    if name in ("layer_norm", "group_norm"):  # one rounding of a float32 result: torch's bits but for rare ties
        assert np.mean(o == t) > 0.99


def test_native_norms_return_torchs_statistics():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 4))
    w, b = rng.standard_normal(6), rng.standard_normal(6)
    wl, bl = rng.standard_normal(4), rng.standard_normal(4)
    T = torch.from_numpy
    cases = [
        (lambda L, t: L.native_layer_norm(t(x), [4], t(wl), t(bl), 1e-5)),
        (lambda L, t: L.native_layer_norm(t(x), [6, 4], None, None, 1e-5)),
        (lambda L, t: L.native_group_norm(t(x), t(w), t(b), 2, 6, 4, 3, 1e-5)),
        (
            lambda L, t: L.native_batch_norm(
                t(x), t(w), t(b), L.zeros(6, dtype=L.float64), L.ones(6, dtype=L.float64), True, 0.1, 1e-5
            )
        ),  # fmt: skip
        (
            lambda L, t: L.native_batch_norm(
                t(x), None, None, L.zeros(6, dtype=L.float64), L.ones(6, dtype=L.float64), False, 0.1, 1e-5
            )
        ),  # fmt: skip
    ]
    for case in cases:
        want = case(torch, T)
        got = case(pf, pf.tensor)
        assert len(got) == 3
        for g, t in zip(got, want, strict=True):
            assert tuple(g.shape) == tuple(t.shape)
            np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=1e-10, atol=1e-12)
    # group norm's statistics carry gradients to the input, as torch's
    xt, xp = T(x).requires_grad_(), pf.tensor(x, requires_grad=True)
    cots = [rng.standard_normal(s) for s in ((2, 6, 4), (2, 3), (2, 3))]
    outs_t = torch.native_group_norm(xt, None, None, 2, 6, 4, 3, 1e-5)
    outs_p = pf.native_group_norm(xp, None, None, 2, 6, 4, 3, 1e-5)
    sum((r * T(c)).sum() for r, c in zip(outs_t, cots, strict=True)).backward()
    sum((r * pf.tensor(c)).sum() for r, c in zip(outs_p, cots, strict=True)).backward()
    np.testing.assert_allclose(xp.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert not pf.native_layer_norm(xp, [4], None, None, 1e-5)[1].requires_grad
    with pytest.raises(ValueError, match="N=2, C=5"):
        pf.native_group_norm(xp, None, None, 2, 5, 4, 1, 1e-5)


@pytest.mark.parametrize("dtype, tol", [("float32", 1e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("params", ["none", "weight", "both"])
def test_layer_norm_under_no_grad_matches_torch_and_autograd_path(dtype, tol, params):
    # a dense input over its last dim outside autograd is one C call: torch's values, the recording path's values
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 5, 8)).astype(dtype)
    ps = [rng.standard_normal(8).astype(dtype) for _ in range({"none": 0, "weight": 1, "both": 2}[params])]
    ps += [None] * (2 - len(ps))
    ref = TF.layer_norm(torch.from_numpy(x), (8,), *(None if p is None else torch.from_numpy(p) for p in ps))
    for shape in (8, (8,), [8], pf.Size([8])):
        with pf.no_grad():
            got = F.layer_norm(pf.tensor(x), shape, *(None if p is None else pf.tensor(p) for p in ps))
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=tol, atol=tol)
    rec = F.layer_norm(pf.tensor(x, requires_grad=True), (8,), *(None if p is None else pf.tensor(p) for p in ps))
    np.testing.assert_allclose(rec.detach().numpy(), ref.numpy(), rtol=tol, atol=tol)
    with pf.no_grad():  # a strided input and a wrong shape keep the general path and its checks
        st = F.layer_norm(pf.tensor(x).transpose(0, 1), (8,), *(None if p is None else pf.tensor(p) for p in ps))
        np.testing.assert_allclose(st.numpy(), ref.transpose(0, 1).numpy(), rtol=tol, atol=tol)
        with pytest.raises(Exception, match="normalized_shape"):
            F.layer_norm(pf.tensor(x), (5,))
        with pytest.raises(ValueError, match="eps"):
            F.layer_norm(pf.tensor(x), (8,), eps=-1.0)
