"""torch.cond and torch._higher_order_ops (while_loop, scan, map, associative_scan), run eagerly: values against
torch's, pytrees, gradients through the loops, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe

hop = pyframe._higher_order_ops
X = (np.arange(6.0).reshape(2, 3) - 1.5).astype(np.float32)


def _both(fn):
    """fn(lib, hop_module) for pyframe and torch, as NumPy pytrees."""
    torch = pytest.importorskip("torch")
    import torch._higher_order_ops as thop

    def as_np(out):
        if isinstance(out, (tuple, list)):
            return [as_np(o) for o in out]
        if isinstance(out, dict):
            return {k: as_np(v) for k, v in out.items()}
        return out.detach().numpy()

    return as_np(fn(pyframe, hop)), as_np(fn(torch, thop))


def _equal(a, b):
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _equal(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _equal(a[k], b[k])
    else:
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize(
    "case",
    [
        lambda M, H: M.cond(M.tensor(X).sum() > 0, lambda a: a.sin(), lambda a: a.cos(), (M.tensor(X),)),
        lambda M, H: M.cond(False, lambda a: (a, a + 1), lambda a: (a - 1, a), [M.tensor(X)]),
        lambda M, H: H.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), (M.tensor(0), M.tensor(X))),
        lambda M, H: H.scan(lambda c, x: (c + x, c * x), M.zeros(3), M.tensor(X)),
        lambda M, H: H.scan(lambda c, x: (c + x, c * x), M.zeros(2), M.tensor(X), dim=1, reverse=True),
        lambda M, H: H.scan(
            lambda c, x: (c * 2, {"s": x["a"] + c, "p": x["b"] - c}),
            M.ones(3),
            {"a": M.tensor(X), "b": M.tensor(X) * 2},
        ),  # fmt: skip
        lambda M, H: H.map(lambda a, b: a * b, M.tensor(X), M.tensor(2.0)),
        lambda M, H: H.map(lambda p: (p[0] + p[1], p[0] * 3), (M.tensor(X), M.tensor(X))),
        lambda M, H: H.associative_scan(lambda a, b: a + b, M.tensor(X), dim=1, combine_mode="generic"),
        lambda M, H: H.associative_scan(
            lambda a, b: a * b, M.tensor(X) + 1, dim=0, reverse=True, combine_mode="generic"
        ),  # fmt: skip
    ],
)
def test_values_match_torch(case):
    _equal(*_both(case))


def test_gradients_flow_through_the_loops():
    w = pyframe.tensor([0.5, -1.0, 2.0], requires_grad=True)
    carry, ys = hop.scan(lambda c, x: (c * w + x, c.sum()), pyframe.zeros(3), pyframe.tensor(X))
    (carry.sum() + ys.sum()).backward()
    # carry = (0 * w + x0) * w + x1 = x0 * w + x1; ys = [0, sum(x0)]: d/dw sum(carry) = x0
    np.testing.assert_allclose(w.grad.numpy(), X[0])
    w.grad = None
    _, a = hop.while_loop(lambda i, a: i < 2, lambda i, a: (i + 1, a * w), (pyframe.tensor(0), pyframe.ones(3)))
    a.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.array([0.5, -1.0, 2.0]))


def test_bad_input_is_refused():
    with pytest.raises(RuntimeError, match="one element"):
        pyframe.cond(pyframe.ones(2) > 0, lambda: 1, lambda: 2)
    with pytest.raises(RuntimeError, match="tuple or list"):
        pyframe.cond(True, lambda a: a, lambda a: a, pyframe.ones(2))
    with pytest.raises(RuntimeError, match="returned 1 values for 2"):
        hop.while_loop(lambda i, a: i < 1, lambda i, a: i + 1, (pyframe.tensor(0), pyframe.ones(1)))
    with pytest.raises(RuntimeError, match="carry.*float32.*float64"):  # as torch: the carry keeps init's dtype
        hop.scan(lambda c, x: (c + x, x), pyframe.zeros(3), pyframe.ones(2, 3, dtype=pyframe.float64))
    with pytest.raises(RuntimeError, match="pair"):
        hop.scan(lambda c, x: c + x, pyframe.zeros(3), pyframe.ones(2, 3))
    with pytest.raises(RuntimeError, match="same size along dim 0"):
        hop.map(lambda p: p, (pyframe.ones(2), pyframe.ones(3)))
    with pytest.raises(ValueError, match="combine_mode"):
        hop.associative_scan(lambda a, b: a + b, pyframe.ones(2), 0, combine_mode="fast")
