"""Pointwise compositions (addcmul, lerp, fmod, nan_to_num, ...) against torch: values and gradients, their
in-place forms and aliases."""

import numpy as np
import pytest

import pyframe
from tests._tables import gradcheck_table_test, torch_case_table_test

# ---- against torch: name -> (function of the library and the inputs, input arrays) ----------------------

RNG = np.random.default_rng(3)


def arr(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, shape)


TORCH_CASES = {
    "addcmul": (lambda L, a, b, c: L.addcmul(a, b, c, value=0.5), (arr(3, 4), arr(3, 4), arr(4))),
    "addcdiv": (lambda L, a, b, c: L.addcdiv(a, b, c, value=-2), (arr(3, 4), arr(3, 4), arr(3, 4, lo=0.5))),
    "lerp_scalar": (lambda L, a, b: L.lerp(a, b, 0.3), (arr(3, 4), arr(3, 4))),
    "lerp_tensor": (lambda L, a, b, w: L.lerp(a, b, w), (arr(3, 4), arr(3, 4), arr(4, lo=0, hi=1))),
    "clamp_min": (lambda L, a: L.clamp_min(a, 0.1), (arr(3, 4),)),
    "clamp_max": (lambda L, a: a.clamp_max(0.1), (arr(3, 4),)),
    "logaddexp": (lambda L, a, b: L.logaddexp(a, b), (arr(3, 4), arr(3, 4))),
    "hypot": (lambda L, a, b: L.hypot(a, b), (arr(3, 4, lo=0.5), arr(3, 4, lo=0.5))),
    "fmod": (lambda L, a: L.fmod(a, 0.7), (arr(3, 4, lo=-3, hi=3),)),
    "fmod_neg": (lambda L, a: L.fmod(a, -0.7), (arr(3, 4, lo=-3, hi=3),)),
    "frac": (lambda L, a: L.frac(a), (arr(3, 4, lo=-3, hi=3),)),
    "xlogy": (lambda L, a, b: L.xlogy(a, b), (arr(3, 4), arr(3, 4, lo=0.5))),
}  # fmt: skip


test_matches_torch_values_and_gradients = torch_case_table_test(TORCH_CASES, rtol=1e-10, atol=1e-12, grad_rtol=1e-9)


test_float64_gradients_by_finite_differences = gradcheck_table_test(TORCH_CASES)


def test_inplace_forms_and_aliases():
    x = pyframe.tensor([1.0, 2.0])
    assert x.lerp_(pyframe.tensor([3.0, 6.0]), 0.5) is x and x.tolist() == [2.0, 4.0]
    x.addcmul_(x, x, value=0.5)
    assert x.tolist() == [4.0, 12.0]
    x.clamp_max_(5.0)
    assert x.tolist() == [4.0, 5.0]
    assert pyframe.arctan2 is pyframe.atan2 and pyframe.absolute is pyframe.abs
    assert pyframe.nan_to_num(pyframe.tensor([float("nan"), float("inf"), -float("inf")]), posinf=9.0).tolist() == [
        0.0, 9.0, -3.4028234663852886e38,
    ]  # fmt: skip
    assert pyframe.logaddexp(pyframe.tensor([-float("inf")]), pyframe.tensor([-float("inf")])).item() == -float("inf")
    assert pyframe.diag(pyframe.tensor([1.0, -1.0]), 1).tolist() == [[0, 1, 0], [0, 0, -1], [0, 0, 0]]


def test_addcdiv_of_integers_is_refused():
    with pytest.raises(RuntimeError, match="integer division"):
        pyframe.addcdiv(pyframe.zeros(2), pyframe.tensor([1, 2]), pyframe.tensor([1, 2]))


def _f64(*values):
    return pyframe.tensor(list(values), dtype=pyframe.float64)


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("hypot", (_f64(0.5, 1.0),)), ("xlogy", (_f64(1.5, 2.0),)), ("addcmul", (_f64(0.5, 1.0), _f64(2.0, 3.0))),
        ("lerp", (_f64(3.0, 1.0), 0.25)), ("fmod", (0.7,)), ("clamp_max", (2.0,)), ("frac", ()), ("nan_to_num", ()),
    ],
)  # fmt: skip
def test_composed_inplace_forms_backpropagate_like_out_of_place(name, args):
    """The in-place form overwrites a tensor its own graph may have saved (hypot squares its
    input): backward must still give the out-of-place gradients."""
    grads = []
    for inplace in (False, True):
        w = pyframe.tensor([1.5, 2.5], dtype=pyframe.float64, requires_grad=True)
        h = w * 2
        out = getattr(h, name + "_")(*args) if inplace else getattr(pyframe, name)(h, *args)
        (out * out).sum().backward()
        grads.append(w.grad.numpy().copy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-12)
