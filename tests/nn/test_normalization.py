"""Padding modules, Bilinear, Unfold/Fold, InstanceNorm, RMSNorm, adaptive max pools,
AlphaDropout and gumbel_softmax against torch (float64, forward and gradients) and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F

torch = pytest.importorskip("torch")


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def twin(build):
    torch.manual_seed(0)
    t, p = build(torch.nn).double(), build(nn).double()
    assert repr(t) == repr(p)
    tsd, psd = t.state_dict(), p.state_dict()
    assert list(tsd) == list(psd)
    with pf.no_grad():
        for k in tsd:
            if tsd[k].dtype.is_floating_point:
                psd[k].copy_(pf.tensor(tsd[k].numpy() + rand(*tsd[k].shape, seed=3) * 0.1))
                tsd[k].copy_(torch.tensor(psd[k].numpy()))
    return t, p


def run(build, *shapes, train=True):
    t, p = twin(build)
    t.train(train)
    p.train(train)
    xs = [rand(*s, seed=i) for i, s in enumerate(shapes)]
    ps = [pf.tensor(x, requires_grad=True) for x in xs]
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    po, to = p(*ps), t(*ts)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-9, atol=1e-10)
    cot = rand(*to.shape, seed=9)
    po.backward(pf.tensor(cot))
    to.backward(torch.tensor(cot))
    for a, b in zip(ps, ts, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-10)
    for a, b in zip(p.parameters(), t.parameters(), strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-10)
    for (k, a), (_, b) in zip(p.state_dict().items(), t.state_dict().items(), strict=True):
        np.testing.assert_allclose(np.asarray(a.numpy(), dtype=float), b.numpy().astype(float), rtol=1e-9,
                                   atol=1e-12, err_msg=k)  # fmt: skip


CASES = {
    "zeropad2d": (lambda n: n.ZeroPad2d((1, 2, 0, 3)), [(2, 3, 4, 5)]),
    "constpad1d": (lambda n: n.ConstantPad1d(2, 3.5), [(2, 3, 4)]),
    "constpad3d": (lambda n: n.ConstantPad3d((1, 0, 0, 1, 2, 0), -1.0), [(1, 2, 3, 3, 3)]),
    "reflect2d": (lambda n: n.ReflectionPad2d(2), [(2, 3, 4, 5)]),
    "reflect1d": (lambda n: n.ReflectionPad1d((3, 1)), [(2, 5)]),
    "replicate2d": (lambda n: n.ReplicationPad2d((1, 0, 2, 1)), [(1, 3, 4, 5)]),
    "circular1d": (lambda n: n.CircularPad1d(2), [(2, 3, 4)]),
    "bilinear": (lambda n: n.Bilinear(3, 4, 5), [(6, 3), (6, 4)]),
    "unfold": (lambda n: n.Unfold(2, padding=1, stride=2), [(2, 3, 5, 4)]),
    "fold": (lambda n: n.Fold((4, 5), 2), [(2, 12, 12)]),
    "instnorm1d": (lambda n: n.InstanceNorm1d(3), [(2, 3, 7)]),
    "instnorm2d_affine_stats": (lambda n: n.InstanceNorm2d(3, affine=True, track_running_stats=True), [(2, 3, 4, 5)]),
    "instnorm2d_unbatched": (lambda n: n.InstanceNorm2d(3, affine=True), [(3, 4, 5)]),
    "rmsnorm": (lambda n: n.RMSNorm(6), [(2, 4, 6)]),
    "rmsnorm_2d_eps": (lambda n: n.RMSNorm((4, 6), eps=1e-3), [(2, 4, 6)]),
    "adaptive_max2d": (lambda n: n.AdaptiveMaxPool2d((3, 2)), [(2, 3, 7, 5)]),
    "adaptive_max2d_even": (lambda n: n.AdaptiveMaxPool2d(2), [(2, 3, 4, 6)]),
    "adaptive_max1d": (lambda n: n.AdaptiveMaxPool1d(3), [(2, 3, 8)]),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_layer_matches_torch(name):
    build, shapes = CASES[name]
    run(build, *shapes)


def test_instance_norm_eval_uses_running_stats():
    build = lambda n: n.InstanceNorm1d(3, affine=True, track_running_stats=True)  # noqa: E731
    t, p = twin(build)
    x = rand(4, 3, 6)
    for _ in range(2):
        t(torch.tensor(x))
        p(pf.tensor(x))
    t.eval()
    p.eval()
    np.testing.assert_allclose(p(pf.tensor(x * 2)).detach().numpy(), t(torch.tensor(x * 2)).detach().numpy(),
                               rtol=1e-9, atol=1e-12)  # fmt: skip


def test_adaptive_max_pool_indices_and_float32_rms():
    x = rand(2, 3, 4, 6)
    v, i = F.adaptive_max_pool2d(pf.tensor(x), (2, 3), return_indices=True)
    tv, ti = torch.nn.functional.adaptive_max_pool2d(torch.tensor(x), (2, 3), return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    x32 = rand(3, 8).astype(np.float32)
    np.testing.assert_allclose(F.rms_norm(pf.tensor(x32), (8,)).numpy(),
                               torch.nn.functional.rms_norm(torch.tensor(x32), (8,)).numpy(), rtol=1e-6)  # fmt: skip


def test_alpha_dropout_keeps_moments():
    pf.manual_seed(0)
    x = pf.randn(200_000, dtype=pf.float64)
    y = nn.AlphaDropout(0.3)(x).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1.0) < 0.02
    assert nn.AlphaDropout(0.3).eval()(x) is x


def test_gumbel_softmax():
    pf.manual_seed(0)
    logits = pf.tensor(np.log(np.array([[0.1, 0.6, 0.3]] * 4000)), requires_grad=True)
    y = F.gumbel_softmax(logits, tau=0.5, hard=True)
    counts = y.detach().numpy().sum(0) / 4000
    assert np.allclose(y.detach().numpy().sum(1), 1.0) and set(np.unique(y.detach().numpy())) <= {0.0, 1.0}
    np.testing.assert_allclose(counts, [0.1, 0.6, 0.3], atol=0.03)
    y.sum().backward()  # straight-through: gradient of the soft sample
    assert logits.grad is not None
    soft = F.gumbel_softmax(logits, tau=2.0)
    np.testing.assert_allclose(soft.detach().numpy().sum(-1), 1.0)


def test_bad_input():
    with pytest.raises(ValueError, match="tuple of 4 ints"):
        nn.ZeroPad2d((1, 2))
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.InstanceNorm2d(3)(pf.randn(3, 4))
    with pytest.raises(ValueError, match="normalized_shape"):
        F.rms_norm(pf.randn(2, 5), (4,))
    with pytest.raises(NotImplementedError, match="return_indices"):
        F.adaptive_max_pool2d(pf.randn(1, 1, 5, 5), 3, return_indices=True)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.alpha_dropout(pf.randn(3), 1.5, True)
    with pytest.raises(ValueError, match="tau"):
        F.gumbel_softmax(pf.randn(3), tau=0.0)
