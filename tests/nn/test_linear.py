"""Linear, Bilinear and Identity (functional and modules) against torch: values, gradients, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn.functional as F
from tests._oracle import compare, f64, leaf, randn
from tests._tables import module_float64_table_test, module_table_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.mark.parametrize("xshape", [(5, 4), (4,), (2, 3, 4)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_matches_torch(rng, xshape, with_bias):
    arrays = [f64(rng, *xshape), f64(rng, 3, 4)] + ([f64(rng, 3)] if with_bias else [])
    compare(F.linear, TF.linear, *arrays)


def test_linear_float32_and_transposed_input(rng):
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 6), (5, 4), (5,)))
    compare(lambda x, w, b: F.linear(x.T, w, b), lambda x, w, b: TF.linear(x.T, w, b), x.T.copy().T, w, b, rtol=1e-5)
    compare(F.linear, TF.linear, x[:, :4].copy(), w, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("m, k, n", [(1, 700, 30), (3, 5, 2), (40, 50, 40), (20, 650, 2600), (130, 700, 140)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_linear_bias_added_in_the_product_matches_torch(m, k, n, dtype):
    """The bias is the product's starting value (one pass): one row, small, skinny and blocked
    products (K past one block), a strided bias, against torch."""
    rng = np.random.default_rng(m + k)
    x, w = rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((n, k)).astype(dtype)
    b2 = rng.standard_normal((n, 2)).astype(dtype)  # the bias is its first column: stride 2
    tol = 1e-4 if dtype == np.float32 else 1e-10
    compare(lambda x, w, b2: F.linear(x, w, b2[:, 0]), lambda x, w, b2: TF.linear(x, w, b2[:, 0]), x, w, b2,
            rtol=tol, atol=tol)  # fmt: skip


def test_linear_broadcast_bias_and_no_grad(rng):
    compare(F.linear, TF.linear, f64(rng, 2, 4), f64(rng, 3, 4), f64(rng, 1, 3))
    with pf.no_grad():
        out = F.linear(leaf(f64(rng, 2, 4)), leaf(f64(rng, 3, 4)), leaf(f64(rng, 3)))
    assert out.grad_fn is None and not out.requires_grad


def test_linear_bad_input(rng):
    with pytest.raises(ValueError, match=r"\[2, 5\].*\[3, 4\]"):
        F.linear(pf.randn(2, 5), pf.randn(3, 4))
    with pytest.raises(ValueError, match="weight must be 2-d"):
        F.linear(pf.randn(2, 4), pf.randn(4))
    with pytest.raises(TypeError, match="float64"):
        F.linear(pf.randn(2, 4), pf.randn(3, 4, dtype=pf.float64), pf.randn(3))


def test_bilinear_matches_torch(rng):
    compare(F.bilinear, TF.bilinear, f64(rng, 3, 4), f64(rng, 3, 5), f64(rng, 2, 4, 5), f64(rng, 2))


LAYERS = {
    "linear": (lambda n: n.Linear(5, 3), [randn(4, 5)]),
    "linear_3d_nobias": (lambda n: n.Linear(5, 3, bias=False), [randn(2, 4, 5)]),
    "linear_1d_f64": (lambda n: n.Linear(4, 2).double(), [randn(4, dtype=np.float64)]),
    "identity": (lambda n: n.Identity(54, unused=True), [randn(3, 4)]),
}  # fmt: skip


test_layer_matches_torch = module_table_test(LAYERS)


CASES = {
    "bilinear": (lambda n: n.Bilinear(3, 4, 5), [(6, 3), (6, 4)]),
}  # fmt: skip


test_layer_float64_matches_torch = module_float64_table_test(CASES)


@pytest.mark.parametrize("xshape", [(2, 3, 6), (2, 1, 3, 6), (1, 7, 6)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear_dense_nd_under_no_grad_matches_torch_and_autograd_path(rng, xshape, dtype, with_bias):
    # under no_grad a dense N-d float input takes one GEMM into the final shape (no reshapes): same values as
    # torch and as the recording path, a fresh result (not a view), and non-dense inputs still work
    x, w, b = (rng.standard_normal(s).astype(dtype) for s in (xshape, (5, 6), (5,)))
    bb = (b,) if with_bias else ()
    with pf.no_grad():
        out = F.linear(pf.tensor(x), pf.tensor(w), *(pf.tensor(a) for a in bb))
        strided = F.linear(pf.tensor(x).transpose(0, -2), pf.tensor(w), *(pf.tensor(a) for a in bb))
    recorded = F.linear(pf.tensor(x, requires_grad=True), pf.tensor(w), *(pf.tensor(a) for a in bb))
    ref = TF.linear(*(torch.from_numpy(a) for a in (x, w, *bb)))
    tol = 1e-5 if dtype == "float32" else 1e-12
    assert out.shape == tuple(ref.shape) and out.dtype == recorded.dtype and out._base is None
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(out.numpy(), recorded.detach().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(strided.numpy(), ref.transpose(0, -2).numpy(), rtol=tol, atol=tol)
    out.add_(1.0)  # the result owns its memory


def test_linear_dense_nd_under_no_grad_bad_input():
    x = pf.zeros(2, 3, 4)
    with pf.no_grad():
        with pytest.raises(Exception, match="4 features"):
            F.linear(x, pf.zeros(5, 3))
        with pytest.raises(TypeError):
            F.linear(x, pf.zeros(5, 4, dtype=pf.float64))
        with pytest.raises(Exception, match="cannot be broadcast"):
            F.linear(x, pf.zeros(5, 4), pf.zeros(4))
