"""The trigonometric, hyperbolic, log2/log10/exp2, erfc and trunc rows of the C unary table:
values against NumPy in every float dtype and from integers, float64 gradients by finite
differences, in-place forms."""

import math

import numpy as np
import pytest

import pyframe
from pyframe.autograd import gradcheck

# name: (NumPy reference, low, high): inputs drawn inside the function's domain
OPS = {
    "tan": (np.tan, -1.2, 1.2),
    "sinh": (np.sinh, -2.0, 2.0),
    "cosh": (np.cosh, -2.0, 2.0),
    "asin": (np.arcsin, -0.9, 0.9),
    "acos": (np.arccos, -0.9, 0.9),
    "atan": (np.arctan, -3.0, 3.0),
    "asinh": (np.arcsinh, -3.0, 3.0),
    "acosh": (np.arccosh, 1.1, 4.0),
    "atanh": (np.arctanh, -0.9, 0.9),
    "log2": (np.log2, 0.1, 8.0),
    "log10": (np.log10, 0.1, 8.0),
    "exp2": (np.exp2, -3.0, 3.0),
    "erfc": (np.vectorize(math.erfc), -2.0, 2.0),
}
RNG = np.random.default_rng(7)


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_values_match_numpy(name, dtype):
    ref, lo, hi = OPS[name]
    a = RNG.uniform(lo, hi, (5, 6)).astype(dtype)
    x = pyframe.tensor(a)
    out = getattr(pyframe, name)(x)
    assert out.dtype == getattr(pyframe, dtype)
    expected = ref(a.astype(np.float64))
    tol = {"float16": 2e-3, "float32": 2e-6, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(out.numpy().astype(np.float64), expected, rtol=tol, atol=tol)
    # a transposed (strided) input takes the general path
    np.testing.assert_allclose(getattr(x.t(), name)().numpy().astype(np.float64), expected.T, rtol=tol, atol=tol)


@pytest.mark.parametrize("name", sorted(OPS))
def test_integers_compute_in_float32(name):
    a = np.array([1, 2, 3])
    out = getattr(pyframe, name)(pyframe.tensor(a))
    assert out.dtype == pyframe.float32
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(out.numpy(), OPS[name][0](a.astype(np.float64)), rtol=2e-6, equal_nan=True)


@pytest.mark.parametrize("name", sorted(OPS))
def test_gradients(name):
    _, lo, hi = OPS[name]
    x = pyframe.tensor(RNG.uniform(lo * 0.9, hi * 0.9, (3, 4)), dtype=pyframe.float64, requires_grad=True)
    assert gradcheck(getattr(pyframe, name), (x,))


@pytest.mark.parametrize("name", sorted(OPS))
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    _, lo, hi = OPS[name]
    a = RNG.uniform(lo, hi, (4, 3))
    x = pyframe.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    getattr(pyframe, name)(x).sum().backward()
    getattr(torch, name)(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_trunc_rounds_toward_zero_and_keeps_integers():
    assert pyframe.trunc(pyframe.tensor([-1.5, 2.7, -0.2])).tolist() == [-1.0, 2.0, -0.0]
    ints = pyframe.tensor([3, -4])
    assert pyframe.trunc(ints).dtype == pyframe.int64 and pyframe.trunc(ints).tolist() == [3, -4]
    x = pyframe.tensor([0.5, 1.5], requires_grad=True)
    pyframe.trunc(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]


def test_outside_the_domain_is_nan_as_torch():
    out = pyframe.tensor([2.0, 0.5]).asin()
    assert math.isnan(out[0].item()) and out[1].item() == pytest.approx(math.asin(0.5))
    assert pyframe.tensor([0.5]).acosh().isnan().item()


def test_inplace_forms_write_through():
    x = pyframe.tensor([0.1, 0.2])
    assert x.atan_() is x
    np.testing.assert_allclose(x.numpy(), np.arctan([0.1, 0.2]).astype(np.float32))
    with pytest.raises(TypeError, match="sinh_"):  # a float result cannot go into an int tensor
        pyframe.tensor([1, 2]).sinh_()
