"""Bad input raises the right exception type with a message naming the shapes or values."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe

SHAPE_ERRORS = (ValueError, RuntimeError)


def test_shape_error_is_both_value_error_and_runtime_error():
    assert issubclass(pyframe.ShapeError, ValueError) and issubclass(pyframe.ShapeError, RuntimeError)


# ---- shapes ---------------------------------------------------------------------------------------------


def test_broadcasting_mismatch():
    with pytest.raises(SHAPE_ERRORS, match=r"\[2, 3\].*\[4\].*broadcast"):
        pyframe.ones(2, 3) + pyframe.ones(4)
    with pytest.raises(SHAPE_ERRORS, match=r"\[5, 1, 3\].*\[2, 4\]"):
        pyframe.maximum(pyframe.ones(5, 1, 3), pyframe.ones(2, 4))
    with pytest.raises(SHAPE_ERRORS, match=r"\[3\].*\[2\]"):
        pyframe.where(pyframe.ones(3, dtype=pyframe.bool), pyframe.ones(2), 0.0)
    with pytest.raises(SHAPE_ERRORS, match=r"\[2, 3\].*\[3, 2\]"):
        pyframe.ones(2, 3) == pyframe.ones(3, 2)  # noqa: B015


def test_matmul_shape_mismatch():
    with pytest.raises(SHAPE_ERRORS, match=r"\[2, 3\].*\[4, 5\].*2x3.*4x5"):
        pyframe.ones(2, 3) @ pyframe.ones(4, 5)
    with pytest.raises(SHAPE_ERRORS, match=r"\[3\].*\[4\]"):
        pyframe.matmul(pyframe.ones(3), pyframe.ones(4))
    with pytest.raises(SHAPE_ERRORS, match=r"\[2, 2, 3\].*\[3, 3, 4\]|\[2\].*\[3\]"):
        pyframe.ones(2, 2, 3) @ pyframe.ones(3, 3, 4)  # batch dims don't broadcast
    with pytest.raises(SHAPE_ERRORS, match=r"\[\].*\[3\]|at least 1 dim"):
        pyframe.matmul(pyframe.tensor(1.0), pyframe.ones(3))
    with pytest.raises(SHAPE_ERRORS, match=r"mm.*2-d.*\[3\]"):
        pyframe.mm(pyframe.ones(3), pyframe.ones(3, 3))
    with pytest.raises(SHAPE_ERRORS, match=r"bmm.*\[2, 3, 4\].*\[3, 4, 5\]"):
        pyframe.bmm(pyframe.ones(2, 3, 4), pyframe.ones(3, 4, 5))


def test_reshape_and_view_to_wrong_size():
    x = pyframe.ones(2, 3)
    with pytest.raises(SHAPE_ERRORS, match=r"shape \[4, 2\] is invalid for input of size 6"):
        x.reshape(4, 2)
    with pytest.raises(SHAPE_ERRORS, match=r"\[-1, 4\] is invalid for input of size 6"):
        x.view(-1, 4)
    with pytest.raises(SHAPE_ERRORS, match=r"only one dimension can be inferred.*\[-1, -1\]"):
        x.reshape(-1, -1)
    with pytest.raises(SHAPE_ERRORS, match=r"invalid shape dimension -2"):
        x.reshape(-2, -3)


def test_view_incompatible_with_strides():
    x = pyframe.ones(4, 6)[:, :3]
    with pytest.raises(SHAPE_ERRORS, match=r"view size \[12\].*size \[4, 3\].*stride \[6, 1\]"):
        x.view(12)
    assert x.reshape(12).shape == (12,)
    assert pyframe.ones(4, 6)[:, ::2].view(12).stride() == (2,)  # one stride covers it: a view, as torch
    with pytest.raises(SHAPE_ERRORS, match=r"\[2, 3\].*stride \[1, 2\]"):
        pyframe.ones(3, 2).T.view(6)


def test_join_and_split_shape_errors():
    with pytest.raises(SHAPE_ERRORS, match=r"\[2, 3\].*\[2, 4\].*tensor 1"):
        pyframe.cat([pyframe.ones(2, 3), pyframe.ones(2, 4)], dim=0)
    with pytest.raises(SHAPE_ERRORS, match=r"\[2, 3\].*\[2, 3, 1\]"):
        pyframe.cat([pyframe.ones(2, 3), pyframe.ones(2, 3, 1)])
    with pytest.raises(SHAPE_ERRORS, match="zero-dimensional"):
        pyframe.cat([pyframe.tensor(1.0), pyframe.tensor(2.0)])
    with pytest.raises(ValueError, match="non-empty"):
        pyframe.cat([])
    with pytest.raises(SHAPE_ERRORS, match=r"\[2\].*\[3\].*entry 1"):
        pyframe.stack([pyframe.ones(2), pyframe.ones(3)])
    with pytest.raises(SHAPE_ERRORS, match=r"\[1, 1\].*size 3"):
        pyframe.ones(3).split([1, 1])
    with pytest.raises(ValueError, match="chunks must be positive, got 0"):
        pyframe.ones(3).chunk(0)
    with pytest.raises(TypeError, match="position 1"):
        pyframe.cat([pyframe.ones(1), [1.0]])


def test_expand_and_permute_errors():
    with pytest.raises(SHAPE_ERRORS, match=r"expanded size 4.*existing size 3.*\[2, 3\]"):
        pyframe.ones(2, 3).expand(2, 4)
    with pytest.raises(SHAPE_ERRORS, match=r"number of sizes 1.*2"):
        pyframe.ones(2, 3).expand(3)
    with pytest.raises(SHAPE_ERRORS, match=r"permute.*3.*2"):
        pyframe.ones(2, 3).permute(0, 1, 2)
    with pytest.raises(SHAPE_ERRORS, match=r"repeated dim.*\[0, 0\]"):
        pyframe.ones(2, 3).permute(0, 0)
    with pytest.raises(SHAPE_ERRORS, match="<= 2 dims, got 3"):
        pyframe.ones(2, 3, 4).t()


# ---- indices and dims ----------------------------------------------------------------------------------------


def test_out_of_range_index():
    x = pyframe.ones(3, 4)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        x[5]
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 1 with size 4"):
        x[0, -5]
    with pytest.raises(IndexError, match="index 4 is out of bounds for dimension 0 with size 3|index 4"):
        x[[0, 4]]
    with pytest.raises(IndexError, match="out of bounds"):
        x[[0, 1], [1, 9]] = 1.0
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        x.select(0, 3)
    with pytest.raises(IndexError, match=r"start 3 \+ length 2 exceeds dimension 1 of size 4"):
        x.narrow(1, 3, 2)
    with pytest.raises(IndexError, match="index 7 is out of range|out of bounds|7"):
        x.index_select(0, pyframe.tensor([0, 7]))


@pytest.mark.parametrize(
    "call",
    [
        lambda x: x.sum(3), lambda x: x.mean(-4), lambda x: x.transpose(0, 3), lambda x: x.unsqueeze(4),
        lambda x: x.unsqueeze(-5), lambda x: x.squeeze(3), lambda x: x.softmax(3), lambda x: x.max(3),
        lambda x: x.argmax(-4), lambda x: pyframe.cat([x, x], 3), lambda x: x.size(3), lambda x: x.split(1, 5),
        lambda x: x.flatten(0, 3), lambda x: x.norm(dim=3), lambda x: x.var(3), lambda x: x.permute(0, 1, 3),
    ],
    ids=["sum", "mean", "transpose", "unsqueeze", "unsqueeze_neg", "squeeze", "softmax", "max", "argmax", "cat",
         "size", "split", "flatten", "norm", "var", "permute"],
)  # fmt: skip
def test_out_of_range_dim(call):
    with pytest.raises(
        IndexError, match=r"Dimension out of range \(expected to be in range of \[-\d, \d\], but got -?\d\)"
    ):
        call(pyframe.ones(2, 3, 4))


def test_dim_must_be_an_int():
    with pytest.raises(TypeError, match="dim must be an int, got float"):
        pyframe.ones(2).sum(0.5)


# ---- dtypes ---------------------------------------------------------------------------------------------------


def test_unsupported_dtype_combinations():
    b = pyframe.tensor([True, False])
    with pytest.raises(TypeError, match="sub.*bool"):
        b - b
    with pytest.raises(TypeError, match="sub.*bool"):
        pyframe.sub(b, True)
    with pytest.raises(TypeError, match="neg.*bool"):
        _ = -b
    with pytest.raises(TypeError, match="bitwise_not.*float32"):
        _ = ~pyframe.ones(2)
    with pytest.raises(TypeError, match="bool"):
        pyframe.ones(2) & pyframe.ones(2)
    with pytest.raises(TypeError, match="where.*condition.*bool.*float32"):
        pyframe.where(pyframe.ones(2), 1.0, 0.0)
    with pytest.raises(TypeError, match="mask.*bool"):
        pyframe.ones(2).masked_fill(pyframe.ones(2), 1.0)
    with pytest.raises(IndexError, match="float32"):
        pyframe.ones(3).index_select(0, pyframe.tensor([0.0]))


@pytest.mark.parametrize(
    ("target", "other"),
    [("int64", 1.5), ("int64", pyframe.ones(3)), ("int32", pyframe.ones(3, dtype=pyframe.float16)),
     ("bool", 2), ("bool", pyframe.ones(3, dtype=pyframe.int32))],
    ids=["int64+=float", "int64+=f32", "int32+=f16", "bool+=int", "bool+=i32"],
)  # fmt: skip
def test_inplace_cannot_downcast_category(target, other):
    x = pyframe.zeros(3, dtype=target)
    with pytest.raises((TypeError, RuntimeError), match=f"add_.*can't be cast.*{target}"):
        x.add_(other)
    with pytest.raises((TypeError, RuntimeError), match=f"can't be cast.*{target}"):
        x += other
    assert x.tolist() == [0, 0, 0]


def test_unknown_dtypes():
    with pytest.raises(TypeError, match=r"unsupported dtype 'complex64'.*float32"):
        pyframe.zeros(2, dtype="complex64")
    with pytest.raises(TypeError, match="unsupported dtype"):
        pyframe.ones(2).to(np.uint16)


@pytest.mark.parametrize(
    "np_dtype",
    [np.complex64, np.complex128, np.uint16, np.uint32, np.uint64, np.float128]
    if hasattr(np, "float128")
    else [np.complex64, np.complex128, np.uint16, np.uint32, np.uint64],
)
def test_numpy_array_of_unsupported_dtype(np_dtype):
    a = np.zeros(3, dtype=np_dtype)
    with pytest.raises(TypeError, match=f"dtype {np.dtype(np_dtype).name}.*supported dtypes are float32"):
        pyframe.from_numpy(a)
    with pytest.raises(TypeError, match=np.dtype(np_dtype).name):
        pyframe.tensor(a)


def test_from_numpy_rejects_non_arrays():
    with pytest.raises(TypeError, match="expected np.ndarray, got list"):
        pyframe.from_numpy([1, 2])


def test_numpy_array_with_negative_strides():
    a = np.arange(6.0)
    with pytest.raises(ValueError, match=r"negative strides \(-8,\)"):
        pyframe.from_numpy(a[::-1])
    with pytest.raises(ValueError, match="negative strides"):
        pyframe.from_numpy(np.arange(6).reshape(2, 3)[:, ::-1])
    assert pyframe.tensor(a[::-1]).tolist() == [5.0, 4.0, 3.0, 2.0, 1.0, 0.0]  # tensor() copies


def test_tensor_from_bad_data():
    with pytest.raises(ValueError, match="irregular shape"):
        pyframe.tensor([[1, 2], [3]])
    with pytest.raises(TypeError, match="str|mixed|unsupported|kind"):
        pyframe.tensor(["a", "b"])
    with pytest.raises(ValueError, match="non-finite.*int64"):
        pyframe.tensor([1.0, float("nan")], dtype=pyframe.int64)
    with pytest.raises(ValueError, match="cuda"):
        pyframe.tensor([1.0], device="cuda")
    with pytest.raises(TypeError, match="sizes or one sequence"):
        pyframe.Tensor([1, 2], [3])  # torch's legacy Tensor(data) / Tensor(*sizes), nothing else


# ---- more than 8 dims --------------------------------------------------------------------------------------


def test_more_than_eight_dims():
    nine = [1] * 9
    for make in (pyframe.zeros, pyframe.ones, pyframe.empty, pyframe.rand, pyframe.randn):
        with pytest.raises(ValueError, match=r"at most 8 dims, got 9"):
            make(*nine)
    with pytest.raises(ValueError, match=r"at most 8 dims, got 9"):
        pyframe.full(nine, 1.0)
    eight = pyframe.zeros(*[1] * 8)
    assert eight.ndim == 8
    with pytest.raises(ValueError, match=r"at most 8 dims, got 9"):
        eight.reshape(nine)
    with pytest.raises(ValueError, match=r"at most 8 dims, got 9"):
        eight.view(*nine)
    with pytest.raises(ValueError, match=r"at most 8 dims, got 9"):
        eight.unsqueeze(0)
    with pytest.raises(ValueError, match=r"at most 8 dims, got 9"):
        eight[None]
    with pytest.raises(ValueError, match=r"at most 8 dims, got 9"):
        eight.expand(*[2] + [1] * 8)
    with pytest.raises(ValueError, match=r"at most 8 dims, got 9"):
        pyframe.from_numpy(np.zeros(nine))
    with pytest.raises(ValueError, match=r"at most 8 dims, got 9"):
        pyframe.tensor(np.zeros(nine))
    with pytest.raises(ValueError, match=r"at most 8 dims, got 9"):
        pyframe.stack([eight, eight])
    with pytest.raises(ValueError, match=r"at most 8 dims"):
        pyframe.randint(0, 2, tuple(nine))


# ---- factories and random ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("low", "high"), [(0, float("inf")), (float("nan"), 5), (float("-inf"), 0), (0, float("nan"))])
def test_randint_non_finite_bounds(low, high):
    with pytest.raises(ValueError, match=r"finite.*(inf|nan)"):
        pyframe.randint(low, high, (3,))


def test_randint_other_bad_bounds():
    with pytest.raises(ValueError, match="low=5, high=5"):
        pyframe.randint(5, 5, (3,))
    with pytest.raises(ValueError, match=r"integers.*0\.5"):
        pyframe.randint(0.5, 3, (2,))
    with pytest.raises(ValueError, match=r"outside the range.*int32"):
        pyframe.randint(0, 2**40, (2,), dtype=pyframe.int32)
    with pytest.raises(TypeError, match="size"):
        pyframe.randint(0, 5)


def test_random_fill_bad_parameters():
    with pytest.raises(ValueError, match="a=2.*b=1"):
        pyframe.empty(3).uniform_(2, 1)
    with pytest.raises(ValueError, match="std.*-1"):
        pyframe.empty(3).normal_(0, -1)
    with pytest.raises(ValueError, match="finite"):
        pyframe.empty(3).uniform_(0, float("inf"))


def test_factory_bad_sizes():
    with pytest.raises(ValueError, match=r"negative dimension -1 in size \[2, -1\]"):
        pyframe.zeros(2, -1)
    with pytest.raises(TypeError, match=r"sizes must be ints, got float"):
        pyframe.ones(2.5)
    with pytest.raises(ValueError, match="steps.*-1"):
        pyframe.linspace(0, 1, -1)


# ---- conversions and misc ------------------------------------------------------------------------------------


def test_conversion_errors():
    with pytest.raises(RuntimeError, match="3 elements cannot be converted to Scalar"):
        pyframe.ones(3).item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(pyframe.ones(2))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(pyframe.ones(0))
    for convert in (float, int, complex):  # ValueError, as torch (code catching it relies on the type)
        with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
            convert(pyframe.ones(2))
    assert (float(pyframe.tensor([2.5])), int(pyframe.tensor(7)), complex(pyframe.tensor(1.5))) == (2.5, 7, 1.5 + 0j)
    with pytest.raises(TypeError, match="len.*0-d"):
        len(pyframe.tensor(1.0))
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(pyframe.tensor(1.0))
    with pytest.raises(TypeError, match="integer tensors of a single element"):
        [1, 2][pyframe.tensor(1.0)]
    with pytest.raises(TypeError, match="unexpected keyword"):
        pyframe.ones(2).to(pyframe.float64, foo=1)


def test_operands_of_wrong_type():
    with pytest.raises(TypeError):
        pyframe.ones(2) + "a"
    with pytest.raises(TypeError, match="expected a Tensor, got list"):
        pyframe.exp([1.0])
    with pytest.raises(TypeError, match="matmul.*Tensor.*list"):
        pyframe.matmul(pyframe.ones(2), [1.0, 2.0])
    assert (pyframe.ones(2) == None) is False  # noqa: E711 - Python's fallback, as torch
    with pytest.raises(ValueError, match="at least one of min and max"):
        pyframe.ones(2).clamp()
    with pytest.raises(ValueError, match="set_num_threads expects a positive int, got 0"):
        pyframe.set_num_threads(0)
    with pytest.raises(ValueError, match="norm: unsupported p='abc'"):
        pyframe.ones(2).norm("abc")
    assert pyframe.ones(4).norm(-1).item() == pytest.approx(0.25)  # torch's: (sum |x|^p)^(1/p) for p < 0 too


def test_softmax_of_integers_and_mean_of_integers():
    with pytest.raises((TypeError, RuntimeError), match="softmax.*int64"):
        pyframe.softmax(pyframe.tensor([1, 2]), 0)
    with pytest.raises((TypeError, RuntimeError), match="mean.*int64"):
        pyframe.tensor([1, 2]).mean()


def test_failed_call_leaves_no_partial_result():
    x = pyframe.zeros(2, 3)
    with pytest.raises(SHAPE_ERRORS):
        x.copy_(pyframe.ones(3, 2))
    with pytest.raises(SHAPE_ERRORS):
        x[:, 0] = pyframe.ones(3)
    assert x.tolist() == [[0.0] * 3] * 2
