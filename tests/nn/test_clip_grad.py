"""nn.utils: clip_grad_norm_ against torch (every norm type, edge cases), parameters_to_vector and back."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe
import pyframe.nn as nn
from tests._helpers import arr
from tests._oracle import needs_torch, torch


@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_matches_torch(norm_type, max_norm):
    rng = np.random.default_rng(2)
    grads = [rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4,), (2, 2, 2))]
    results = []
    for lib, clip in ((torch, torch.nn.utils.clip_grad_norm_), (pyframe, nn.utils.clip_grad_norm_)):
        params = []
        for g in grads:
            p = lib.zeros(g.shape).requires_grad_()
            p.grad = lib.from_numpy(g.copy())
            params.append(p)
        params.append(lib.zeros(2).requires_grad_())  # no grad: skipped
        total = clip(params, max_norm, norm_type=norm_type)
        results.append((float(total), [arr(p.grad) for p in params[:-1]]))
    assert results[1][0] == pytest.approx(results[0][0], rel=1e-5)
    for a, b in zip(results[0][1], results[1][1], strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-7)


def test_clip_grad_edge_cases():
    p = nn.Parameter(pyframe.zeros(3))
    assert float(nn.utils.clip_grad_norm_([p], 1.0)) == 0.0
    p.grad = pyframe.tensor([3.0, 4.0, 0.0])
    total = nn.utils.clip_grad_norm_(p, 1.0)
    assert float(total) == pytest.approx(5.0)
    np.testing.assert_allclose(arr(p.grad), [0.6, 0.8, 0.0], rtol=1e-5)
    p.grad = pyframe.tensor([float("nan"), 1.0, 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
    p.grad = pyframe.tensor([-3.0, 0.5, 2.0])
    nn.utils.clip_grad_value_([p], 1.0)
    assert p.grad.tolist() == [-1.0, 0.5, 1.0]


def test_parameters_to_vector_and_back():
    m = nn.Linear(3, 2)
    vec = nn.utils.parameters_to_vector(m.parameters())
    assert vec.shape == (8,)
    np.testing.assert_array_equal(arr(vec), np.concatenate([arr(m.weight).ravel(), arr(m.bias)]))
    w = m.weight
    new = pyframe.arange(8.0)
    nn.utils.vector_to_parameters(new, m.parameters())
    assert m.weight is w and m.weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and m.bias.tolist() == [6.0, 7.0]
    assert m.bias.data_ptr() == new.data_ptr() + 6 * 4  # shares vec's memory, as torch
    with pytest.raises(TypeError):
        nn.utils.vector_to_parameters([1.0], m.parameters())


def test_get_total_norm_and_clip_grads_with_norm_match_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    grads = [rng.standard_normal(s).astype(np.float32) for s in ((3,), (2, 4), (5,))]
    for norm_type in (2.0, 1.0, float("inf"), 3.0):
        ps = [pyframe.nn.Parameter(pyframe.zeros(*g.shape)) for g in grads]
        ts = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
        for p, t, g in zip(ps, ts, grads, strict=True):
            p.grad, t.grad = pyframe.tensor(g), torch.tensor(g)
        total = pyframe.nn.utils.get_total_norm([p.grad for p in ps], norm_type)
        ttotal = torch.nn.utils.get_total_norm([t.grad for t in ts], norm_type)
        np.testing.assert_allclose(total.item(), ttotal.item(), rtol=1e-5)
        pyframe.nn.utils.clip_grads_with_norm_(ps, 0.7, total)
        torch.nn.utils.clip_grads_with_norm_(ts, 0.7, ttotal)
        for p, t in zip(ps, ts, strict=True):
            np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-7)
    assert pyframe.nn.utils.get_total_norm([]).item() == 0.0
    with pytest.raises(RuntimeError, match="non-finite"):
        pyframe.nn.utils.get_total_norm([pyframe.tensor([float("nan")])], error_if_nonfinite=True)
    with pytest.raises(TypeError, match="total_norm must be a Tensor"):
        pyframe.nn.utils.clip_grads_with_norm_(ps, 1.0, 2.0)


def test_clip_grad_norm_deprecated_name_and_empty_generator_warn():
    p = pyframe.nn.Parameter(pyframe.ones(4))
    p.grad = pyframe.full((4,), 2.0)
    with pytest.warns(FutureWarning, match="clip_grad_norm` is now deprecated"):
        total = pyframe.nn.utils.clip_grad_norm([p], 1.0)
    assert abs(total.item() - 4.0) < 1e-6 and abs(p.grad.norm().item() - 1.0) < 1e-5
    with pytest.warns(UserWarning, match="empty generator"):
        pyframe.nn.utils.clip_grad_norm_((q for q in []), 1.0)


@needs_torch
@pytest.mark.parametrize(
    "case", ["large", "inf", "nan", "mixed", "strided", "float64", "empty"]
)  # fmt: skip
def test_total_two_norm_fast_path_and_its_fallbacks_match_torch(case):
    # the 2-norm of dense same-dtype gradients is one dot product each; inf or NaN gradients, mixed dtypes and
    # strided gradients take the general path; all give torch's norm and clipped gradients
    rng = np.random.default_rng(7)
    grads = [rng.standard_normal(s).astype(np.float32) for s in ((40, 30), (17,), (3, 1, 5))]
    if case == "large":
        grads.append(rng.standard_normal(100_003).astype(np.float32))
    elif case == "inf":
        grads[1][3] = np.inf
    elif case == "nan":
        grads[2][0, 0, 1] = np.nan
    elif case == "mixed":
        grads[1] = grads[1].astype(np.float64)
    elif case == "float64":
        grads = [g.astype(np.float64) for g in grads]
    elif case == "empty":
        grads.append(np.zeros((0, 4), np.float32))
    results = []
    for lib in (torch, pyframe):
        params = []
        for g in grads:
            p = lib.zeros(g.shape, dtype=getattr(lib, str(g.dtype))).requires_grad_()
            rev = tuple(range(g.ndim))[::-1]
            p.grad = lib.from_numpy(g.copy()) if case != "strided" else lib.from_numpy(g.T.copy()).permute(rev)
            params.append(p)
        total = lib.nn.utils.clip_grad_norm_(params, 1.0)
        results.append((float(total), [arr(p.grad) for p in params]))
    if math.isnan(results[0][0]):
        assert math.isnan(results[1][0])
    else:
        assert results[1][0] == pytest.approx(results[0][0], rel=1e-6)
    for a, b in zip(results[0][1], results[1][1], strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-9)
