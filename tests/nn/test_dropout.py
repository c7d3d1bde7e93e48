"""Dropout in every form (dropout, channel dropout 1d/2d/3d, alpha dropout; functional and modules): seeded
and reproducible, the keep ratio and scaling, gradients, eval mode and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from tests._oracle import f64, leaf, randn
from tests._tables import module_table_test, reprs_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def arr(t) -> np.ndarray:
    return t.detach().numpy()


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


def test_dropout_train_and_eval():
    pf.manual_seed(7)
    drop = nn.Dropout(0.25)
    x = pf.ones(200, 50, requires_grad=True)
    y = drop(x)
    kept = arr(y) != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(arr(y)[kept], 1 / 0.75, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), np.where(kept, 1 / 0.75, 0.0), rtol=1e-6)
    drop.eval()
    assert drop(x) is x or np.array_equal(arr(drop(x)), arr(x))
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


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


@pytest.mark.parametrize(
    ("fn", "shape", "lead"),
    [("dropout2d", (6, 40), 2), ("dropout2d", (2, 3, 2, 2, 2), 2), ("dropout3d", (6, 4, 5), 1), ("dropout3d", (8,), 1)],
)
def test_channel_dropout_of_other_ranks_warns_and_drops_as_torch(fn, shape, lead):
    # torch: a rank other than its (unbatched, batched) pair is deprecated; dropout2d drops per (dim 0, dim 1)
    # index (a 2-d input element by element), dropout3d takes the input as unbatched (per index of dim 0)
    pf.manual_seed(0)
    with pytest.warns(UserWarning, match=f"{len(shape)}-D input to {fn}, which is deprecated"):
        y = getattr(F, fn)(pf.ones(*shape), 0.5).numpy()
    groups = y.reshape(int(np.prod(shape[:lead])), -1)
    assert np.all((groups == 0).all(-1) | (groups == 2).all(-1))
    assert 0 < (groups[:, 0] == 0).sum() < len(groups)


def test_alpha_dropout_keeps_moments():
    pf.manual_seed(0)
    x = pf.randn(200_000, dtype=pf.float64)
    y = nn.AlphaDropout(0.3)(x).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02
    assert nn.AlphaDropout(0.3).eval()(x) is x


def test_channel_and_alpha_dropout_bad_input():
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout2d(pf.randn(1, 2, 3, 3), 2.0)
    with pytest.warns(UserWarning, match="1-D input to dropout2d"), pytest.raises(RuntimeError, match="at least 2"):
        F.dropout2d(pf.randn(3))
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.alpha_dropout(pf.randn(3), 1.5, True)


LAYERS = {
    "dropout_eval": (lambda n: n.Dropout(0.3), [randn(3, 4)], {"train": False}),
    "dropout_p0": (lambda n: n.Dropout(0.0), [randn(3, 4)]),
}  # fmt: skip


test_layer_matches_torch = module_table_test(LAYERS)


test_reprs_match_torch = reprs_test(
    lambda n: n.Dropout(p=0.1, inplace=True),
)


def test_feature_alpha_dropout_drops_whole_channels():
    pf.manual_seed(0)
    x = pf.randn(8, 16, 5, 5, dtype=pf.float64)
    y = F.feature_alpha_dropout(x, 0.5, training=True)
    # per (sample, channel): either the affine map of x (kept) or one constant (dropped)
    p, neg = 0.5, -1.7580993408473766
    a = ((1 - p) * (1 + p * neg**2)) ** -0.5
    b = -a * neg * p
    yv, xv = y.numpy(), x.numpy()
    kept = np.isclose(yv, a * xv + b).all(axis=(2, 3))
    dropped = np.isclose(yv, a * neg + b).all(axis=(2, 3))
    assert (kept ^ dropped).all() and kept.any() and dropped.any()
    assert F.feature_alpha_dropout(x, 0.5, training=False) is x
    assert F.feature_alpha_dropout(pf.ones(3), 0.5) is not None  # eval (the default): any rank is the identity
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        F.feature_alpha_dropout(pf.ones(3), 0.5, training=True)
    z = x.clone()
    assert F.feature_alpha_dropout(z, 1.0, training=True, inplace=True) is z and z.abs().sum().item() == 0.0
    m = nn.FeatureAlphaDropout(0.2)
    assert repr(m) == "FeatureAlphaDropout(p=0.2, inplace=False)"
    assert m.eval()(x) is x


@pytest.mark.parametrize("dtype", [pf.float32, pf.float64])
@pytest.mark.parametrize("n", [1, 63, 4096 * 3 + 17, 70_001])
def test_fused_dropout_equals_the_composition_with_bernoullis_mask(restore_seed, dtype, n):
    # contiguous float tensors take one C pass each way; the mask is bernoulli_'s draw into bool for the same
    # generator state, and values and gradients are the composition's exactly (where(keep, x * scale, 0))
    p = 0.3
    x = pf.randn(n, dtype=dtype).requires_grad_()
    g = pf.randn(n, dtype=dtype)
    pf.manual_seed(11)
    y = F.dropout(x, p)
    after = pf.rand(1).item()  # the generator advanced by n counters, as bernoulli_ advances it
    (gx,) = pf.autograd.grad(y, x, g)
    pf.manual_seed(11)
    keep = pf.empty(n, dtype=pf.bool)
    keep.bernoulli_(1 - p)
    assert pf.rand(1).item() == after
    ref = pf.where(keep, x.detach() * (1 / (1 - p)), 0.0)
    assert y.grad_fn.name() == "MulBackward0"
    np.testing.assert_array_equal(arr(y), arr(ref))
    np.testing.assert_array_equal(arr(gx), arr(pf.where(keep, g, 0.0) * (1 / (1 - p))))
    assert 0.25 < keep.float().mean().item() < 0.95 if n > 1000 else True


def test_fused_dropout_double_backward_other_layouts_and_threads(restore_seed):
    # create_graph differentiates the composition with the kept mask; a strided input takes the composition; the
    # draw does not depend on the thread count
    x = pf.randn(50, 40, dtype=pf.float64).requires_grad_()
    pf.manual_seed(3)
    y = F.dropout(x, 0.5)
    (gx,) = pf.autograd.grad((y * y).sum(), x, create_graph=True)
    (ggx,) = pf.autograd.grad(gx.sum(), x)
    keep = arr(y) != 0
    np.testing.assert_allclose(arr(gx), 2 * arr(y) * 2 * keep, rtol=1e-12)
    np.testing.assert_allclose(arr(ggx), 8 * keep, rtol=1e-12)  # d(sum 8 keep x)/dx
    pf.manual_seed(3)
    yt = F.dropout(x.detach().t(), 0.5)  # strided: bernoulli_ into bool and where, the same mask order
    pf.manual_seed(3)
    keep_t = pf.empty(40, 50, dtype=pf.bool).bernoulli_(0.5)
    np.testing.assert_array_equal(arr(yt) != 0, arr(keep_t) & (arr(x.t()) != 0))
    big = pf.randn(300_000)
    masks = []
    for threads in (1, 2):
        old = pf.get_num_threads()
        pf.set_num_threads(threads)
        try:
            pf.manual_seed(9)
            masks.append(arr(F.dropout(big, 0.2)))
        finally:
            pf.set_num_threads(old)
    np.testing.assert_array_equal(masks[0], masks[1])


def test_fused_dropout_core_checks():
    from pyframe._backend import check, lib

    x, y, keep = pf.randn(8), pf.empty(8), pf.empty(8, dtype=pf.bool)
    for p, match in ((1.0, "p must be in"), (-0.1, "p must be in"), (float("nan"), "p must be in")):
        with pytest.raises(ValueError, match=match):
            check(lib.pf_dropout(x.dtype.code, x._ptr, y._ptr, keep._ptr, 8, p, 0, 0))
    with pytest.raises(TypeError, match="float32 or float64"):
        check(lib.pf_dropout(pf.int32.code, x._ptr, y._ptr, keep._ptr, 8, 0.5, 0, 0))
    with pytest.raises(ValueError, match="negative element count"):
        check(lib.pf_dropout_backward(x.dtype.code, x._ptr, keep._ptr, y._ptr, -1, 0.5))


@pytest.mark.parametrize("path", [b"avx2", b"portable"])
def test_dropout_mask_is_the_same_on_every_kernel_set(path, restore_gemm, restore_seed):
    # the AVX2 set draws its Philox words 8 lanes at a time, the others 16: the same stream, so the same mask
    if not restore_gemm.pf_cpu_supports(path):
        pytest.skip(f"this CPU has no {path.decode()} kernels")
    x = pf.ones(1000, 37)
    pf.manual_seed(7)
    auto = F.dropout(x, 0.4).numpy()
    assert restore_gemm.pf_gemm_select(path) == 0
    pf.manual_seed(7)
    np.testing.assert_array_equal(F.dropout(x, 0.4).numpy(), auto)
