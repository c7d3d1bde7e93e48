"""lgamma, digamma, erfinv, i0 and torch.special's i0e, i1, i1e, ndtr, log_ndtr, entr, xlog1py (pyframe/ops/special.py,
core_c/src/special.c): values against torch over both branches of each approximation, float32 and float64, and
float64 gradients (and digamma's poles, erfinv's ends)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe as pf

torch = pytest.importorskip("torch")

X = np.concatenate([np.linspace(-12, 12, 97), [0.0, 1e-3, 7.99, 8.0, 8.01, 30.0]])
CASES = [
    ("lgamma", X), ("digamma", X), ("erfinv", np.linspace(-0.999, 0.999, 41)), ("i0", X),
    ("special.i0e", X), ("special.i1", X), ("special.i1e", X), ("special.ndtr", X), ("special.log_ndtr", X),
    ("special.entr", np.abs(X)), ("special.spherical_bessel_j0", X),
]  # fmt: skip


def _get(lib, name):
    for part in name.split("."):
        lib = getattr(lib, part)
    return lib


@pytest.mark.parametrize(("name", "x"), CASES, ids=[c[0] for c in CASES])
def test_values_and_gradients_match_torch(name, x):
    for pdt, rtol, atol in ((pf.float64, 1e-12, 1e-12), (pf.float32, 2e-6, 1e-6)):
        xs = x.astype(np.float64 if pdt is pf.float64 else np.float32)
        ours = _get(pf, name)(pf.tensor(xs)).numpy()
        theirs = _get(torch, name)(torch.tensor(xs)).numpy()
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True, err_msg=f"{name} {pdt}")
    if name in ("special.log_ndtr", "special.entr", "special.spherical_bessel_j0"):
        return  # compositions: their gradients are their ops'
    keep = np.abs(x - np.round(x)) > 1e-3 if name in ("lgamma", "digamma") else np.ones(len(x), bool)
    p = pf.tensor(x[keep], requires_grad=True)
    t = torch.tensor(x[keep], requires_grad=True)
    (gp,) = pf.autograd.grad(_get(pf, name)(p).sum(), p)
    (gt,) = torch.autograd.grad(_get(torch, name)(t).sum(), t)
    np.testing.assert_allclose(gp.numpy(), gt.numpy(), rtol=1e-10, atol=1e-12, err_msg=f"{name} gradient")


def test_poles_and_ends():
    assert pf.digamma(pf.tensor([0.0, -0.0, -2.0])).tolist()[:2] == [-math.inf, math.inf]
    assert math.isnan(pf.digamma(pf.tensor([-2.0])).item())
    assert pf.erfinv(pf.tensor([-1.0, 1.0])).tolist() == [-math.inf, math.inf]
    assert math.isnan(pf.erfinv(pf.tensor([1.5])).item())
    assert pf.lgamma(pf.tensor([1.0, 2.0])).tolist() == [0.0, 0.0]
    t = pf.tensor([0.5, 1.5])
    assert t.lgamma_() is t
