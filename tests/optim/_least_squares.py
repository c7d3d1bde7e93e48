"""The optimizer tests' problem: least squares, loss = 0.5 * ||A W + b - Y||^2 / N over the weight W [4, 3] and
bias b [3], with its analytic gradients, the same starting point in pyframe and torch, and both optimizers
stepped side by side."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe

torch = pytest.importorskip("torch")

TOL = {"float32": 1e-6, "float64": 1e-12}


STEPS = 10


# least squares: loss = 0.5 * ||A W + b - Y||^2 / N over the weight W [4, 3] and bias b [3]
_rng = np.random.default_rng(7)


A = _rng.standard_normal((6, 4))


Y = _rng.standard_normal((6, 3))


W0 = _rng.standard_normal((4, 3))


B0 = _rng.standard_normal(3)


def grads_of(w: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The loss's gradient, in the parameters' own dtype (both frameworks call this)."""
    a, y = A.astype(w.dtype), Y.astype(w.dtype)
    r = (a @ w + b - y) / np.asarray(len(a), dtype=w.dtype)
    return a.T @ r, r.sum(0)


def make_params(dtype: str):
    """The same starting point as pyframe leaves and torch leaves."""
    pf = [pyframe.tensor(x.astype(dtype), requires_grad=True) for x in (W0, B0)]
    th = [torch.tensor(x.astype(dtype), requires_grad=True) for x in (W0, B0)]
    return pf, th


def set_grads(pf_params, th_params) -> None:
    for params, mod in ((pf_params, pyframe), (th_params, torch)):
        w, b = (p.detach().numpy().copy() for p in params)
        for p, g in zip(params, grads_of(w, b), strict=True):
            p.grad = mod.tensor(g)


def assert_same(pf_params, th_params, dtype: str, what: str = "") -> None:
    tol = TOL[dtype]
    for i, (p, q) in enumerate(zip(pf_params, th_params, strict=True)):
        assert p.dtype == getattr(pyframe, dtype)
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=tol, atol=tol, err_msg=f"{what} {i}")


def run_both(pf_opt, th_opt, pf_params, th_params, dtype: str, steps: int = STEPS) -> None:
    for s in range(steps):
        set_grads(pf_params, th_params)
        pf_opt.step()
        th_opt.step()
        assert_same(pf_params, th_params, dtype, f"step {s}")
