"""linear_cross_entropy and LinearCrossEntropyLoss against torch: the direct form, the chunked form (every chunk
size, ignored rows, class weights, the three reductions, unbatched input) and the module."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F

torch = pytest.importorskip("torch")


def _run(lib, x, w, t, b=None, cw=None, **kw):
    xs, ws = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
    bs = lib.tensor(b, requires_grad=True) if b is not None else None
    cws = lib.tensor(cw) if cw is not None else None
    out = lib.nn.functional.linear_cross_entropy(xs, ws, lib.tensor(t), linear_bias=bs, weight=cws, **kw)
    cot = np.random.default_rng(1).standard_normal(tuple(out.shape))
    grads = lib.autograd.grad(out, [v for v in (xs, ws, bs) if v is not None], lib.tensor(cot))
    return [out.detach().numpy()] + [g.numpy() for g in grads]


def _options(lib, **kw):
    return lib.nn.LinearCrossEntropyOptions(**kw)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("chunk", [None, 1, 3, 100])
def test_chunked_matches_torchs_direct_form(reduction, chunk):
    rng = np.random.default_rng(0)
    x, w, b = rng.standard_normal((7, 5)), rng.standard_normal((11, 5)), rng.standard_normal(11)
    t = rng.integers(0, 11, 7)
    t[2] = -100  # ignored
    cw = rng.uniform(0.5, 2.0, 11)
    want = _run(torch, x, w, t, b, cw, reduction=reduction)
    opts = {"batch_chunk_size": chunk, "chunking_method": None} if chunk else {}
    got = _run(pf, x, w, t, b, cw, reduction=reduction, options=_options(pf, **opts))
    for g, t_ in zip(got, want, strict=True):
        np.testing.assert_allclose(g, t_, rtol=1e-10, atol=1e-12)
    got = _run(pf, x, w, t, b, cw, reduction=reduction)  # the direct form
    for g, t_ in zip(got, want, strict=True):
        np.testing.assert_allclose(g, t_, rtol=1e-10, atol=1e-12)


def test_unbatched_k_dimensional_and_probability_targets():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal(4), rng.standard_normal((6, 4))
    for opts in (None, _options(pf, batch_chunk_size=1, chunking_method=None)):
        got = _run(pf, x, w, np.int64(3), options=opts)
        for g, t_ in zip(got, _run(torch, x, w, np.int64(3)), strict=True):
            np.testing.assert_allclose(g, t_, rtol=1e-10, atol=1e-12)
    xk, wk, tk = rng.standard_normal((3, 4)), rng.standard_normal((5, 2, 4)), rng.integers(0, 5, (3, 2))
    for g, t_ in zip(_run(pf, xk, wk, tk), _run(torch, xk, wk, tk), strict=True):
        np.testing.assert_allclose(g, t_, rtol=1e-10, atol=1e-12)
    probs = rng.dirichlet(np.ones(6), 3)
    xb = rng.standard_normal((3, 4))
    for g, t_ in zip(_run(pf, xb, w, probs, label_smoothing=0.1), _run(torch, xb, w, probs, label_smoothing=0.1),
                     strict=True):  # fmt: skip
        np.testing.assert_allclose(g, t_, rtol=1e-10, atol=1e-12)
    with pytest.warns(UserWarning, match="options ignored"):
        F.linear_cross_entropy(pf.tensor(xb), pf.tensor(w), pf.tensor(probs), options=_options(pf))


def test_chunked_backward_twice_and_errors():
    x, w = pf.randn(6, 3, requires_grad=True), pf.randn(8, 3, requires_grad=True)
    t = pf.tensor([0, 1, 2, 3, 4, 5])
    loss = F.linear_cross_entropy(x, w, t, options=_options(pf, batch_chunk_size=2, chunking_method=None))
    assert loss.grad_fn is not None and loss.shape == ()
    (g1,) = pf.autograd.grad(loss, x, retain_graph=True)
    (g2,) = pf.autograd.grad(loss, x)
    assert g1.tolist() == g2.tolist()
    with pytest.raises(IndexError, match=r"target values must be in \[0, 7\]"):
        F.linear_cross_entropy(x, w, pf.tensor([0, 1, 2, 3, 4, 8]), options=_options(pf))
    with pytest.raises(RuntimeError, match="in_features"):
        F.linear_cross_entropy(x, pf.randn(8, 4), t)
    with pytest.raises(RuntimeError, match="ignore_index cannot be specified"):
        F.linear_cross_entropy(x, w, pf.rand(6, 8), ignore_index=0)
    with pytest.raises(ValueError, match="acc_policy"):
        _options(pf, acc_policy="fast")
    with pytest.raises(ValueError, match="chunking_method"):
        _options(pf, chunking_method="square")
    with pytest.raises(ValueError, match="batch_chunk_size"):
        _options(pf, batch_chunk_size=0)


def test_chunk_sizes_follow_torchs_aspect_ratio_rule():
    for rows, inf, classes in ((1024, 64, 32000), (4096, 128, 1024), (7, 5, 11), (3, 100, 2)):
        for method in ("aspect_ratio", "aspect_ratio:2", "aspect_ratio:4"):
            want = torch.nn.LinearCrossEntropyOptions()._compute_batch_chunk_size(rows, inf, classes, method)
            got = pf.nn.LinearCrossEntropyOptions(chunking_method=method).chunk_rows(rows, inf, classes, pf.float32)
            assert got == max(1, want), (rows, inf, classes, method)
    assert pf.nn.LinearCrossEntropyOptions(chunking_method=None).chunk_rows(8, 8, 8, pf.float32) == 8
    with pytest.raises(ValueError, match="different chunk sizes"):
        pf.nn.LinearCrossEntropyOptions(batch_chunk_size=3, chunking_method="aspect_ratio").chunk_rows(
            64, 8, 64, pf.float32)  # fmt: skip


def test_module_matches_torch():
    torch.manual_seed(0)
    tm = torch.nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True, dtype=torch.float64)
    pm = nn.LinearCrossEntropyLoss(4, 5, out_features=(2,), bias=True, dtype=pf.float64)
    pm.load_state_dict({k: pf.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x, t = np.random.default_rng(3).standard_normal((3, 4)), np.random.default_rng(4).integers(0, 5, (3, 2))
    np.testing.assert_allclose(pm(pf.tensor(x), pf.tensor(t)).item(), tm(torch.tensor(x), torch.tensor(t)).item(),
                               rtol=1e-12)  # fmt: skip
    assert repr(pm).startswith("LinearCrossEntropyLoss(\n  in_features=4, num_classes=5, out_features=(2,), bias=True")
    with pytest.raises(RuntimeError, match="weight shape"):
        nn.LinearCrossEntropyLoss(4, 5, weight=pf.ones(4))
