"""pyframe.masked against torch.masked: every reduction and normalization with masks that broadcast, keep a
slice whole, or mask a slice out entirely (the identities: -inf, inf, NaN), integer inputs, and float64
gradients (masked-out elements get none)."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(3)
X = RNG.standard_normal((3, 4, 5))
MASKS = {
    "full": RNG.random((3, 4, 5)) > 0.4,
    "broadcast": RNG.random((4, 1)) > 0.3,  # fewer dims than the input
    "slice-out": np.broadcast_to(np.array([True, False, True, True, False])[None, None, :], (3, 4, 5)).copy(),
}
MASKS["slice-out"][1] = False  # a whole slice masked out along every dim


def _both(fn: str, x, mask, *args, **kwargs):
    ours = getattr(pf.masked, fn)(pf.tensor(x), *args, mask=None if mask is None else pf.tensor(mask), **kwargs)
    theirs = getattr(torch.masked, fn)(
        torch.tensor(x), *args, mask=None if mask is None else torch.tensor(mask), **kwargs
    )
    return ours, theirs


def _close(ours, theirs):
    assert ours.dtype == getattr(pf, str(theirs.dtype).replace("torch.", ""))
    tol = 1e-6 if ours.dtype == pf.float32 else 1e-12  # float32 sums: the order of additions differs
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol, equal_nan=True)


REDUCTIONS = [
    ("sum", (1,), {}), ("sum", ((0, 2),), {"keepdim": True}), ("prod", (2,), {}), ("amax", (), {}),
    ("amin", (0,), {"keepdim": True}), ("argmax", (1,), {}), ("argmin", (2,), {}), ("mean", (2,), {}),
    ("median", (1,), {}), ("logsumexp", ((1, 2),), {}), ("norm", (2.0, 1), {}), ("norm", (1.0, None), {}),
    ("norm", (float("-inf"), 2), {}), ("var", (2,), {}), ("std", ((0, 1),), {"correction": 0}),
    ("var", (1,), {"unbiased": False, "keepdim": True}), ("cumsum", (1,), {}), ("cumprod", (2,), {}),
    ("softmax", (2,), {}), ("log_softmax", (0,), {}), ("softmin", (1,), {}), ("normalize", (2.0, 2), {}),
]  # fmt: skip


@pytest.mark.parametrize("mask", [None, *MASKS], ids=str)
@pytest.mark.parametrize(("fn", "args", "kwargs"), REDUCTIONS, ids=[f"{r[0]}-{i}" for i, r in enumerate(REDUCTIONS)])
def test_matches_torch_with_gradients(fn, args, kwargs, mask):
    m = None if mask is None else MASKS[mask]
    _close(*_both(fn, X, m, *args, **kwargs))
    if fn in ("argmax", "argmin"):
        return
    xp, xt = pf.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    mp, mt = (None, None) if m is None else (pf.tensor(m), torch.tensor(m))
    yp, yt = (
        getattr(pf.masked, fn)(xp, *args, mask=mp, **kwargs),
        getattr(torch.masked, fn)(xt, *args, mask=mt, **kwargs),
    )
    cot = RNG.standard_normal(tuple(yt.shape))
    finite = np.isfinite(yt.detach().numpy())  # -inf/NaN results (fully masked slices) carry no gradient to compare
    (gp,) = pf.autograd.grad(yp, xp, pf.tensor(np.where(finite, cot, 0.0)))
    (gt,) = torch.autograd.grad(yt, xt, torch.tensor(np.where(finite, cot, 0.0)))
    np.testing.assert_allclose(gp.numpy(), gt.numpy(), rtol=1e-10, atol=1e-12, equal_nan=True)


def test_logaddexp_and_integer_inputs():
    a, b = RNG.standard_normal(6), RNG.standard_normal(6)
    ma, mb = np.array([1, 0, 1, 0, 1, 1], bool), np.array([1, 1, 0, 0, 1, 0], bool)
    ours = pf.masked.logaddexp(pf.tensor(a), pf.tensor(b), input_mask=pf.tensor(ma), other_mask=pf.tensor(mb))
    theirs = torch.masked.logaddexp(torch.tensor(a), torch.tensor(b), input_mask=torch.tensor(ma),
                                    other_mask=torch.tensor(mb))  # fmt: skip
    _close(ours, theirs)
    xi = RNG.integers(-5, 5, (4, 6))
    mi = RNG.random((4, 6)) > 0.3
    for fn, args in (("sum", (1,)), ("prod", (0,)), ("amax", (1,)), ("amin", (0,)), ("argmax", (1,)), ("var", (1,))):
        _close(*_both(fn, xi, mi, *args))
    with pytest.raises(ValueError, match="floating point"):
        pf.masked.mean(pf.tensor(xi), 1, mask=pf.tensor(mi))
    with pytest.raises(ValueError, match="fully masked out rows"):
        pf.masked.median(pf.tensor(xi), 1, mask=pf.zeros(4, 6, dtype=pf.bool))
    with pytest.raises(IndexError, match="dimensionality higher"):
        pf.masked.sum(pf.tensor(X[0]), mask=pf.tensor(MASKS["full"]))
    with pytest.raises(IndexError, match="Dimension out of range"):
        pf.masked.sum(pf.tensor(X), 3, mask=pf.tensor(MASKS["full"]))
