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


def test_div_rounding_modes_and_round_decimals_match_torch():
    torch = pytest.importorskip("torch")
    a = np.array([-7.5, -7.0, -0.5, 0.0, 3.0, 7.9])
    b = np.array([2.0, -2.0, 2.0, -3.0, 0.0, -0.5])
    ia, ib = np.array([-7, 7, -8, 9, 0]), np.array([2, -2, 3, 4, -5])
    for mode in ("trunc", "floor"):
        for x, y in ((a, b), (ia, ib), (ia, 2), (a, 2.5)):
            tx, ty = torch.tensor(x), torch.tensor(y) if isinstance(y, np.ndarray) else y
            px, py = pyframe.tensor(x), pyframe.tensor(y) if isinstance(y, np.ndarray) else y
            want, got = torch.div(tx, ty, rounding_mode=mode), pyframe.div(px, py, rounding_mode=mode)
            assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
            np.testing.assert_array_equal(got.numpy(), want.numpy())
        z = pyframe.tensor(ia)
        z.div_(2, rounding_mode=mode)
        np.testing.assert_array_equal(z.numpy(), torch.tensor(ia).div_(2, rounding_mode=mode).numpy())
    with pytest.raises(ValueError, match="rounding_mode"):
        pyframe.div(pyframe.ones(2), 2, rounding_mode="round")
    r = np.array([1234.5678, -0.125, 2.5, -1250.0, 0.0049])
    for d in (0, 2, 3, -1, -2):
        np.testing.assert_array_equal(pyframe.tensor(r, dtype=pyframe.float32).round(decimals=d).numpy(),
                                      torch.tensor(r, dtype=torch.float32).round(decimals=d).numpy())  # fmt: skip
    x = pyframe.tensor(r)
    x.round_(decimals=1)
    np.testing.assert_array_equal(x.numpy(), torch.tensor(r).round(decimals=1).numpy())
    with pytest.raises(NotImplementedError):
        pyframe.tensor([1, 2]).round(decimals=1)


@pytest.mark.parametrize(
    ("name", "numbers"),
    [("add", "either"), ("mul", "either"), ("eq", "other"), ("lt", "other"), ("ge", "other"), ("clamp_min", "other"),
     ("rsub", "other"), ("maximum", "none"), ("minimum", "none"), ("atan2", "none"), ("logaddexp", "none"),
     ("logical_and", "none"), ("float_power", "either")],
)  # fmt: skip
def test_binary_functions_take_numbers_where_torch_does(name, numbers):
    """One checker serves every binary function: which operand may be a Python number is the op's row."""
    torch = pytest.importorskip("torch")
    x, tx = pyframe.tensor([1, 2, 3]), torch.tensor([1, 2, 3])
    pairs = [((2, x), (2, tx)), ((x, 2), (tx, 2))] + ([((2, 2), (2, 2))] if numbers != "either" else [])
    for args, targs in pairs:
        try:
            getattr(torch, name)(*targs)
            torch_ok = True
        except TypeError:
            torch_ok = False
        if torch_ok:
            getattr(pyframe, name)(*args)
        else:
            with pytest.raises(TypeError, match=name):
                getattr(pyframe, name)(*args)


def test_angle_of_real_tensors():
    x = pyframe.tensor([-1.5, 0.0, -0.0, 2.0, float("nan"), float("-inf")], requires_grad=True)
    y = pyframe.angle(x)
    np.testing.assert_array_equal(y.detach().numpy(), np.float32([np.pi, 0, 0, 0, np.nan, np.pi]))
    y.sum().backward()
    assert x.grad.tolist() == [0.0] * 6  # torch's gradient of angle on real input
    i = pyframe.tensor([-3, 0, 4]).angle()
    assert i.dtype == pyframe.float32
    np.testing.assert_allclose(i.numpy(), [np.pi, 0, 0])
