"""Tensor factories: shapes, dtypes and values of zeros/ones/full/empty and their *_like and new_* forms, arange,
linspace, eye, tensor() of every input kind, and requires_grad."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    ALL,
    DTYPES,
    npy,
)


@pytest.mark.parametrize("make", [pyframe.zeros, pyframe.ones, pyframe.empty])
def test_shape_forms_and_default_dtype(make):
    for args in ((2, 3), ((2, 3),), ([2, 3],), (pyframe.Size([2, 3]),)):
        t = make(*args)
        assert t.shape == (2, 3) and t.dtype == pyframe.float32 and t.is_contiguous()
        assert not t.requires_grad
    assert make().shape == () and make(0).shape == (0,) and make(3, 0, 2).numel() == 0
    assert make(2, dtype=pyframe.int32).dtype == pyframe.int32
    assert make(2, requires_grad=True).requires_grad
    assert make(np.int64(2)).shape == (2,)


@pytest.mark.parametrize("dtype", ALL)
def test_zeros_ones_full_values(dtype):
    d = DTYPES[dtype]
    np.testing.assert_array_equal(npy(pyframe.zeros(2, 3, dtype=d)), np.zeros((2, 3), d.np))
    np.testing.assert_array_equal(npy(pyframe.ones(4, dtype=dtype)), np.ones(4, d.np))
    v = {"bool": True, "int64": -(2**40), "int32": 123}.get(dtype, -2.5)
    np.testing.assert_array_equal(npy(pyframe.full((3, 2), v, dtype=d)), np.full((3, 2), v, d.np))
    x = pyframe.full((2, 2), v, dtype=d)
    for like, fill in ((pyframe.zeros_like, 0), (pyframe.ones_like, 1), (pyframe.empty_like, None)):
        y = like(x)
        assert y.shape == x.shape and y.dtype == x.dtype and y._storage is not x._storage
        if fill is not None:
            assert (npy(y) == fill).all()
    np.testing.assert_array_equal(npy(pyframe.full_like(x, 1)), np.ones((2, 2), d.np))


def test_full_infers_dtype_from_the_fill_value():
    assert pyframe.full((2,), 3).dtype == pyframe.int64
    assert pyframe.full((2,), 3.0).dtype == pyframe.float32
    assert pyframe.full((2,), True).dtype == pyframe.bool
    assert pyframe.full(3, 2.0).shape == (3,)
    assert pyframe.full((2,), 7, dtype=pyframe.float64).tolist() == [7.0, 7.0]


def test_like_factories_override_dtype_and_grad():
    x = pyframe.ones(2, 3, dtype=pyframe.int32)
    assert pyframe.zeros_like(x, dtype=pyframe.float64).dtype == pyframe.float64
    assert pyframe.ones_like(x.float(), requires_grad=True).requires_grad
    assert pyframe.rand_like(x.float()).shape == (2, 3)
    assert pyframe.randn_like(x.double()).dtype == pyframe.float64
    r = pyframe.randint_like(x, 5, 9)
    assert r.dtype == pyframe.int32 and ((npy(r) >= 5) & (npy(r) < 9)).all()


def test_requires_grad_only_for_floating_point():
    with pytest.raises(RuntimeError, match="floating point"):
        pyframe.zeros(2, dtype=pyframe.int64, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        pyframe.tensor([1, 2], requires_grad=True)
    t = pyframe.tensor([1.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf
    assert not t.detach().requires_grad
    assert pyframe.zeros(1).requires_grad_().requires_grad


# ---- arange / linspace / eye -------------------------------------------------------------------------------

ARANGE = [
    ((5,), "int64"), ((2, 9, 3), "int64"), ((-3, 3, 2), "int64"), ((10, 0, -3), "int64"), ((0, 1, 0.1), "float32"),
    ((1, 2.5, 0.5), "float32"), ((0.0, 5), "float32"), ((0, -1, -0.3), "float32"), ((3, 3), "int64"),
    ((1e6, 1e6 + 5), "float32"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "dtype"), ARANGE, ids=[str(a) for a, _ in ARANGE])
def test_arange(args, dtype):
    t = pyframe.arange(*args)
    assert t.dtype == DTYPES[dtype]
    np.testing.assert_allclose(npy(t), np.arange(*args).astype(DTYPES[dtype].np), rtol=1e-6)


def test_arange_dtype_argument_and_errors():
    assert pyframe.arange(4, dtype=pyframe.float64).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert pyframe.arange(1, 4, dtype=pyframe.float32).dtype == pyframe.float32
    assert pyframe.arange(0, 2**40, 2**38).tolist() == [0, 2**38, 2**39, 3 * 2**38]
    with pytest.raises(ValueError, match="nonzero"):
        pyframe.arange(0, 5, 0)
    with pytest.raises(ValueError, match="inconsistent with step sign"):
        pyframe.arange(0, 5, -1)
    with pytest.raises(ValueError, match="finite"):
        pyframe.arange(0, float("inf"))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize(("start", "end", "steps"), [(0, 10, 5), (-1, 1, 0), (10, 0, 4), (0, 1, 2), (0, 1, 7),
                                                     (-2.5, 7.25, 100)])  # fmt: skip
def test_linspace(start, end, steps, dtype):
    t = pyframe.linspace(start, end, steps, dtype=DTYPES[dtype])
    assert t.dtype == DTYPES[dtype] and t.shape == (steps,)
    expected = np.linspace(start, end, steps)
    if dtype == "int64":
        np.testing.assert_array_equal(npy(t), np.trunc(expected).astype(np.int64))
    else:
        np.testing.assert_allclose(npy(t), expected, rtol=1e-6, atol=1e-6)
    assert pyframe.linspace(0, 1, 3).dtype == pyframe.float32


def test_linspace_single_step_is_start():
    assert pyframe.linspace(0, 1, 1).tolist() == [0.0]


@pytest.mark.parametrize(("n", "m"), [(3, None), (2, 4), (4, 2), (0, None), (1, 1)])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_eye(n, m, dtype):
    t = pyframe.eye(n, m, dtype=DTYPES[dtype])
    assert t.dtype == DTYPES[dtype]
    np.testing.assert_array_equal(npy(t), np.eye(n, m, dtype=DTYPES[dtype].np))
    assert pyframe.eye(2).dtype == pyframe.float32


# ---- random ---------------------------------------------------------------------------------------------------


def test_tensor_factory_inputs():
    assert pyframe.tensor([pyframe.tensor(1.0), pyframe.tensor(2.0)]).tolist() == [1.0, 2.0]
    assert pyframe.tensor([[pyframe.tensor(1)], [2]]).dtype == pyframe.int64
    src = pyframe.tensor([1.0, 2.0])
    copy = pyframe.tensor(src)
    copy.fill_(0)
    assert src.tolist() == [1.0, 2.0]
    assert pyframe.tensor(src, dtype=pyframe.int32).dtype == pyframe.int32
    assert pyframe.tensor(np.float64(1.5)).dtype == pyframe.float64  # NumPy scalars keep their dtype
    assert pyframe.tensor(np.int32(3)).dtype == pyframe.int32
    assert pyframe.tensor(np.array(2.5, dtype=np.float16)).shape == ()
    assert pyframe.tensor(3.0).shape == () and pyframe.tensor([]).shape == (0,)
    assert pyframe.tensor([[]]).shape == (1, 0)
    assert pyframe.tensor(np.arange(6).reshape(2, 3).T).tolist() == [[0, 3], [1, 4], [2, 5]]
    assert pyframe.tensor([1, 2], dtype=pyframe.float16).dtype == pyframe.float16
    assert pyframe.tensor((1.5, 2)).tolist() == [1.5, 2.0]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_full_and_fill_with_non_finite_floats(value):
    t = pyframe.full((2, 3), value)
    assert t.dtype == pyframe.float32
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value, dtype=np.float32))
    u = pyframe.zeros(4, dtype=pyframe.float64).fill_(value)
    np.testing.assert_array_equal(u.numpy(), np.full(4, value))


def test_new_factories():
    x = pyframe.ones(2, dtype=pyframe.float64)
    assert x.new_ones(3).dtype == pyframe.float64 and x.new_ones((2, 3)).shape == (2, 3)
    assert x.new_zeros(2, 2).sum().item() == 0 and x.new_empty(4).shape == (4,)
    assert x.new_full((2,), 7).tolist() == [7.0, 7.0] and x.new_tensor([1, 2]).dtype == pyframe.float64
    assert (
        x.new_ones(2, dtype=pyframe.int64).dtype == pyframe.int64 and x.new_zeros(1, requires_grad=True).requires_grad
    )


def test_tensor_factory_copies():
    a = np.arange(4.0)
    t = pyframe.tensor(a)
    a[0] = 100
    assert t[0].item() == 0.0
    assert t.dtype == pyframe.float64  # an ndarray keeps its dtype
    assert pyframe.tensor([1.0, 2.0]).dtype == pyframe.float32  # Python floats: float32
    assert pyframe.as_tensor(a)._storage.owner is a  # as_tensor shares


@pytest.mark.parametrize(
    "call",
    [
        lambda: pyframe.zeros(2, dtype=pyframe.int32).clamp(min=2**40),
        lambda: pyframe.full((2,), 2**40, dtype=pyframe.int32),
        lambda: pyframe.zeros(2, dtype=pyframe.int32).fill_(2**40),
        lambda: pyframe.zeros(2, dtype=pyframe.int32).masked_fill(pyframe.tensor([True, False]), 2**40),
        lambda: pyframe.tensor([2**40], dtype=pyframe.int32),
        lambda: pyframe.tensor([1e10], dtype=pyframe.int32),
        lambda: pyframe.zeros(2, dtype=pyframe.int64) + 2**70,
        lambda: pyframe.full((2,), 2**63),
        lambda: pyframe.tensor(2**64),
        lambda: pyframe.tensor([2**63]),
    ],
)
def test_integers_out_of_the_dtype_range_are_refused_with_value_and_range(call):
    with pytest.raises(OverflowError, match=r"out of range for int(32|64) \(allowed: -\d+ to \d+\)"):
        call()


def test_integer_arithmetic_with_a_large_number_wraps_as_torch():
    assert (pyframe.zeros(2, dtype=pyframe.int32) + 2**40).tolist() == [0, 0]  # torch: tensor([0, 0], int32)


def test_non_finite_and_large_float_fills_work():
    assert all(math.isnan(v) for v in pyframe.full((2,), math.nan).tolist())
    assert pyframe.zeros(2).fill_(-math.inf).tolist() == [-math.inf] * 2
    assert pyframe.full_like(pyframe.zeros(2), math.inf).tolist() == [math.inf] * 2
    assert pyframe.nn.functional.pad(pyframe.zeros(2), (1, 1), value=-math.inf).tolist() == [
        -math.inf,
        0.0,
        0.0,
        -math.inf,
    ]
    assert pyframe.zeros(2).fill_(1e20).tolist() == [pytest.approx(1e20)] * 2
    assert (pyframe.zeros(1) + 2**70).item() == pytest.approx(2.0**70)
    assert pyframe.full((1,), 1e6, dtype=pyframe.float16).item() == math.inf  # float16 overflows to inf, as torch
    with pytest.raises(ValueError, match="nan cannot be converted to int64"):
        pyframe.zeros(1, dtype=pyframe.int64).fill_(math.nan)
    with pytest.raises(OverflowError, match=r"1e\+300 is out of range for float32 \(largest magnitude: 3.40282e\+38\)"):
        pyframe.full((1,), 1e300)


def test_huge_shapes_and_zero_d_splits_say_what_was_wrong():
    with pytest.raises(ValueError, match=r"shape \[0, 1099511627776, 1099511627776\] is too large"):
        pyframe.zeros(0, 2**40, 2**40)
    for fn in (lambda t: t.split(1), lambda t: t.chunk(1), lambda t: t.narrow(0, 0, 1), lambda t: t.unbind()):
        with pytest.raises(RuntimeError, match="cannot be applied to a 0-dim tensor"):
            fn(pyframe.tensor(1.0))
    with pytest.raises(ValueError, match=r"conv2d\(\): stride must be at most 2147483647"):
        pyframe.nn.functional.conv2d(pyframe.zeros(1, 1, 3, 3), pyframe.zeros(1, 1, 1, 1), stride=2**40)
    with pytest.raises(ValueError, match=r"max_pool2d\(\): stride must be at most"):
        pyframe.nn.functional.max_pool2d(pyframe.zeros(1, 1, 3, 3), 2, stride=2**40)
    with pytest.raises(ValueError, match=r"bilinear\(\): inputs must have the same number of dims, from 1 to 7"):
        pyframe.nn.functional.bilinear(pyframe.zeros(*[1] * 7, 2), pyframe.zeros(*[1] * 7, 2), pyframe.zeros(3, 2, 2))
    with pytest.raises(TypeError, match=r"narrow\(\): length must be an int, got bool"):
        pyframe.zeros(3).narrow(0, 0, True)


def test_strings_are_refused():
    with pytest.raises(TypeError, match="strings are refused"):
        pyframe.tensor(["False", "0"], dtype=pyframe.bool)


# torch takes a ``*size`` argument by its keyword too (pytorch/examples' gat: ``torch.empty(size=(n, m))``)
KEYWORD_SIZES = {
    "empty": lambda lib, x: lib.empty(size=(2, 3)),
    "zeros": lambda lib, x: lib.zeros(size=[2, 3]),
    "ones": lambda lib, x: lib.ones(size=(2, 3), dtype=lib.float64),
    "rand": lambda lib, x: lib.rand(size=(2, 3)),
    "randn": lambda lib, x: lib.randn(size=(2, 3)),
    "new_zeros": lambda lib, x: x.new_zeros(size=(2, 3)),
    "new_ones": lambda lib, x: x.new_ones(size=(2, 3)),
    "new_empty": lambda lib, x: x.new_empty(size=(2, 3)),
    "view": lambda lib, x: x.view(size=(3, 2)),
    "reshape": lambda lib, x: x.reshape(shape=(3, 2)),
    "torch.reshape": lambda lib, x: lib.reshape(x, shape=(6,)),
    "expand": lambda lib, x: x[:1].expand(size=(4, 3)),
    "repeat": lambda lib, x: x.repeat(repeats=(2, 1)),
    "permute": lambda lib, x: x.permute(dims=(1, 0)),
    "torch.permute": lambda lib, x: lib.permute(x, dims=[1, 0]),
}


@pytest.mark.parametrize("name", KEYWORD_SIZES)
def test_size_arguments_by_keyword_as_torch(name):
    torch = pytest.importorskip("torch")
    call = KEYWORD_SIZES[name]
    ours = call(pyframe, pyframe.arange(6.0).reshape(2, 3))
    theirs = call(torch, torch.arange(6.0).reshape(2, 3))
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype.name == str(theirs.dtype).split(".")[1]
    if name not in ("empty", "new_empty", "rand", "randn"):
        assert ours.tolist() == theirs.tolist()


def test_size_given_both_ways_is_a_type_error():
    with pytest.raises(TypeError, match="multiple values for argument 'size'"):
        pyframe.ones(2, size=(2,))
    with pytest.raises(TypeError, match="multiple values for argument 'dims'"):
        pyframe.ones(2, 3).permute(1, 0, dims=(1, 0))


def test_empty_strided_and_empty_permuted_lay_memory_out_as_asked():
    t = pyframe.empty_strided((2, 3), (1, 2), dtype=pyframe.float64)
    assert t.shape == (2, 3) and t.stride() == (1, 2) and not t.is_contiguous() and t.dtype == pyframe.float64
    t.copy_(pyframe.arange(6.0).reshape(2, 3))
    assert t.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert pyframe.empty_strided((2, 0), (5, 1)).numel() == 0
    n = pyframe.ones(1, dtype=pyframe.int32).new_empty_strided((4, 2), (1, 4))
    assert n.dtype == pyframe.int32 and n.stride() == (1, 4)
    # channels-last: t.stride(physical_layout[i]) is the i-th contiguous stride of the permuted shape
    p = pyframe.empty_permuted((2, 3, 4, 5), (0, 2, 3, 1))
    assert p.shape == (2, 3, 4, 5) and p.stride() == (60, 1, 15, 3)
    with pytest.raises(RuntimeError, match="mismatch in length"):
        pyframe.empty_strided((2, 3), (1,))
    with pytest.raises(RuntimeError, match="non-negative"):
        pyframe.empty_strided((2, 3), (1, -1))
    with pytest.raises(RuntimeError, match="permutation"):
        pyframe.empty_permuted((2, 3), (0, 0))
    with pytest.raises(ValueError, match="layout"):
        pyframe.empty_strided((2,), (1,), layout="sparse")


def test_as_tensor_takes_a_cpu_device():
    assert pyframe.as_tensor([1, 2], device="cpu").tolist() == [1, 2]
    with pytest.raises(Exception, match="cuda"):
        pyframe.as_tensor([1, 2], device="cuda")
