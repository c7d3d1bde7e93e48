"""Type promotion: PyTorch's documented rules, written out by hand, and checked against
torch.result_type when torch is importable."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from tests._helpers import ALL, DTYPES, FLOATS, npy

ORDER = ("float32", "float64", "float16", "int64", "int32", "bool")

# torch.promote_types for two dimensioned tensors: row = left operand, column = right operand (ORDER)
PROMOTE = {
    "float32": ("float32", "float64", "float32", "float32", "float32", "float32"),
    "float64": ("float64", "float64", "float64", "float64", "float64", "float64"),
    "float16": ("float32", "float64", "float16", "float16", "float16", "float16"),
    "int64": ("float32", "float64", "float16", "int64", "int64", "int64"),
    "int32": ("float32", "float64", "float16", "int64", "int32", "int32"),
    "bool": ("float32", "float64", "float16", "int64", "int32", "bool"),
}

# tensor (any ndim) with a Python bool / int / float: the scalar only lifts the category
SCALAR = {
    "float32": ("float32", "float32", "float32"),
    "float64": ("float64", "float64", "float64"),
    "float16": ("float16", "float16", "float16"),
    "int64": ("int64", "int64", "float32"),
    "int32": ("int32", "int32", "float32"),
    "bool": ("bool", "int64", "float32"),
}
SCALARS = (True, 2, 2.5)

# dimensioned tensor (row) with a 0-d tensor (column): the 0-d tensor only lifts the category,
# and then it brings its own dtype (int32 + 0-d float64 -> float64, unlike a Python float)
_CATEGORY = {"bool": 0, "int64": 1, "int32": 1, "float32": 2, "float64": 2, "float16": 2}
ZERO_D = {
    row: tuple(row if _CATEGORY[row] >= _CATEGORY[col] else PROMOTE[row][j] for j, col in enumerate(ORDER))
    for row in ORDER
}

PAIRS = [(a, b) for a in ORDER for b in ORDER]


def _ones(dtype, shape=(2, 3)):
    return pyframe.ones(*shape, dtype=DTYPES[dtype])


def _value(dtype, shape, seed):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    return rng.integers(1, 4, size=shape).astype(DTYPES[dtype].np)


def test_tables_are_symmetric_where_they_should_be():
    for i, a in enumerate(ORDER):
        for j, b in enumerate(ORDER):
            assert PROMOTE[a][j] == PROMOTE[b][i]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_tensor_tensor(a, b):
    expected = PROMOTE[a][ORDER.index(b)]
    x_np, y_np = _value(a, (2, 3), 1), _value(b, (3,), 2)
    x, y = pyframe.tensor(x_np), pyframe.tensor(y_np)
    ops = {"add": pyframe.add, "mul": pyframe.mul, "maximum": pyframe.maximum, "minimum": pyframe.minimum,
           "where": lambda p, q: pyframe.where(pyframe.ones(2, 3, dtype=pyframe.bool), p, q)}  # fmt: skip
    if expected != "bool":
        ops["sub"] = pyframe.sub
    for name, fn in ops.items():
        out = fn(x, y)
        assert out.dtype == DTYPES[expected], f"{name}({a}, {b}) -> {out.dtype}, expected {expected}"
    if expected == "bool":  # bool + bool is logical or, as torch
        np.testing.assert_array_equal(npy(x + y), x_np | y_np)
    else:
        np.testing.assert_allclose(npy(x + y).astype(np.float64), x_np.astype(np.float64) + y_np.astype(np.float64))
    div = x / y
    assert div.dtype == DTYPES[expected if expected in FLOATS else "float32"]
    assert (x == y).dtype == pyframe.bool and (x < y).dtype == pyframe.bool
    assert pyframe.cat([x.reshape(-1), y]).dtype == DTYPES[expected]
    assert pyframe.atan2(x, y).dtype == DTYPES[expected if expected in FLOATS else "float32"]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_zero_d_tensors_together_promote_like_dimensioned_ones(a, b):
    out = pyframe.tensor(1, dtype=DTYPES[a]) * pyframe.tensor(1, dtype=DTYPES[b])
    assert out.dtype == DTYPES[PROMOTE[a][ORDER.index(b)]]
    assert out.shape == ()


@pytest.mark.parametrize("dtype", ORDER)
@pytest.mark.parametrize("scalar", SCALARS, ids=["bool", "int", "float"])
def test_tensor_python_scalar(dtype, scalar):
    expected = DTYPES[SCALAR[dtype][SCALARS.index(scalar)]]
    x = _ones(dtype)
    for name, out in [
        ("x + s", x + scalar), ("s + x", scalar + x), ("x * s", x * scalar), ("s * x", scalar * x),
        ("where", pyframe.where(x == x, x, scalar)),
    ]:  # fmt: skip
        assert out.dtype == expected, f"{name} with {dtype} and {scalar!r}: {out.dtype}, expected {expected}"
    with pytest.raises(TypeError, match="both Tensors"):  # maximum takes tensors only, as torch
        pyframe.maximum(x, scalar)
    if expected != pyframe.bool:
        assert (x - scalar).dtype == expected and (scalar - x).dtype == expected
    assert (x / scalar).dtype == (expected if expected.is_floating_point else pyframe.float32)
    # the value is the scalar's, not a truncated one
    if isinstance(scalar, float):
        np.testing.assert_allclose(npy(x + scalar).astype(np.float64), 1 + scalar)


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_dimensioned_tensor_with_zero_d_tensor(a, b):
    expected = DTYPES[ZERO_D[a][ORDER.index(b)]]
    x = _ones(a)
    z = pyframe.tensor(1, dtype=DTYPES[b])
    assert (x + z).dtype == expected, f"{a}[2,3] + {b}[] -> {(x + z).dtype}, expected {expected}"
    assert (z + x).dtype == expected
    assert pyframe.maximum(z, x).dtype == expected
    assert (x + z).shape == (2, 3)


def test_documented_examples():
    i32 = pyframe.tensor([1, 2], dtype=pyframe.int32)
    assert (i32 + 2.5).dtype == pyframe.float32
    assert (i32 + 2.5).tolist() == [3.5, 4.5]
    assert (pyframe.ones(2, dtype=pyframe.float16) + 1.0).dtype == pyframe.float16
    assert (i32 + 5).dtype == pyframe.int32
    assert (i32 + pyframe.tensor(5)).dtype == pyframe.int32  # 0-d int64 doesn't widen int32
    assert (i32 + pyframe.tensor([5])).dtype == pyframe.int64
    assert (i32 + pyframe.tensor(1.5, dtype=pyframe.float64)).dtype == pyframe.float64
    assert (pyframe.tensor([True]) + pyframe.tensor([True])).tolist() == [True]
    assert (pyframe.tensor([True]) + 1).tolist() == [2]
    assert (pyframe.tensor([1, 2]) / pyframe.tensor([2, 2])).dtype == pyframe.float32
    assert (pyframe.tensor([1, 2]) / pyframe.tensor([2, 2])).tolist() == [0.5, 1.0]
    assert (pyframe.tensor([True, False]) / pyframe.tensor([True, True])).dtype == pyframe.float32
    assert (7 / pyframe.tensor([2])).tolist() == [3.5]
    assert (pyframe.tensor([1, 2]) // 2).dtype == pyframe.int64
    assert (pyframe.tensor([3, 4]) ** 2).dtype == pyframe.int64
    assert (pyframe.tensor([4, 9]) ** 0.5).tolist() == [2.0, 3.0]
    assert (2 ** pyframe.tensor([1, 2])).tolist() == [2, 4]
    assert (0.5 ** pyframe.tensor([1, 2])).dtype == pyframe.float32
    assert (pyframe.tensor([1.0], dtype=pyframe.float64) * pyframe.tensor([3], dtype=pyframe.int32)).dtype == (
        pyframe.float64
    )


def test_comparison_with_python_float_does_not_truncate():
    x = pyframe.tensor([1, 2, 3])
    assert (x < 2.5).tolist() == [True, True, False]
    assert (x > 2.5).tolist() == [False, False, True]
    assert (x == 2.5).tolist() == [False, False, False]
    assert (x != 2.5).tolist() == [True, True, True]
    assert pyframe.eq(x, 2.0).tolist() == [False, True, False]
    b = pyframe.tensor([True, False])
    assert (b == 1).tolist() == [True, False]
    assert (b < 0.5).tolist() == [False, True]


def test_clamp_promotes_with_float_bounds():
    x = pyframe.tensor([1, 2, 3])
    out = x.clamp(0.5, 2.5)
    assert out.dtype == pyframe.float32
    assert out.tolist() == [1.0, 2.0, 2.5]
    assert x.clamp(0, 2).dtype == pyframe.int64


def test_dtype_compares_with_names():
    assert pyframe.float32 == "float32" and pyframe.float32 != "float64"
    assert pyframe.tensor([1.0]).dtype == pyframe.float32
    assert pyframe.tensor([1]).dtype == pyframe.int64 == "int64"
    assert pyframe.tensor([True]).dtype == pyframe.bool
    assert pyframe.float == pyframe.float32 and pyframe.double == pyframe.float64 and pyframe.long == pyframe.int64
    assert pyframe.half == pyframe.float16 and pyframe.int == pyframe.int32
    assert repr(pyframe.float64) == "pyframe.float64"
    assert {pyframe.float32: 1}[pyframe.float32] == 1
    for name in ALL:
        assert pyframe.zeros(1, dtype=name).dtype == DTYPES[name]
    assert pyframe.zeros(1, dtype=np.float64).dtype == pyframe.float64
    assert pyframe.zeros(1, dtype=float).dtype == pyframe.float32


# ---- torch as an oracle ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _torch_dtype(torch, name):
    return getattr(torch, name)


def test_tables_match_torch(torch):
    for a in ORDER:
        for j, b in enumerate(ORDER):
            ta, tb = _torch_dtype(torch, a), _torch_dtype(torch, b)
            assert str(torch.promote_types(ta, tb)) == f"torch.{PROMOTE[a][j]}"
            dim, zero_d = torch.ones(2, dtype=ta), torch.tensor(1, dtype=tb)
            assert str(torch.result_type(dim, zero_d)) == f"torch.{ZERO_D[a][j]}"
        for k, s in enumerate(SCALARS):
            assert str(torch.result_type(torch.ones(2, dtype=_torch_dtype(torch, a)), s)) == f"torch.{SCALAR[a][k]}"


@pytest.mark.parametrize("op", ["add", "mul", "div", "maximum", "atan2", "eq", "lt", "remainder", "where"])
def test_op_result_dtypes_match_torch(torch, op):
    operands = {}
    for name in ORDER:
        operands[f"{name}[2]"] = (pyframe.ones(2, dtype=DTYPES[name]), torch.ones(2, dtype=getattr(torch, name)))
        operands[f"{name}[]"] = (pyframe.tensor(1, dtype=DTYPES[name]), torch.tensor(1, dtype=getattr(torch, name)))
    for s in SCALARS:
        operands[repr(s)] = (s, s)
    for ka, (pa, ta) in operands.items():
        for kb, (pb, tb) in operands.items():
            if not (isinstance(pa, pyframe.Tensor) or isinstance(pb, pyframe.Tensor)):
                continue
            if op == "where":
                tcond, pcond = torch.ones(2, dtype=torch.bool), pyframe.ones(2, dtype=pyframe.bool)
                expected, got = torch.where(tcond, ta, tb).dtype, pyframe.where(pcond, pa, pb).dtype
            else:
                if op == "remainder" and not isinstance(pa, pyframe.Tensor):
                    continue  # torch.remainder(Number, Tensor) is a different overload
                try:
                    expected = getattr(torch, op)(ta, tb).dtype
                except (RuntimeError, TypeError):
                    continue
                got = getattr(pyframe, op)(pa, pb).dtype
            assert str(expected) == f"torch.{got.name}", f"{op}({ka}, {kb}): pyframe {got}, torch {expected}"


# Every path that turns a Python number (or a list of them) into a tensor, across families: under
# set_default_dtype(float64) each must give torch's dtype. M is the library (pyframe or torch).
NUMBER_TO_TENSOR = {
    "full_float": lambda M: M.full((1,), 0.1),
    "full_int": lambda M: M.full((1,), 1),
    "full_bool": lambda M: M.full((1,), True),
    "tensor_float": lambda M: M.tensor(0.1),
    "tensor_mixed_list": lambda M: M.tensor([1, 2.5]),
    "as_tensor": lambda M: M.as_tensor([0.5, 1]),
    "arange_float_step": lambda M: M.arange(0, 1, 0.25),
    "arange_float_end": lambda M: M.arange(2.0),
    "arange_int": lambda M: M.arange(3),
    "linspace": lambda M: M.linspace(0, 1, 3),
    "zeros": lambda M: M.zeros(2),
    "eye": lambda M: M.eye(2),
    "rand": lambda M: M.rand(2),
    "normal": lambda M: M.normal(0.0, 1.0, size=(2,)),
    "bernoulli_of_full": lambda M: M.bernoulli(M.full((2,), 0.5)),
    "full_like_int": lambda M: M.full_like(M.tensor([1]), 2.5),
    "int_times_float": lambda M: M.tensor([1, 2]) * 0.5,
    "int_div": lambda M: M.tensor([1, 2]) / 2,
    "float_minus_int": lambda M: 1.5 - M.tensor([1]),
    "int_pow_half": lambda M: M.tensor([4]) ** 0.5,
    "float_pow_int": lambda M: 2.5 ** M.tensor([2]),
    "sqrt_int": lambda M: M.sqrt(M.tensor([4])),
    "clamp_int_float": lambda M: M.clamp(M.tensor([1, 5]), 0.5, 2.5),
    "where_numbers": lambda M: M.where(M.tensor([True, False]), 0.5, 1.5),
    "xlogy_number": lambda M: M.xlogy(2.0, M.tensor([3])),
    "bool_plus_float": lambda M: M.tensor([True]) + 0.5,
    "zero_d_int_plus_float": lambda M: M.zeros((), dtype=M.int64) + 2.5,
    "linear_weight": lambda M: M.nn.Linear(2, 2).weight,
    "gru_weight": lambda M: M.nn.GRU(2, 2).weight_ih_l0,
    "pad_value": lambda M: M.nn.functional.pad(M.ones(2), (1, 1), value=0.5),
    "normal_loc": lambda M: M.distributions.Normal(0.0, 1.0).loc,
    "normal_sample": lambda M: M.distributions.Normal(0.0, 1.0).sample(),
    "normal_rsample": lambda M: M.distributions.Normal(0.0, 1.0).rsample((2,)),
    "normal_entropy": lambda M: M.distributions.Normal(0.0, 1.0).entropy(),
    "normal_beside_float32": lambda M: M.distributions.Normal(M.zeros(1, dtype=M.float32), 1.0).scale,
    "uniform_sample": lambda M: M.distributions.Uniform(0.0, 1.0).sample(),
    "bernoulli_probs": lambda M: M.distributions.Bernoulli(0.3).probs,
    "bernoulli_logits": lambda M: M.distributions.Bernoulli(logits=0.3).logits,
    "bernoulli_sample": lambda M: M.distributions.Bernoulli(0.3).sample(),
    "kl_normal_normal": lambda M: M.distributions.kl_divergence(
        M.distributions.Normal(0.0, 1.0), M.distributions.Normal(1.0, 2.0)
    ),
}


@pytest.mark.parametrize("name", sorted(NUMBER_TO_TENSOR))
def test_numbers_become_tensors_of_the_default_dtype_as_torch(name, torch):
    got = {}
    for M in (torch, pyframe):
        M.set_default_dtype(M.float64)
        try:
            got[M] = str(NUMBER_TO_TENSOR[name](M).dtype).split(".")[-1]
        finally:
            M.set_default_dtype(M.float32)
    assert got[pyframe] == got[torch]
