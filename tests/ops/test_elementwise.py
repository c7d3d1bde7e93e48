"""Elementwise ops against NumPy, driven by the rows of tests/ops_db.py (the pyframe callable, a NumPy reference,
the dtypes the op accepts as PyTorch does, the input domain of each operand, the kind of result dtype): every row
runs over every allowed dtype and every memory layout below; the unary rows' float64 gradients against finite
differences and torch. Then where, masked_fill, triu/tril, in-place forms and special values."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe
from pyframe.ops.elementwise import inplace_unary_ops, unary_ops
from tests._helpers import (
    ALL,
    DTYPES,
    FLOATS,
    INTS,
    NUMERIC,
    assert_matches,
    fd_gradcheck,
    npy,
    pf,
    random_array,
    t64,
)
from tests._oracle import both, grads_equal
from tests.ops_db import OPS, OPS_BY_NAME, UNARY, Op, derive, draw, np_erf, np_sigmoid

RNG = np.random.default_rng(0)


def _permute(t):
    return np.transpose(t, (2, 0, 1)) if isinstance(t, np.ndarray) else t.permute(2, 0, 1)


def _expand(t):
    return np.broadcast_to(t, (4, 5)) if isinstance(t, np.ndarray) else t.expand(4, 5)


def _same(t):
    return t


# name: (base shape of each operand, view applied to each operand; works on ndarrays and Tensors)
LAYOUTS = {
    "contiguous": (((3, 5), (3, 5)), (_same, _same)),
    "strided": (((3, 10), (3, 10)), (lambda t: t[:, ::2], lambda t: t[:, 1::2])),
    "transposed": (((5, 3), (5, 3)), (lambda t: t.T, lambda t: t.T)),
    "permuted": (((2, 3, 4), (2, 3, 4)), (_permute, _permute)),
    "mixed": (((3, 5), (5, 3)), (_same, lambda t: t.T)),
    "expanded": (((1, 5), (4, 5)), (_expand, _same)),
    "broadcast": (((4, 1), (1, 5)), (_same, _same)),
    "zero_d": (((), ()), (_same, _same)),
    "zero_d_vs_dims": (((), (2, 3)), (_same, _same)),
    "empty": (((0, 3), (0, 3)), (_same, _same)),
    "long": (((1037,), (1037,)), (_same, _same)),  # past the SIMD width, with a tail
}
UNARY_LAYOUTS = ["contiguous", "strided", "transposed", "permuted", "expanded", "zero_d", "empty", "long"]


def _inputs(rng, op: Op, dtype: str, layout: str):
    shapes, views = LAYOUTS[layout]
    arrays, tensors = [], []
    for i, domain in enumerate(op.domains):
        a = draw(rng, shapes[i], dtype, domain)
        arrays.append(views[i](a))
        tensors.append(views[i](pf(a)))
    return arrays, tensors


def _reference(op: Op, arrays, dtype: str):
    out_dt = op.result_dtype(dtype)
    if out_dt in FLOATS:
        args = [a.astype(np.float64) for a in arrays]
    elif dtype in INTS:
        args = [a.astype(np.int64) for a in arrays]
    else:
        args = list(arrays)
    with np.errstate(all="ignore"):
        return np.asarray(op.ref(*args)), out_dt


CASES = [
    pytest.param(op, dt, layout, id=f"{op.name}-{dt}-{layout}")
    for op in OPS
    for dt in op.dtypes
    for layout in (UNARY_LAYOUTS if op.arity == 1 else LAYOUTS)
]


@pytest.mark.parametrize(("op", "dtype", "layout"), CASES)
def test_op_matches_numpy(op: Op, dtype: str, layout: str, rng):
    arrays, tensors = _inputs(rng, op, dtype, layout)
    before = [npy(t) for t in tensors]
    expected, out_dt = _reference(op, arrays, dtype)
    got = op.fn(*tensors)
    assert_matches(got, expected, out_dt, what=f"{op.name}({dtype}, {layout})")
    assert got.is_contiguous()
    for t, b in zip(tensors, before, strict=True):  # inputs are left alone
        np.testing.assert_array_equal(npy(t), b)


def test_table_covers_the_required_ops():
    required = (
        "neg abs exp log sqrt tanh sigmoid relu sin cos sign reciprocal erf log1p expm1 floor ceil round clamp "
        "pow_scalar2 pow maximum minimum add sub mul div floor_divide remainder atan2 eq ne lt le gt ge "
        "logical_and logical_or logical_xor logical_not isnan isinf isfinite"
    )
    assert set(required.split()) <= set(OPS_BY_NAME)


def test_every_unary_op_of_pyframe_has_a_row():
    """A unary op NumPy has under the same name gets its row by itself; any other needs a row in tests/ops_db.py."""
    missing = sorted(set(unary_ops) - set(OPS_BY_NAME))
    assert not missing, f"no row in tests/ops_db.py (and no NumPy function of the same name) for {missing}"


def test_derived_rows_take_numpy_s_function_dtypes_and_a_domain():
    assert derive("acosh") == OPS_BY_NAME["acosh"] and OPS_BY_NAME["acosh"].derived
    assert [(n, OPS_BY_NAME[n].domains[0]) for n in ("exp", "asin", "tan", "log", "acosh")] == [
        ("exp", "real"), ("asin", "unit"), ("tan", "unit"), ("log", "pos"), ("acosh", "above_one")
    ]  # fmt: skip
    assert (OPS_BY_NAME["abs"].result, OPS_BY_NAME["abs"].dtypes, OPS_BY_NAME["abs"].grad) == ("same", NUMERIC, None)
    assert (OPS_BY_NAME["sinh"].result, OPS_BY_NAME["sinh"].dtypes, OPS_BY_NAME["sinh"].grad) == ("float", ALL, "real")
    assert OPS_BY_NAME["logical_not"].result == "bool"
    assert derive("sigmoid") is None and derive("no_such_op") is None  # no NumPy function of those names


GRAD_ROWS = [op for op in UNARY if op.grad is not None]


@pytest.mark.parametrize("op", GRAD_ROWS, ids=[op.name for op in GRAD_ROWS])
def test_unary_gradients_match_finite_differences(op: Op, rng):
    x = pyframe.tensor(draw(rng, (3, 4), "float64", op.grad) * 0.95, requires_grad=True)
    assert pyframe.autograd.gradcheck(op.fn, (x,))


@pytest.mark.parametrize("op", GRAD_ROWS, ids=[op.name for op in GRAD_ROWS])
def test_unary_gradients_match_torch(op: Op, rng):
    torch = pytest.importorskip("torch")
    a = draw(rng, (4, 3), "float64", op.grad)
    x = pyframe.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    op.fn(x).sum().backward()
    getattr(torch, op.name)(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-10)


def test_method_and_function_forms_agree(rng):
    x = pf(random_array(rng, (4, 6), "float32", "pos"))
    y = pf(random_array(rng, (4, 6), "float32", "pos"))
    for name in ("exp", "log", "sqrt", "tanh", "sigmoid", "abs", "neg", "sin", "cos"):
        np.testing.assert_array_equal(npy(getattr(x, name)()), npy(getattr(pyframe, name)(x)), err_msg=name)
    for name in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "eq", "lt"):
        np.testing.assert_array_equal(npy(getattr(x, name)(y)), npy(getattr(pyframe, name)(x, y)), err_msg=name)


# ---- special values -----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS)
def test_nan_propagates_through_maximum_minimum_clamp(dtype):
    a = pyframe.tensor([np.nan, 1.0, 2.0, np.nan], dtype=dtype)
    b = pyframe.tensor([0.0, np.nan, 3.0, np.nan], dtype=dtype)
    np.testing.assert_array_equal(npy(pyframe.maximum(a, b)), np.array([np.nan, np.nan, 3.0, np.nan], dtype))
    np.testing.assert_array_equal(npy(pyframe.minimum(a, b)), np.array([np.nan, np.nan, 2.0, np.nan], dtype))
    np.testing.assert_array_equal(npy(pyframe.clamp(a, 0, 1.5)), np.array([np.nan, 1.0, 1.5, np.nan], dtype))
    np.testing.assert_array_equal(npy(pyframe.relu(a)), np.array([np.nan, 1.0, 2.0, np.nan], dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_extreme_inputs(dtype):
    x = pyframe.tensor([-np.inf, -1000.0, -30.0, 0.0, 30.0, 1000.0, np.inf], dtype=dtype)
    a = npy(x).astype(np.float64)
    with np.errstate(all="ignore"):
        assert_matches(pyframe.exp(x), np.exp(a), dtype, what="exp")
        assert_matches(pyframe.sigmoid(x), np_sigmoid(a), dtype, what="sigmoid")
        assert_matches(pyframe.tanh(x), np.tanh(a), dtype, what="tanh")
        assert_matches(pyframe.erf(x), np_erf(a), dtype, what="erf")
        assert_matches(pyframe.expm1(x), np.expm1(a), dtype, what="expm1")
    assert_matches(pyframe.log(pyframe.tensor([0.0, -1.0], dtype=dtype)), [-np.inf, np.nan], dtype, what="log")
    assert_matches(pyframe.sqrt(pyframe.tensor([-1.0], dtype=dtype)), [np.nan], dtype, what="sqrt")
    assert_matches(pyframe.sign(pyframe.tensor([np.nan, -0.0], dtype=dtype)), [0.0, 0.0], dtype, what="sign")  # torch


def test_round_half_to_even_and_negative_zero():
    x = pyframe.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997])
    np.testing.assert_array_equal(npy(pyframe.round(x)), np.array([0, 2, 2, -0.0, -2, -2, 0], np.float32))


@pytest.mark.parametrize("dtype", INTS)
def test_integer_division_semantics(dtype):
    a = pyframe.tensor([7, -7, 7, -7, 0], dtype=dtype)
    b = pyframe.tensor([2, 2, -2, -2, 3], dtype=dtype)
    np.testing.assert_array_equal(npy(a // b), [3, -4, -4, 3, 0])  # floor, as Python and torch
    np.testing.assert_array_equal(npy(a % b), [1, 1, -1, -1, 0])  # sign of the divisor
    np.testing.assert_allclose(npy(a / b), [3.5, -3.5, -3.5, 3.5, 0.0])
    assert (a / b).dtype == pyframe.float32


@pytest.mark.parametrize("dtype", INTS)
def test_integer_division_by_zero_raises(dtype):
    a = pyframe.tensor([1, 2], dtype=dtype)
    z = pyframe.tensor([1, 0], dtype=dtype)
    with pytest.raises(RuntimeError, match="(?i)division by zero|divide by zero|ZeroDivision"):
        pyframe.floor_divide(a, z)
    with pytest.raises(RuntimeError, match="(?i)division by zero|divide by zero|ZeroDivision"):
        pyframe.remainder(a, z)
    np.testing.assert_array_equal(npy(a / z), [1.0, np.inf])  # true division is floating


def test_float_floor_divide_matches_numpy_near_integer_quotients():
    # 1 / 0.1 rounds to 10 in float32, but the floor of the exact quotient is 9 (torch and NumPy agree)
    a = np.array([1.0, 1.0, -1.0, 5.0, 0.3], np.float32)
    b = np.array([0.1, 0.2, 0.1, 0.5, 0.1], np.float32)
    got = pyframe.floor_divide(pf(a), pf(b))
    np.testing.assert_array_equal(npy(got), np.floor_divide(a, b))
    np.testing.assert_allclose(npy(pyframe.remainder(pf(a), pf(b))), np.remainder(a, b), rtol=1e-6, atol=1e-7)


def test_integer_pow_to_negative_exponent_raises():
    with pytest.raises(RuntimeError, match="negative"):
        pyframe.tensor([2, 3]) ** pyframe.tensor([-1, 1])
    with pytest.raises(RuntimeError, match="negative"):
        pyframe.tensor([2, 3]) ** -1
    # 1 and -1 are fine in torch too
    np.testing.assert_array_equal(npy(pyframe.tensor([1, -1, -1]) ** pyframe.tensor([-3, -3, -2])), [1, -1, 1])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("layout", ["contiguous", "strided"])
def test_float_tensor_to_a_large_integer_keeps_its_parity(dtype, layout):
    # float32 cannot hold 2**31 + 1: the exponent used to round to the even 2**31 (-1 ** -2147483649 gave 1)
    x = pyframe.tensor([-1.0, -0.0, 0.0, -2.0, 1.0, 0.5] * 4).to(getattr(pyframe, dtype))
    x = x if layout == "contiguous" else x.flip(0)
    for e in (-(2**31) - 1, 2**25 + 1, 2**40 + 3):
        with np.errstate(divide="ignore", over="ignore"):
            exact = np.power(npy(x.double()), np.float64(e))
        got = x**e
        assert got.dtype == x.dtype
        np.testing.assert_array_equal(npy(got.double()), npy(pyframe.tensor(exact).to(x.dtype).double()))


def test_integer_arithmetic_wraps_like_int64():
    big = pyframe.tensor([2**62], dtype=pyframe.int64)
    np.testing.assert_array_equal(npy(big * 4), np.array([2**62], np.int64) * 4)
    i32 = pyframe.tensor([2**31 - 1], dtype=pyframe.int32)
    assert (i32 + 1).item() == -(2**31)


# ---- where / masked_fill / triu / tril ------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "transposed", "broadcast", "zero_d", "empty"])
def test_where(dtype, layout, rng):
    shapes, views = LAYOUTS[layout]
    cond = random_array(rng, shapes[0], "bool")
    a = random_array(rng, shapes[0], dtype)
    b = random_array(rng, shapes[1], dtype)
    expected = np.where(views[0](cond), views[0](a), views[1](b))
    got = pyframe.where(views[0](pf(cond)), views[0](pf(a)), views[1](pf(b)))
    assert_matches(got, expected, dtype, what=f"where {layout}")
    got = views[0](pf(a)).where(views[0](pf(cond)), views[1](pf(b)))  # method form: x.where(cond, other)
    assert_matches(got, expected, dtype, what=f"Tensor.where {layout}")


def test_where_scalar_branches_and_promotion():
    cond = pyframe.tensor([True, False, True])
    x = pyframe.tensor([1, 2, 3], dtype=pyframe.int32)
    got = pyframe.where(cond, x, 0)
    assert got.dtype == pyframe.int32
    assert got.tolist() == [1, 0, 3]
    got = pyframe.where(cond, x, 0.5)
    assert got.dtype == pyframe.float32
    assert got.tolist() == [1.0, 0.5, 3.0]
    got = pyframe.where(cond, x, pyframe.tensor([10.0, 20.0, 30.0], dtype=pyframe.float64))
    assert got.dtype == pyframe.float64
    assert got.tolist() == [1.0, 20.0, 3.0]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("n", [1, 15, 16, 17, 1000, 70_001])
def test_where_long_runs_with_a_broadcast_branch(dtype, n, rng):
    """Runs longer than a vector, with tails: the contiguous run, a scalar second value
    (relu-like masks) and a scalar first value each have their own C loop."""
    cond = random_array(rng, (n,), "bool")
    a, b = random_array(rng, (n,), dtype), random_array(rng, (1,), dtype)
    assert_matches(pyframe.where(pf(cond), pf(a), pf(b)), np.where(cond, a, b), dtype, what="where(c, x, b[1])")
    assert_matches(pyframe.where(pf(cond), pf(b), pf(a)), np.where(cond, b, a), dtype, what="where(c, b[1], x)")
    b2 = random_array(rng, (n,), dtype)
    assert_matches(pyframe.where(pf(cond), pf(a), pf(b2)), np.where(cond, a, b2), dtype, what="where(c, x, y)")


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32, np.float16])
def test_where_branch_free_runs(dtype):
    rng = np.random.default_rng(8)
    c = rng.standard_normal((3, 50, 7)) > 0
    a = (rng.standard_normal((3, 50, 7)) * 10).astype(dtype)
    b = (rng.standard_normal((50, 7)) * 10).astype(dtype)
    pc, pa, pb = pyframe.tensor(c), pyframe.tensor(a), pyframe.tensor(b)
    np.testing.assert_array_equal(pyframe.where(pc, pa, 0).numpy(), np.where(c, a, 0).astype(dtype))
    np.testing.assert_array_equal(pyframe.where(pc, pa, pb).numpy(), np.where(c, a, b))
    # strided operands take the general run
    b3 = (rng.standard_normal((3, 50, 7)) * 10).astype(dtype)
    got = pyframe.where(pc.transpose(0, 2), pa.transpose(0, 2), pyframe.tensor(b3).transpose(0, 2))
    np.testing.assert_array_equal(got.numpy(), np.where(c, a, b3).transpose(2, 1, 0))


def test_where_keeps_nan_payload_and_relu_grad():
    pytest.importorskip("torch")
    bits = np.array([0x7FC01234, 0x3F800000], dtype=np.uint32).view(np.float32)
    out = pyframe.where(pyframe.tensor([True, False]), pyframe.tensor(bits), 2.0).numpy()
    assert out.view(np.uint32)[0] == 0x7FC01234 and out[1] == 2.0
    xa = np.random.default_rng(9).standard_normal((64, 40)).astype(np.float32)
    (px, tx) = both(xa)
    grads_equal(px.relu(), tx.relu(), [px], [tx], rtol=0, atol=0)


@pytest.mark.parametrize("name", ["relu", "tanh", "sigmoid"])
@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_activation_gradients_fused_and_composed_agree(name, dtype, layout, rng):
    """The one-pass C gradient (PF_*_BACKWARD) gives the composed form's values; with
    create_graph the composed form runs, and its gradient can be differentiated again. A
    NaN output passes its gradient on through relu, as torch's threshold_backward."""
    x = random_array(rng, (40, 70), dtype)
    x[0, 0] = np.nan
    x[1, :3] = 0
    view = (lambda t: t.T) if layout == "transposed" else (lambda t: t)
    cot = random_array(rng, (40, 70), dtype)

    def grads(create_graph):
        leaf = pf(x).requires_grad_()
        y = getattr(view(leaf), name)()
        (g,) = pyframe.autograd.grad(y, leaf, view(pf(cot)), create_graph=create_graph)
        return g

    fused, composed = grads(False), grads(True).detach()
    if dtype == "float16":  # the C pass computes in float32 and rounds once (as torch); composed ops round each step
        np.testing.assert_allclose(npy(fused), npy(composed), rtol=1e-2, atol=1e-2)
    else:
        np.testing.assert_array_equal(npy(fused), npy(composed))
    if name == "relu":
        expected = np.where(x <= 0, 0, cot)
        np.testing.assert_array_equal(npy(fused), expected.astype(x.dtype))
    else:
        y = np.tanh(x.astype(np.float64)) if name == "tanh" else 1 / (1 + np.exp(-x.astype(np.float64)))
        d = 1 - y * y if name == "tanh" else y * (1 - y)
        tol = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}[str(x.dtype)]
        np.testing.assert_allclose(npy(fused)[1:], (cot * d)[1:], rtol=tol, atol=tol)


_FILL = {"float32": -2.5, "float64": 1e300, "float16": 0.125, "int64": 2**40, "int32": -7, "bool": True}


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("layout", ["contiguous", "strided", "transposed", "broadcast", "zero_d"])
def test_masked_fill(dtype, layout, rng):
    shapes, views = LAYOUTS[layout]
    base = random_array(rng, shapes[1] if layout == "broadcast" else shapes[0], dtype)
    mask = random_array(rng, shapes[0], "bool")
    x = views[1](base) if layout == "broadcast" else views[0](base)
    m = views[0](mask)
    xt = views[1](pf(base)) if layout == "broadcast" else views[0](pf(base))
    value = _FILL[dtype]
    if layout == "broadcast":  # a (4, 1) mask over a (1, 5) tensor: out of place both broadcast (as torch), in
        # place the tensor cannot grow: shape error
        got = xt.masked_fill(views[0](pf(mask)), value)
        assert_matches(got, np.where(m, np.array(value).astype(x.dtype), x), dtype, what="masked_fill broadcast")
        with pytest.raises((ValueError, RuntimeError), match=r"\[1, 5\]"):
            xt.masked_fill_(views[0](pf(mask)), value)
        return
    got = xt.masked_fill(views[0](pf(mask)), value)
    expected = np.where(m, np.array(value).astype(x.dtype), x)
    assert_matches(got, expected, dtype, what="masked_fill")
    np.testing.assert_array_equal(npy(xt), x)  # out of place
    xt.masked_fill_(views[0](pf(mask)), value)
    assert_matches(xt, expected, dtype, what="masked_fill_")
    if layout != "zero_d":
        assert_matches(pyframe.masked_fill(views[0](pf(base)), views[0](pf(mask)), pyframe.tensor(value, dtype=dtype)),
                       expected,
                       dtype, what="masked_fill with a 0-d value")  # fmt: skip


def test_masked_fill_broadcasts_mask_over_tensor():
    x = pyframe.zeros(3, 4)
    mask = pyframe.tensor([True, False, False, True])
    got = x.masked_fill(mask, 1.0)
    np.testing.assert_array_equal(npy(got), np.tile([1.0, 0, 0, 1.0], (3, 1)))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("diagonal", [-2, -1, 0, 1, 3])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "batched", "wide"])
def test_triu_tril(dtype, diagonal, layout, rng):
    shape = {"contiguous": (4, 5), "transposed": (5, 4), "batched": (2, 3, 4), "wide": (3, 7)}[layout]
    a = random_array(rng, shape, dtype)
    t = pf(a)
    if layout == "transposed":
        a, t = a.T, t.T
    assert_matches(pyframe.triu(t, diagonal), np.triu(a, diagonal), dtype, what="triu")
    assert_matches(t.tril(diagonal), np.tril(a, diagonal), dtype, what="tril")
    assert_matches(t.triu(diagonal=diagonal), np.triu(a, diagonal), dtype, what="triu kw")


def test_triu_needs_two_dims():
    with pytest.raises((ValueError, RuntimeError), match="2"):
        pyframe.triu(pyframe.ones(3))


# ---- in-place ops ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", FLOATS + INTS)
def test_inplace_ops_write_through_views(dtype, rng):
    base = random_array(rng, (4, 6), dtype, "pos")
    t = pf(base)
    view = t[:, ::2]
    other = random_array(rng, (4, 3), dtype, "pos")
    expected = base.astype(np.float64)
    view.add_(pf(other))
    expected[:, ::2] += other
    view.mul_(2)
    expected[:, ::2] *= 2
    view.sub_(1)
    expected[:, ::2] -= 1
    assert_matches(t, expected, dtype, what="add_/mul_/sub_ through a view")
    if dtype in FLOATS:
        t.div_(4)
        assert_matches(t, expected / 4, dtype, what="div_")


def test_inplace_operators_keep_identity_and_dtype():
    x = pyframe.ones(3)
    y = x
    x += 1
    x *= pyframe.tensor([1.0, 2.0, 3.0])
    x -= 0.5
    x /= 2
    x **= 2
    assert x is y
    assert x.dtype == pyframe.float32
    np.testing.assert_allclose(npy(x), ((np.array([2, 4, 6.0]) - 0.5) / 2) ** 2)


def test_inplace_int_tensor_takes_int_scalar_and_rejects_float():
    x = pyframe.tensor([1, 2, 3])
    x += 2
    x.mul_(True)
    assert x.tolist() == [3, 4, 5]
    assert x.dtype == pyframe.int64
    with pytest.raises((TypeError, RuntimeError), match="(?i)float.*int64|can't be cast"):
        x.add_(1.5)
    with pytest.raises((TypeError, RuntimeError), match="(?i)float32.*int64|can't be cast"):
        x.add_(pyframe.ones(3))
    assert x.tolist() == [3, 4, 5]  # untouched by the failed calls


def test_inplace_float16_keeps_float16_with_float64_operand():
    x = pyframe.ones(3, dtype=pyframe.float16)
    x.add_(pyframe.tensor([0.5, 1.5, 2.5], dtype=pyframe.float64))
    assert x.dtype == pyframe.float16
    assert x.tolist() == [1.5, 2.5, 3.5]


def test_inplace_with_overlapping_operand():
    x = pyframe.arange(6, dtype=pyframe.float32)
    x[1:].add_(x[:-1])  # reads the pre-update values, as torch's copy-on-overlap
    np.testing.assert_array_equal(npy(x), [0, 1, 3, 5, 7, 9])
    y = pyframe.arange(4).reshape(2, 2)
    y.add_(y.T)
    np.testing.assert_array_equal(npy(y), [[0, 3], [3, 6]])


def test_inplace_shape_must_not_grow():
    x = pyframe.zeros(3)
    with pytest.raises((ValueError, RuntimeError), match=r"\[3\].*\[2, 3\]"):
        x.add_(pyframe.ones(2, 3))


def test_fill_zero_copy_clamp_():
    x = pyframe.empty(2, 3)
    x.fill_(2.5)
    assert x.tolist() == [[2.5] * 3] * 2
    x[0].zero_()
    assert x.tolist() == [[0.0] * 3, [2.5] * 3]
    x.copy_(pyframe.tensor([1, 2, 3]))  # broadcasts and converts
    assert x.tolist() == [[1.0, 2.0, 3.0]] * 2
    x.clamp_(1.5, 2.5)
    assert x.tolist() == [[1.5, 2.0, 2.5]] * 2
    i = pyframe.zeros(2, dtype=pyframe.int32)
    i.copy_(pyframe.tensor([1.7, -1.7]))  # truncation toward zero, as torch
    assert i.tolist() == [1, -1]


def test_inplace_on_leaf_requiring_grad_raises():
    w = pyframe.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        w.add_(1)
    with pyframe.no_grad():
        w.add_(1)
    assert w.detach().tolist() == [2.0, 2.0, 2.0]


# ---- mixed dtypes and Python scalars --------------------------------------------------------------------

_PROMOTED = {
    ("int32", "float64"): "float64",
    ("float16", "float32"): "float32",
    ("bool", "int64"): "int64",
    ("int32", "int64"): "int64",
    ("float16", "int64"): "float16",
    ("bool", "float16"): "float16",
}
_MIXED_OPS = ["add", "sub", "mul", "div", "maximum", "minimum", "atan2", "lt", "eq", "remainder", "floor_divide"]


@pytest.mark.parametrize(("da", "db"), list(_PROMOTED), ids=[f"{a}-{b}" for a, b in _PROMOTED])
@pytest.mark.parametrize("name", _MIXED_OPS)
def test_binary_mixed_dtypes(name, da, db, rng):
    op = OPS_BY_NAME[name]
    promoted = _PROMOTED[(da, db)]
    if name == "sub" and promoted == "bool":
        return
    a = draw(rng, (3, 4), da, "quarter" if da in FLOATS else "real")
    b = draw(rng, (4,), db, op.domains[1] if db != "bool" else "real")
    if name in ("remainder", "floor_divide", "div") and db == "bool":
        b = np.ones_like(b)  # no division by False
    if name in ("remainder", "floor_divide") and promoted in INTS and (b == 0).any():
        b = np.where(b == 0, 1, b).astype(b.dtype)
    expected, out_dt = _reference(op, [a.astype(DTYPES[promoted].np), b.astype(DTYPES[promoted].np)], promoted)
    got = op.fn(pf(a), pf(b))
    assert_matches(got, expected, out_dt, what=f"{name}({da}, {db})")
    if name not in ("remainder", "floor_divide"):  # a may hold integer zeros
        assert op.fn(pf(b), pf(a)).dtype == DTYPES[out_dt]  # the same promotion with the operands swapped


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("scalar", [3, -2, 2.5, True], ids=["int", "neg_int", "float", "bool"])
def test_python_scalar_on_either_side(dtype, scalar, rng):
    a = random_array(rng, (2, 5), dtype, "pos")
    t = pf(a)
    s_is_float = isinstance(scalar, float)
    out_dt = dtype if (dtype in FLOATS or not s_is_float) else "float32"
    a64 = a.astype(np.float64)
    s = float(scalar)
    cases = {
        "t + s": (t + scalar, a64 + s),
        "s + t": (scalar + t, s + a64),
        "t - s": (t - scalar, a64 - s),
        "s - t": (scalar - t, s - a64),
        "s * t": (scalar * t, s * a64),
        "t / s": (t / scalar, a64 / s),
        "s / t": (scalar / t, s / a64),
        "s // t": (scalar // t, np.floor_divide(s, a64)),
        "s % t": (scalar % t, np.remainder(s, a64)),
        "t ** 2": (t**2, a64**2),
    }
    for what, (got, expected) in cases.items():
        dt = out_dt if "/" not in what or "//" in what else (dtype if dtype in FLOATS else "float32")
        if what == "t ** 2":
            dt = dtype
        assert_matches(got, expected, dt, what=f"{what} with {dtype} and {scalar!r}")


def test_predicates_store_zero_or_one():
    # glibc's isinf returns -1 for -inf: a bool tensor must still hold exactly 0/1, so sums count
    x = pyframe.tensor([float("inf"), float("-inf"), 1.0, float("nan")])
    assert pyframe.isinf(x).sum().item() == 2
    assert pyframe.isfinite(x).sum().item() == 1
    assert pyframe.isnan(x).sum().item() == 1
    assert pyframe.isinf(x).to(pyframe.int64).tolist() == [1, 1, 0, 0]


def test_tanh_float32_within_a_few_ulps_of_float64():
    """The vectorised float32 tanh (odd polynomial below 0.625, fast exp above) against
    float64 tanh over a dense range, tiny magnitudes down to subnormals, and the specials."""
    dense = np.linspace(-12, 12, 400_001, dtype=np.float32)
    tiny = np.float32(10.0) ** np.arange(-45, 1, 0.05, dtype=np.float32)
    xs = np.concatenate([dense, tiny, -tiny, np.float32([0.625, -0.625, 9.0, -9.0, 1e-38, -1e-38])])
    y = pyframe.tensor(xs).tanh().numpy().astype(np.float64)
    ref = np.tanh(xs.astype(np.float64))
    ulp = np.spacing(np.abs(ref).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(y - ref) / ulp) <= 3.0
    special = pyframe.tensor([np.inf, -np.inf, np.nan, 0.0, -0.0, 100.0, -100.0]).tanh().numpy()
    assert list(special[:2]) == [1.0, -1.0] and np.isnan(special[2])
    assert special[3] == 0.0 and not np.signbit(special[3]) and np.signbit(special[4])
    assert list(special[5:]) == [1.0, -1.0]
    # strided input goes through the same kernel
    x = pyframe.tensor(xs[:1000].reshape(20, 50)).t()
    assert np.allclose(x.tanh().numpy(), np.tanh(xs[:1000].reshape(20, 50).T), rtol=3e-7, atol=0)


def test_expm1_float32_within_two_ulps_of_float64():
    """The vectorised float32 expm1 (2^n (e^r - 1) + 2^n - 1; exp past 20, -1 below -18) against float64 over a
    dense range, tiny magnitudes (where e^x - 1 would cancel to 0) and the specials. The exhaustive check over every
    float32 reads 1.64 ulp."""
    dense = np.linspace(-25, 90, 400_001, dtype=np.float32)
    tiny = np.float32(10.0) ** np.arange(-45, 1, 0.05, dtype=np.float32)
    xs = np.concatenate([dense, tiny, -tiny, np.float32([0.3465, 0.3466, 0.35, -0.3466, 20.0, -18.0, 88.7])])
    y = pyframe.tensor(xs).expm1().numpy().astype(np.float64)
    ref = np.expm1(xs.astype(np.float64))
    finite = np.isfinite(ref.astype(np.float32))
    ulp = np.spacing(np.abs(ref[finite]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(y[finite] - ref[finite]) / ulp) <= 2.0
    assert np.isinf(y[~finite]).all()
    special = pyframe.tensor([np.inf, -np.inf, np.nan, 0.0, -0.0, 89.0, -104.0]).expm1().numpy()
    assert special[0] == np.inf and special[1] == -1.0 and np.isnan(special[2])
    assert special[3] == 0.0 and not np.signbit(special[3]) and np.signbit(special[4])
    assert special[5] == np.inf and special[6] == -1.0
    # log1p and the ELUs keep the sign of a zero too (their float32 forms are built on the same reductions)
    z = pyframe.tensor([0.0, -0.0])
    for y in (z.log1p(), pyframe.nn.functional.elu(z), pyframe.nn.functional.selu(z), pyframe.nn.functional.celu(z)):
        assert np.signbit(y.numpy()).tolist() == [False, True]


# ---- rounding, domains and in-place forms of the unary table ------------------------------------------


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


@pytest.mark.parametrize("name", sorted(inplace_unary_ops))
def test_every_unary_op_has_an_inplace_variant(name):
    a = RNG.uniform(0.1, 2.0, size=(3, 4)).astype(np.float32)
    x = pyframe.tensor(a)
    ref = getattr(pyframe, name[:-1])(x)
    y = x.clone()
    assert getattr(y, name)() is y
    np.testing.assert_array_equal(y.numpy(), ref.numpy())
    z = pyframe.tensor(a).t()  # a strided view is written through
    getattr(z, name)()
    np.testing.assert_array_equal(z.numpy(), ref.numpy().T)


def test_inplace_unary_autograd_and_rules():
    a = RNG.uniform(0.5, 1.5, size=(2, 3))
    fd_gradcheck(lambda x: (x * 1.0).sin_(), a)
    fd_gradcheck(lambda x: (x * 2.0).exp_().sqrt_(), a)
    leaf = t64(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf.exp_()
    with pytest.raises(TypeError, match="can't be cast"):
        pyframe.tensor([1, 2]).exp_()
    i = pyframe.tensor([-1, 2])
    assert i.neg_().tolist() == [1, -2] and i.abs_().tolist() == [1, 2]
    assert pyframe.relu_(pyframe.tensor([-1.0, 1.0])).tolist() == [0.0, 1.0]


def test_lean_binary_recording_keeps_the_inplace_check_and_both_gradients():
    w = pyframe.randn(5, requires_grad=True)
    v = pyframe.randn(5, requires_grad=True)
    y = w * v
    assert "MulBackward0" in repr(y.grad_fn)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), v.detach().numpy())
    np.testing.assert_allclose(v.grad.numpy(), w.detach().numpy())
    x = pyframe.randn(5)
    z = w * x
    with pyframe.no_grad():
        x.add_(1.0)  # mul saved x: its backward must refuse the changed value
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


@pytest.mark.parametrize(
    "write",
    [
        lambda e: e.add_(pyframe.tensor([1.0, 2.0, 3.0])),
        lambda e: e.mul_(2),
        lambda e: e.copy_(pyframe.tensor([1.0, 2.0, 3.0])),
        lambda e: e.index_add_(0, pyframe.tensor([0]), pyframe.ones(1)),
        lambda e: e.clamp_(0, 1),
    ],
)
def test_in_place_writes_to_an_expanded_view_are_refused(write):
    base = pyframe.zeros(1)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        write(base.expand(3))
    assert base.tolist() == [0.0]


def test_fill_of_an_expanded_view_and_single_element_writes_stay_legal():
    e = pyframe.zeros(1).expand(3)
    e.fill_(2)
    assert e.tolist() == [2.0, 2.0, 2.0]
    e[1] = 5.0
    assert e.tolist() == [5.0, 5.0, 5.0]


def test_float16_arithmetic_with_a_large_scalar_rounds_once():
    x = pyframe.tensor([1.0, math.inf], dtype=pyframe.float16)
    assert (x - 2**31).tolist() == [-math.inf, math.inf]  # not inf - inf = nan
    x.div_(-(2**63) - 1)  # the in-place form too (found by the ASan walk, seed 1004, call 117)
    assert x.tolist() == [-0.0, -math.inf]


def test_add_and_sub_take_alpha():
    a, b = pyframe.tensor([1.0, 2.0]), pyframe.tensor([10.0, 20.0])
    assert pyframe.add(a, b, alpha=2).tolist() == [21.0, 42.0]
    assert a.sub(b, alpha=0.5).tolist() == [-4.0, -8.0]
    assert pyframe.sub(input=a, other=b).tolist() == [-9.0, -18.0]
    a.add_(b, alpha=-1)
    assert a.tolist() == [-9.0, -18.0]
    w = pyframe.tensor([1.0, 2.0], requires_grad=True)
    w.add(w, alpha=3).sum().backward()
    assert w.grad.tolist() == [4.0, 4.0]
    with pytest.raises(TypeError):
        pyframe.mul(a, b, alpha=2)


# ---- out= ---------------------------------------------------------------------------------------------


def test_each_row_is_bound_to_its_own_name():
    """A unary or binary row binds its op (and in-place form) under the name it gives: no typo can point a name
    at another row's op."""
    from pyframe import ops
    from pyframe.ops import elementwise as ew

    for name, fn in {**ew.unary_ops, **ew.inplace_unary_ops, **ew.binary_ops}.items():
        assert getattr(ops, name) is fn and fn.__name__ == name, name  # rows live in elementwise and special


_OUT_UNARY = sorted(n for n in unary_ops if n in OPS_BY_NAME)
_OUT_BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "atan2", "remainder", "eq", "lt", "logical_xor"]


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name", _OUT_UNARY + _OUT_BINARY)
def test_out_matches_the_out_of_place_op(name, layout, rng):
    op = OPS_BY_NAME[name]
    dtype = "float64"
    arrays, tensors = _inputs(rng, op, dtype, layout)
    want = op.fn(*tensors)
    out = pyframe.full(want.shape, 7.0, dtype=want.dtype)
    if layout == "transposed":  # a strided out= is written in place too
        out = pyframe.full(want.shape[::-1], 7.0, dtype=want.dtype).T
    got = op.fn(*tensors, out=out)
    assert got is out
    np.testing.assert_array_equal(npy(out), npy(want))


def test_out_converts_to_its_dtype_resizes_when_empty_and_handles_overlap():
    ints = pyframe.tensor([1, 2, 3])
    out = pyframe.empty(3, dtype=pyframe.float64)
    pyframe.add(ints, ints, alpha=2, out=out)
    assert out.tolist() == [3.0, 6.0, 9.0] and out.dtype == pyframe.float64
    pyframe.exp(ints, out=out)  # a floating op on integers, written to a float64 out
    np.testing.assert_allclose(npy(out), np.exp([1.0, 2.0, 3.0]), rtol=1e-6)
    flags = pyframe.empty(3)
    pyframe.eq(ints, 2, out=flags)
    assert flags.tolist() == [0.0, 1.0, 0.0]
    empty = pyframe.empty(0)
    assert pyframe.mul(pyframe.ones(2, 3), 2.0, out=empty) is empty and empty.shape == (2, 3)
    x = pyframe.arange(6.0)
    pyframe.add(x[:3], x[2:5], out=x[1:4])  # out overlaps both operands: computed first, then written
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 4.0, 5.0]


def test_out_refuses_autograd_a_narrower_dtype_and_another_shape():
    w = pyframe.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="out=.*automatic differentiation"):
        pyframe.exp(w, out=pyframe.empty(3))
    with pytest.raises(RuntimeError, match="out=.*automatic differentiation"):
        pyframe.mul(w, w, out=pyframe.empty(3))
    with pyframe.no_grad():
        assert pyframe.mul(w, w, out=pyframe.empty(3)).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(TypeError, match="can't be cast"):
        pyframe.sqrt(pyframe.ones(3), out=pyframe.empty(3, dtype=pyframe.int64))
    with pytest.raises((ValueError, RuntimeError), match=r"\[2\].*\[3\]"):
        pyframe.add(pyframe.ones(3), 1.0, out=pyframe.empty(2))


def test_inplace_op_reading_its_own_target_keeps_the_gradient():
    w = pyframe.tensor([0.5, -1.0, 2.0], requires_grad=True)
    x = w * 1.0
    x.mul_(x)  # the derivative reads x as it was before the write
    x.sum().backward()
    assert w.grad.tolist() == [1.0, -2.0, 4.0]


def test_arithmetic_takes_two_python_numbers_as_torch():
    # torch's add/sub/mul/div/floor_divide wrap a number input as a 0-d tensor; the other binary ops do not
    assert repr(pyframe.add(2, 2)) == "tensor(4)"
    assert pyframe.add(2, 3, alpha=2).item() == 8 and pyframe.add(2, 3).dtype == pyframe.int64
    assert pyframe.add(2.5, 2).dtype == pyframe.float32 and pyframe.add(True, True).dtype == pyframe.bool
    assert pyframe.sub(2, 5).item() == -3 and pyframe.mul(2, 3.0).item() == 6.0
    assert pyframe.div(1, 2).item() == 0.5 and pyframe.div(-7, 2, rounding_mode="floor").item() == -4
    assert pyframe.floor_divide(7, 2).item() == 3
    with pytest.raises(TypeError, match="both Tensors"):
        pyframe.maximum(2, 3)
    with pytest.raises(TypeError, match="input a Tensor"):
        pyframe.eq(2, 3)
    with pytest.raises(TypeError, match="Tensors or Python numbers"):
        pyframe.add("a", 2)


# ---- add and sub with alpha: one fused multiply-add pass, as torch's kernel ----------------------------------

_ALPHA_FLOATS = ["float32", "float64", "float16", "bfloat16"]
_ALPHA_INTS = ["int64", "int32", "int16", "int8", "uint8"]


def _torch_dtype(torch, name):
    return getattr(torch, name)


def _pair(torch, arr, dtype):
    """The same values as a pyframe and a torch tensor of ``dtype`` (16-bit floats rounded by torch, once)."""
    t = torch.tensor(arr).to(_torch_dtype(torch, dtype))
    values = t.float().numpy() if dtype in ("float16", "bfloat16") else t.numpy()
    return pyframe.tensor(values, dtype=getattr(pyframe, dtype)), t


_ULP = {"float32": 2.0**-23, "float64": 2.0**-52, "float16": 2.0**-10, "bfloat16": 2.0**-7}


def _same(p, t, scale=0.0):
    """Bit for bit, or (``scale``: the magnitude of alpha * b) within a unit in the last place of the result and of
    alpha * b: torch rounds alpha * b on its own in some loops (the scalar tail of a 16-bit float loop, the last
    numel % 32 elements, and of a broadcast scalar), once everywhere else, as pyframe does everywhere."""
    half = p.dtype in (pyframe.float16, pyframe.bfloat16)
    got, want = npy(p.float() if half else p), (t.float() if half else t).numpy()
    if scale:
        ulp = _ULP[str(p.dtype).split(".")[-1]]
        np.testing.assert_allclose(got, want, rtol=2 * ulp, atol=2 * ulp * scale)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", _ALPHA_FLOATS + _ALPHA_INTS)
@pytest.mark.parametrize("layout", ["contiguous", "broadcast", "transposed", "scalar-like"])
def test_alpha_add_and_sub_match_torch(dtype, layout, rng):
    """out = a + alpha * b is one rounding: bit for bit torch's fmadd for contiguous float32 and float64 (a
    two-pass mul + add differs in about 1 of 10 values), within a unit (see _same) elsewhere; integers wrap as
    torch's do, bit for bit, and refuse an alpha the dtype cannot hold."""
    torch = pytest.importorskip("torch")
    floating = dtype in _ALPHA_FLOATS
    shape_a, shape_b = {"contiguous": ((37, 41), (37, 41)), "broadcast": ((37, 41), (41,)),
                        "transposed": ((41, 37), (41, 37)), "scalar-like": ((37, 41), (1, 1))}[layout]  # fmt: skip
    if floating:
        a0, b0 = rng.standard_normal(shape_a) * 3, rng.standard_normal(shape_b) * 3
    else:
        a0, b0 = rng.integers(-100, 100, shape_a), rng.integers(-100, 100, shape_b)
        if dtype == "uint8":
            a0, b0 = np.abs(a0), np.abs(b0)
    pa, ta = _pair(torch, a0, dtype)
    pb, tb = _pair(torch, b0, dtype)
    if layout == "transposed":
        pa, ta, pb, tb = pa.T, ta.T, pb.T, tb.T
    exact = not floating or (layout in ("contiguous", "transposed") and dtype in ("float32", "float64"))
    for alpha in [0.0, 1.0, -1.0, 0.1234567, -3, 2.5e-3] if floating else [0, 1, 3, 100, -1, -100]:
        scale = 0.0 if exact else abs(alpha) * 20  # |b| < 20 here
        _same(pyframe.add(pa, pb, alpha=alpha), torch.add(ta, tb, alpha=alpha), scale)
        _same(pa.sub(pb, alpha=alpha), ta.sub(tb, alpha=alpha), scale)
        pc, tc = pa.clone(), ta.clone()
        pc.add_(pb, alpha=alpha)
        tc.add_(tb, alpha=alpha)
        _same(pc, tc, scale)
        pc, tc = pa.clone(), ta.clone()
        pc.sub_(pb, alpha=alpha)
        tc.sub_(tb, alpha=alpha)
        _same(pc, tc, scale)
        pout, tout = pyframe.empty(0, dtype=pa.dtype), torch.empty(0, dtype=ta.dtype)
        _same(pyframe.sub(pa, pb, alpha=alpha, out=pout), torch.sub(ta, tb, alpha=alpha, out=tout), scale)
    if not floating:
        with pytest.raises(RuntimeError, match="without overflow"):
            pa.add(pb, alpha=2**70)
        if dtype in ("int8", "uint8"):
            with pytest.raises(RuntimeError, match="without overflow"):
                pa.add_(pb, alpha=1000)
    if dtype == "float16":
        with pytest.raises(RuntimeError, match="without overflow"):
            pa.sub(pb, alpha=1e6)


def test_alpha_add_in_place_on_a_view_writes_only_the_view():
    torch = pytest.importorskip("torch")
    base = np.arange(60, dtype=np.float32).reshape(6, 10) / 7
    pbase, tbase = pyframe.tensor(base), torch.tensor(base)
    pg, tg = pyframe.tensor(base[:3, :5] * 3), torch.tensor(base[:3, :5] * 3)
    pbase[::2, 1::2].add_(pg, alpha=-0.37)
    tbase[::2, 1::2].add_(tg, alpha=-0.37)
    _same(pbase, tbase)
    pbase.T[2:5].sub_(pbase.T[2:5].clone(), alpha=0.5)  # a transposed view of the tensor itself
    tbase.T[2:5].sub_(tbase.T[2:5].clone(), alpha=0.5)
    _same(pbase, tbase)


def test_alpha_special_values_and_promotion():
    torch = pytest.importorskip("torch")
    vals = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e38, -1e38], dtype=np.float32)
    for alpha in (0.0, -0.0, 1e10, -2.0):
        pa, ta = _pair(torch, vals, "float32")
        pb, tb = _pair(torch, vals[::-1].copy(), "float32")
        _same(pyframe.add(pa, pb, alpha=alpha), torch.add(ta, tb, alpha=alpha))
    # mixed dtypes promote first (float32 + alpha * float64 is float64), and an int tensor takes a float one
    pi, ti = _pair(torch, np.arange(5), "int64")
    pf64, tf64 = _pair(torch, np.linspace(-1, 1, 5), "float64")
    pf32, tf32 = _pair(torch, np.linspace(-2, 2, 5), "float32")
    _same(pyframe.add(pf32, pf64, alpha=0.3), torch.add(tf32, tf64, alpha=0.3))
    _same(pyframe.sub(pi, pf32, alpha=-1.5), torch.sub(ti, tf32, alpha=-1.5))
    pf32.add_(pf64, alpha=0.3)  # in place, float64's value rounded into float32
    tf32.add_(tf64, alpha=0.3)
    _same(pf32, tf32)
    with pytest.raises(TypeError, match="alpha must not be a floating point number"):
        pi.add_(pi, alpha=0.5)


@pytest.mark.parametrize("name", ["add", "sub"])
def test_alpha_gradients_match_torch(name):
    """The second operand's gradient is alpha * g (sub: -alpha * g), summed over its broadcast dims."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    a0, b0 = rng.standard_normal((4, 5)), rng.standard_normal((5,))
    for alpha in (0.0, -2.5, 3):
        pa, ta = both(a0)
        pb, tb = both(b0)
        po, to = getattr(pyframe, name)(pa, pb, alpha=alpha), getattr(torch, name)(ta, tb, alpha=alpha)
        grads_equal(po, to, [pa, pb], [ta, tb], rtol=1e-12, atol=1e-12)
        pw, tw = both(a0)
        pc, tc = pw * 1.0, tw * 1.0  # an in-place add on a non-leaf, recorded
        getattr(pc, name + "_")(pw.flip(0), alpha=alpha).sum().backward()
        getattr(tc, name + "_")(tw.flip(0), alpha=alpha).sum().backward()
        np.testing.assert_allclose(npy(pw.grad), tw.grad.numpy(), rtol=1e-12)
