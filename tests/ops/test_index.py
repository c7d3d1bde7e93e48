"""Indexing: getitem/setitem against NumPy for every key kind (ints, slices, None, Ellipsis, bools, index lists,
tensors and every Python sequence torch accepts), copies vs views, version bumps; index_select, gather, nonzero,
take_along_dim, masked_select, scatter, index_fill/copy and tril/triu_indices against torch; bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    npy,
    pf,
)
from tests._tables import torch_case_table_test

A = np.arange(24, dtype=np.float32).reshape(4, 6)

_A = np.arange(120).reshape(2, 3, 4, 5)


# keys whose result NumPy and PyTorch agree on
KEYS = {
    "list": ([0, 1],),
    "list_repeat": ([1, 1, 0],),
    "list_neg": (slice(None), [2, 0, -1]),
    "two_adjacent": (slice(None), [0, 2], [1, 3]),
    "two_adjacent_broadcast": (slice(None), slice(None), [[1], [2]], [0, 3]),
    "non_adjacent": ([1, 0], slice(None), [3, -1]),
    "non_adjacent_2d": (slice(None), [[0, 1], [2, 2]], slice(None), [1, 0]),
    "all_four": ([0, 1], [0, 2], [1, 3], [0, 4]),
    "leading": ([1, 0], [2, 1]),
    "ellipsis_last": (Ellipsis, [4, 0]),
    "none_then_list": (None, [1], Ellipsis),
    "slice_then_list": ([-1, -2], slice(1, None, 2)),
    "2d_index": (np.array([[1, 0], [0, 1]]),),
    "int_between_lists": ([0, 1], 1, [2, 3]),
    "int_before_list": (0, [1, 2], slice(None), 3),
    "empty_list": ([],),
    "empty_in_dim": (slice(None), []),
    "ndarray_int32": (slice(None), np.array([2, 0], dtype=np.int32)),
    "scalar_array": (np.array(1),),
    "mask_full": (_A % 3 == 0,),
    "mask_leading": (np.array([True, False]),),
    "mask_middle": (slice(None), np.array([True, False, True])),
    "mask_2d": (np.array([[True, False, True], [False, False, True]]),),
    "mask_and_list": (np.array([False, True]), slice(None), [0, 3]),
    "mask_none": (np.zeros((2, 3), dtype=bool),),
    "mask_0d_true": (slice(None), np.array(True)),
    "python_true": (slice(None), True, 1),
    "python_false": (False, Ellipsis),
}


def _as_pyframe_key(key):
    out = []
    for k in key:
        if isinstance(k, np.ndarray):
            out.append(pyframe.tensor(k))
        else:
            out.append(k)
    return tuple(out)


SET_KEYS = {
    "int": (1,),
    "slice": (slice(None), slice(1, 3)),
    "step": (slice(None), slice(None), slice(None, None, 2)),
    "ellipsis": (Ellipsis, 1),
    "none": (None, 0),
    "list": ([1, 0],),
    "list_dim1": (slice(None), [2, 0]),
    "two_lists": (slice(None), [0, 2], [1, 3]),
    "two_lists_broadcast": (slice(None), slice(None), [[1], [2]], [0, 3]),
    "non_adjacent": ([1, 0], slice(None), [3, -1]),
    "ellipsis_list": (Ellipsis, [4, 0]),
    "int_between_lists": ([0, 1], 1, [2, 3]),
    "mask_full": (_A % 3 == 0,),
    "mask_leading": (np.array([True, False]),),
    "mask_middle": (slice(None), np.array([True, False, True])),
    "mask_2d": (np.array([[True, False, True], [False, False, True]]),),
}


def x():
    return pyframe.tensor(A)


def same(got, ref):
    np.testing.assert_array_equal(got.numpy(), ref)


def test_range_and_lists_index_like_numpy():
    same(x()[range(2)], A[:2])
    same(x()[range(1, 4, 2)], A[1:4:2])
    same(x()[:, range(1, 3)], A[:, 1:3])
    same(x()[[3, 0, 3]], A[[3, 0, 3]])
    same(x()[[True, False, True, False]], A[[True, False, True, False]])
    same(x()[(0, 2), :], A[(0, 2), :])
    same(x()[[[0, 1], [2, 3]], 1], A[[[0, 1], [2, 3]], 1])  # a nested list inside a tuple key: a 2-d index
    same(x()[np.array([1, 2])], A[[1, 2]])
    same(x()[range(0)], A[[]])


def test_sequences_read_as_tuples_as_torch():
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        same(x()[[[0, 1], [2, 3]]], A[[0, 1], [2, 3]])
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        same(x()[[(0, 1), (1, 2)]], A[[0, 1], [1, 2]])
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        same(x()[[0, slice(None)]], A[0, :])
    with pytest.warns(UserWarning, match="non-tuple sequence"):
        assert x()[[pyframe.tensor(1), pyframe.tensor(2)]].item() == A[1, 2]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same(x()[[1, 2]], A[[1, 2]])  # a flat list of ints is an index, no warning


def test_sequence_setitem_and_gradient():
    t = x()
    t[range(2)] = 0.0
    assert t[:2].abs().sum().item() == 0 and t[2:].sum().item() == A[2:].sum()
    w = pyframe.tensor(A.astype(np.float64), requires_grad=True)
    w[range(1, 3)].sum().backward()
    ref = np.zeros_like(A)
    ref[1:3] = 1
    same(w.grad.float(), ref)


def test_bad_sequences():
    with pytest.raises(IndexError, match="out of bounds"):
        x()[range(5)]
    with pytest.raises(IndexError):
        x()[[0.5, 1]]
    with pytest.raises(IndexError, match="irregular"):
        x()[[[0, 1], [2]], 0]


# ---- NumPy arrays in checkpoints ----------------------------------------------------------------


# ---- t.grad = x ----------------------------------------------------------------------------


def test_index_select_rows_match_numpy_and_check_bounds():
    x = pyframe.randn(5, 3, 2)
    idx = pyframe.tensor([4, -1, 0, 4])
    np.testing.assert_array_equal(x[idx].numpy(), x.numpy()[[4, -1, 0, 4]])
    np.testing.assert_array_equal(pyframe.index_select(x, 0, idx.abs()).numpy(), x.numpy()[[4, 1, 0, 4]])
    with pytest.raises(IndexError, match="negative"):  # x[idx] wraps, index_select refuses (as torch)
        pyframe.index_select(x, 0, idx)
    for bad in (5, -6):
        with pytest.raises(IndexError, match="out of bounds"):
            x[pyframe.tensor([0, bad])]
    assert tuple(pyframe.randn(0, 3)[pyframe.tensor([], dtype=pyframe.int64)].shape) == (0, 3)
    w = pyframe.randn(5, 3, requires_grad=True)
    w[idx].sum().backward()
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [1, 0, 0, 0, 3])


@pytest.mark.parametrize("name", list(KEYS))
@pytest.mark.parametrize("as_tensor", [False, True], ids=["lists", "tensors"])
def test_getitem_matches_numpy(name, as_tensor):
    key = KEYS[name]
    t = pf(_A)
    got = t[_as_pyframe_key(key) if as_tensor else key]
    expected = _A[key]
    assert tuple(got.shape) == expected.shape
    np.testing.assert_array_equal(npy(got), expected)
    # on a transposed (non-contiguous) tensor too
    got_t = pf(_A.T.copy()).permute(3, 2, 1, 0)[key]
    np.testing.assert_array_equal(npy(got_t), expected)


def test_advanced_index_result_is_a_copy():
    t = pf(_A)
    g = t[[0, 1]]
    g.fill_(-1)
    np.testing.assert_array_equal(npy(t), _A)


def test_integer_with_advanced_indices_follows_torch_not_numpy():
    # torch applies a plain int as a select first, so the remaining advanced indices can be
    # adjacent; NumPy treats the int as one more advanced index
    t = pf(_A)
    assert t[1, :, [0, 1], [[2], [3]]].shape == (3, 2, 2)  # NumPy: (2, 2, 3)
    assert t[:, 1, :, [0, 2]].shape == (2, 4, 2)  # NumPy: (2, 2, 4)
    np.testing.assert_array_equal(npy(t[:, 1, :, [0, 2]]), _A[:, 1][..., [0, 2]])
    torch = pytest.importorskip("torch")
    tt = torch.tensor(_A)
    for key in ((1, slice(None), [0, 1], [[2], [3]]), (slice(None), 1, slice(None), [0, 2]), (1, Ellipsis, [0, 1])):
        np.testing.assert_array_equal(npy(t[key]), tt[key].numpy())


@pytest.mark.parametrize("key", [(2,), (0, 3), (slice(None), [0, 3]), ([0, -3],), (slice(None), slice(None), [4])],
                         ids=["int", "int2", "list", "list_neg", "list_dim2"])  # fmt: skip
def test_getitem_out_of_range(key):
    t = pyframe.zeros(2, 3, 4)
    with pytest.raises(IndexError, match="out of bounds|out of range"):
        t[key]


def test_getitem_bad_keys():
    t = pyframe.zeros(2, 3)
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(IndexError, match="mask"):
        t[pyframe.tensor([True, False, True])]
    with pytest.raises(IndexError, match="(?i)float32|valid indices"):
        t[pyframe.tensor([0.0])]
    with pytest.raises(IndexError, match="valid indices"):
        t["a"]
    with pytest.raises(ValueError, match="step"):
        t[::-1]


@pytest.mark.parametrize("name", list(SET_KEYS))
@pytest.mark.parametrize("value", ["scalar", "full", "broadcast_last", "broadcast_1", "other_dtype"])
def test_setitem_matches_numpy(name, value):
    key = SET_KEYS[name]
    expected = _A.copy()
    t = pf(_A)
    target_shape = _A[key].shape
    if value == "scalar":
        v_np, v = -7, -7
    elif value == "full":
        v_np = -np.arange(int(np.prod(target_shape))).reshape(target_shape) - 1
        v = pf(v_np)
    elif value == "broadcast_last":
        if not target_shape:
            return
        v_np = -np.arange(target_shape[-1]) - 1
        v = pf(v_np)
    elif value == "broadcast_1":
        v_np = np.array([[-3]])[: len(target_shape)].reshape((1,) * min(len(target_shape), 2))
        v = pf(v_np)
    else:
        v_np, v = np.array(-2.75), pyframe.tensor(-2.75, dtype=pyframe.float64)  # cast to int64: truncated
        v_np = np.trunc(v_np).astype(np.int64)
    expected[key] = v_np
    t[key] = v
    np.testing.assert_array_equal(npy(t), expected)
    assert t.dtype == pyframe.int64


def test_setitem_through_a_view_and_on_a_view():
    t = pyframe.zeros(4, 6)
    v = t[:, ::2]
    v[[0, 2]] = pyframe.tensor([1.0, 2.0, 3.0])
    v[v > 2] = -1.0
    expected = np.zeros((4, 6), np.float32)
    expected[[0, 2], ::2] = [1.0, 2.0, -1.0]
    np.testing.assert_array_equal(npy(t), expected)
    tt = pyframe.zeros(3, 4).T  # non-contiguous target with advanced indexing
    tt[[1, 3], 1] = 5.0
    assert tt.T.tolist()[1] == [0.0, 5.0, 0.0, 5.0]


def test_setitem_with_repeated_index_last_write_wins():
    t = pyframe.zeros(3)
    t[[0, 0, 2]] = pyframe.tensor([1.0, 2.0, 3.0])
    assert t.tolist() == [2.0, 0.0, 3.0]


def test_setitem_value_shape_mismatch():
    t = pyframe.zeros(3, 4)
    with pytest.raises((ValueError, RuntimeError), match=r"\[3\]|\[2, 4\]|3"):
        t[[0, 1]] = pyframe.ones(3)
    with pytest.raises((ValueError, RuntimeError), match=r"\[4\]|\[3\]"):
        t[:, 0] = pyframe.ones(4)


def test_setitem_bumps_version_and_mask_selects():
    t = pyframe.tensor([1.0, -2.0, 3.0, -4.0])
    v0 = t._version
    t[t < 0] = 0.0
    assert t.tolist() == [1.0, 0.0, 3.0, 0.0]
    assert t._version > v0
    assert t[t > 0].tolist() == [1.0, 3.0]
    assert t[pyframe.tensor(True)].shape == (1, 4)  # a 0-d mask adds a dim, as NumPy and torch
    assert t[pyframe.tensor(False)].shape == (0, 4)
    assert t[True].shape == (1, 4) and t[False, 1:].shape == (0, 3) and t[None, True].shape == (1, 1, 4)
    t[pyframe.tensor(False)] = 5.0
    assert t.tolist() == [1.0, 0.0, 3.0, 0.0]
    t[True] = 2.0
    assert t.tolist() == [2.0] * 4


def test_index_select_gather_nonzero():
    t = pf(np.arange(12).reshape(3, 4))
    assert t.index_select(1, pyframe.tensor([3, 0])).tolist() == [[3, 0], [7, 4], [11, 8]]
    assert pyframe.gather(t, 1, pyframe.tensor([[0, 0], [1, 0], [3, 2]])).tolist() == [[0, 0], [5, 4], [11, 10]]
    nz = pyframe.nonzero(pyframe.tensor([[0, 1], [2, 0]]))
    assert nz.tolist() == [[0, 1], [1, 0]]
    rows, cols = pyframe.tensor([[0, 1], [2, 0]]).nonzero(as_tuple=True)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0]


# ---- against torch: name -> (function of the library and the inputs, input arrays) ----------------------

RNG = np.random.default_rng(35)


def arr(*shape):
    return RNG.uniform(-2.0, 2.0, shape)


IDX = np.array([[1, 0, 2], [0, 2, 1]])
TORCH_CASES = {
    "take_along_dim": (lambda L, a: L.take_along_dim(a, L.tensor(IDX), dim=1), (arr(2, 3),)),
    "masked_select": (lambda L, a: L.masked_select(a, a > 0), (arr(3, 4),)),
    "scatter_src": (lambda L, a, s: L.scatter(a, 1, L.tensor(IDX), s), (arr(2, 3), arr(2, 3))),
    "scatter_value": (lambda L, a: a.scatter(0, L.tensor([[1, 0, 1]]), 2.5), (arr(2, 3),)),
    "scatter_add_reduce": (
        lambda L, a, s: L.scatter(a.detach(), 1, L.tensor(IDX), s.detach(), reduce="add"),
        (arr(2, 3), arr(2, 3)),
    ),
    "index_fill": (lambda L, a: a.index_fill(1, L.tensor([0, 2]), -1.0), (arr(2, 3),)),
    "index_copy": (lambda L, a, s: a.index_copy(0, L.tensor([2, 0]), s), (arr(3, 2), arr(2, 2))),
}  # fmt: skip


test_matches_torch_values_and_gradients = torch_case_table_test(TORCH_CASES)


def test_tril_triu_indices_match_torch():
    torch = pytest.importorskip("torch")
    for fn in (lambda L: L.tril_indices(4, 3, -1), lambda L: L.triu_indices(3, 4, 1)):
        np.testing.assert_array_equal(fn(pyframe).numpy(), fn(torch).numpy())


def test_select_and_scatter_helpers_bad_input():
    with pytest.raises(TypeError, match="bool"):
        pyframe.masked_select(pyframe.zeros(2), pyframe.tensor([1, 0]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        pyframe.take_along_dim(pyframe.zeros(2, 2), pyframe.tensor([0]), dim=0)
    with pytest.raises(TypeError, match="src"):
        pyframe.zeros(2).scatter_(0, pyframe.tensor([0]))
    with pytest.raises(RuntimeError, match="as many dims"):
        pyframe.zeros(2, 2).scatter(1, pyframe.tensor([0]), 1.0)


def test_scatters_read_their_source_before_writing():
    idx = pyframe.tensor([1, 2, 3, 0])
    x = pyframe.arange(4.0)
    x[idx] = x
    assert x.tolist() == [3.0, 0.0, 1.0, 2.0]
    x = pyframe.arange(4.0)
    x.index_add_(0, idx, x)
    assert x.tolist() == [3.0, 1.0, 3.0, 5.0]
    x = pyframe.arange(4.0)
    x.scatter_add_(0, idx, x)
    assert x.tolist() == [3.0, 1.0, 3.0, 5.0]
    i = pyframe.tensor([1, 0])  # the index itself aliases the destination
    i.index_add_(0, i, pyframe.tensor([10, 20]))
    assert i.tolist() == [21, 10]


def test_setitem_range_check():
    x = pyframe.zeros(2, dtype=pyframe.int32)
    with pytest.raises(RuntimeError, match="1099511627776 is out of range for int32"):
        x[0] = 2**40
    assert x.tolist() == [0, 0]


@pytest.mark.parametrize(
    "shape, key",
    [
        ((3,), (True, False)),
        ((3,), (True, True)),
        ((3, 4), (0, True, False)),
        ((3, 4), (Ellipsis, True, True)),
        ((2, 0, 3), (0, [], Ellipsis, True)),
        ((3, 3, 1), ([], False)),
        ((3, 4), (True, slice(None), [1])),
    ],
)
def test_bool_scalar_indices_match_torch(shape, key):
    torch = pytest.importorskip("torch")
    tkey = tuple(torch.tensor(k, dtype=torch.long) if isinstance(k, list) else k for k in key)
    n = math.prod(shape)
    want = torch.arange(float(n)).reshape(shape)[tkey]
    got = pyframe.arange(float(n)).reshape(*shape)[key]
    assert tuple(got.shape) == tuple(want.shape) and got.tolist() == want.tolist()


# x[key] = value with extra leading size-1 dims on the value (``out[i] = net(x[i:i+1])``), against torch over
# every kind of key; the value's gradient comes back in its own shape. M is the library.
SETITEM_KEYS = {
    "int": lambda M: 0,
    "neg_int": lambda M: -1,
    "slice": lambda M: slice(1, 3),
    "step": lambda M: slice(0, 4, 2),
    "ellipsis": lambda M: Ellipsis,
    "int_slice": lambda M: (0, slice(None)),
    "none": lambda M: None,
    "mask_rows": lambda M: M.tensor([True, False, True, False]),
    "mask_full": lambda M: M.ones(4, 3, dtype=M.bool),
    "list": lambda M: [0, 2],
    "tensor_index": lambda M: M.tensor([1, 3]),
    "list_pair": lambda M: ([0, 1], [1, 2]),
    "ellipsis_int": lambda M: (Ellipsis, 1),
    "slice_list": lambda M: (slice(None), [0, 2]),
    "int_int": lambda M: (1, 2),
    "empty_list": lambda M: [],
    "empty_slice": lambda M: slice(2, 2),
}
SETITEM_VALUES = {
    "lead1": lambda M, s: M.arange(1.0, 1.0 + math.prod(s)).reshape((1,) + s),
    "lead11": lambda M, s: M.arange(1.0, 1.0 + math.prod(s)).reshape((1, 1) + s),
    "row": lambda M, s: M.arange(1.0, 1.0 + (s[-1] if s else 1)).reshape(1, s[-1] if s else 1),
    "lead2": lambda M, s: M.zeros((2,) + s),  # refused by both: only size-1 dims are dropped
}


def _assign(M, key_name, value_name):
    x = M.arange(12.0).reshape(4, 3).requires_grad_(True)
    y = x * 1.0
    key = SETITEM_KEYS[key_name](M)
    value = SETITEM_VALUES[value_name](M, tuple(y[key].shape)).requires_grad_(True)
    try:
        y[key] = value
    except Exception:  # noqa: BLE001 - a refusal is compared with torch's
        return "refused"
    (y * M.arange(1.0, 13.0).reshape(4, 3)).sum().backward()
    return [np.array(t.detach().numpy()).tolist() for t in (y, value.grad, x.grad)]


@pytest.mark.parametrize("value_name", sorted(SETITEM_VALUES))
@pytest.mark.parametrize("key_name", sorted(SETITEM_KEYS))
def test_setitem_drops_leading_unit_dims_of_the_value_as_torch(key_name, value_name):
    torch = pytest.importorskip("torch")
    want = _assign(torch, key_name, value_name)
    assert _assign(pyframe, key_name, value_name) == want


# torch's one rule for negative indices: the ops taking an index tensor along a dim refuse them, Python indexing,
# index_fill and take_along_dim wrap [-size, 0) once; out of range is refused everywhere. M is the library.
NEGATIVE_INDEX_OPS = {
    "gather": lambda M, i: M.gather(M.arange(6.0).reshape(2, 3), 1, M.tensor([[i], [0]])),
    "scatter_": lambda M, i: M.zeros(2, 3).scatter_(1, M.tensor([[i], [0]]), M.ones(2, 1)),
    "scatter_value": lambda M, i: M.zeros(2, 3).scatter_(1, M.tensor([[i], [0]]), 5.0),
    "scatter_add_": lambda M, i: M.zeros(2, 3).scatter_add_(1, M.tensor([[i], [0]]), M.ones(2, 1)),
    "scatter": lambda M, i: M.scatter(M.zeros(2, 3), 1, M.tensor([[i], [0]]), M.ones(2, 1)),
    "index_add_": lambda M, i: M.zeros(3).index_add_(0, M.tensor([i]), M.ones(1)),
    "index_copy_": lambda M, i: M.zeros(3).index_copy_(0, M.tensor([i]), M.ones(1)),
    "index_copy": lambda M, i: M.index_copy(M.zeros(3), 0, M.tensor([i]), M.ones(1)),
    "index_select": lambda M, i: M.index_select(M.arange(3.0), 0, M.tensor([i])),
    "index_fill_": lambda M, i: M.zeros(3).index_fill_(0, M.tensor([i]), 1.0),
    "take_along_dim": lambda M, i: M.take_along_dim(M.arange(3.0), M.tensor([i]), 0),
    "getitem_tensor": lambda M, i: M.arange(3.0)[M.tensor([i])],
    "getitem_list": lambda M, i: M.arange(3.0)[[i]],
    "embedding": lambda M, i: M.nn.functional.embedding(M.tensor([i]), M.arange(6.0).reshape(3, 2)),
    "cross_entropy": lambda M, i: M.nn.functional.cross_entropy(M.zeros(1, 3), M.tensor([i])),
}


def _answer(M, fn, i):
    try:
        out = fn(M, i)
    except (IndexError, RuntimeError, ValueError):
        return "refused"
    return np.array(out.detach().numpy()).tolist()


@pytest.mark.parametrize("i", [-1, -3, -4, 3])
@pytest.mark.parametrize("name", sorted(NEGATIVE_INDEX_OPS))
def test_negative_indices_follow_torchs_rule_in_every_index_op(name, i):
    torch = pytest.importorskip("torch")
    if name == "take_along_dim" and not -3 <= i < 3:
        assert _answer(pyframe, NEGATIVE_INDEX_OPS[name], i) == "refused"  # torch reads past the dim unchecked
        return
    assert _answer(pyframe, NEGATIVE_INDEX_OPS[name], i) == _answer(torch, NEGATIVE_INDEX_OPS[name], i)


def test_integer_index_add_truncates_a_float_alpha_as_torch():
    x = pyframe.zeros(2, dtype=pyframe.int64).index_add_(0, pyframe.tensor([0, 1]), pyframe.tensor([1, 2]), alpha=2.5)
    assert x.tolist() == [2, 4]
    with pytest.raises(TypeError, match="alpha must not be a floating"):
        pyframe.add(pyframe.zeros(2, dtype=pyframe.int64), pyframe.tensor([1, 2]), alpha=2.5)


def test_index_ops_on_a_zero_dim_tensor_as_torch():
    x = pyframe.tensor(5.0)
    assert x.index_select(0, pyframe.tensor([0])).shape == () and x.index_select(0, pyframe.tensor([0])).item() == 5.0
    assert x.index_fill(0, pyframe.tensor([0]), 2.0).item() == 2.0
    assert x.index_fill(0, pyframe.tensor([], dtype=pyframe.int64), 2.0).item() == 5.0
    assert x.index_copy(0, pyframe.tensor([0]), pyframe.tensor(3.0)).item() == 3.0


@pytest.mark.parametrize(
    "expr",
    ["y[0]", "y[0][2]", "y[0, 2]", "y[-1]", "y[1:]", "y[:]", "y[::1]", "y[...]", "y[:, :]", "y[:, 0:5]", "y[0:2, :]",
     "y[:, 1]", "y[..., 1]", "y[None]", "y[None, 0]", "y[0, None]", "y[:, None, 1]", "y[0, 1:]", "y.select(0, 1)",
     "y.diagonal()", "y.unfold(1, 2, 1)", "y.as_strided((2,), (1,))", "y[0].view(1, -1)"],
)  # fmt: skip
def test_view_nodes_are_named_as_torch_names_them(expr):
    # programs print tensors with their grad_fn (tensor(2.69, grad_fn=<SelectBackward0>)): the name is output
    torch = pytest.importorskip("torch")
    names = []
    for lib in (torch, pyframe):
        y = lib.arange(15.0).reshape(3, 5).requires_grad_() * 1
        r = eval(expr, {"y": y})
        r.sum().backward()
        names.append(type(r.grad_fn).__name__)
    assert names[1] == names[0]


@pytest.mark.parametrize(
    "key",
    [
        (slice(None), [-1], slice(None)),
        (slice(None), [2, 0, -3, 2]),
        (0, slice(1, None), [3, -1]),
        (None, slice(None), [1]),
        (Ellipsis, [4, 0]),
        (slice(None), []),
    ],
)
def test_getitem_one_index_list_is_index_select(key):
    # one 1-d index among slices, ints, None and ... keeps its dim in place: NumPy's and torch's result, under
    # no_grad (one index_select) and with autograd (the general path) alike
    torch = pytest.importorskip("torch")
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    ref = torch.from_numpy(a)[key]
    with pyframe.no_grad():
        got = pyframe.tensor(a)[key]
    x = pyframe.tensor(a, requires_grad=True)
    recorded = x[key]
    assert got.shape == tuple(ref.shape) == recorded.shape
    np.testing.assert_array_equal(got.numpy(), ref.numpy())
    np.testing.assert_array_equal(recorded.detach().numpy(), ref.numpy())
    recorded.sum().backward()
    tx = torch.from_numpy(a).requires_grad_()
    tx[key].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())


def test_getitem_one_index_mask_and_bounds():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = pyframe.tensor(a)
    m = np.array([True, False, True])
    np.testing.assert_array_equal(x[:, pyframe.tensor(m)].numpy(), a[:, m])
    np.testing.assert_array_equal(x[1, :, pyframe.tensor([3, -4])].numpy(), a[1, :, [3, -4]].T)
    for bad in (3, -4):
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds for dimension 1 with size 3"):
            x[:, [bad]]


def test_setitem_full_mask_scalar_writes_in_place():
    # x[mask] = scalar with a mask of x's shape (top-k filtering): NumPy's result, through strided views too
    a = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    for value in (-math.inf, 2, True, pyframe.tensor(0.5), pyframe.tensor(3, dtype=pyframe.int64)):
        x = pyframe.tensor(a)
        v0 = x._version
        x[x < 0.1] = value
        want = a.copy()
        want[a < 0.1] = float(value.item() if isinstance(value, pyframe.Tensor) else value)
        np.testing.assert_array_equal(x.numpy(), want)
        assert x._version == v0 + 1
    base = pyframe.tensor(a)
    t = base.t()  # a non-dense view writes through to its base
    t[t > 0] = 0.0
    np.testing.assert_array_equal(base.numpy(), np.where(a > 0, 0, a))
    i = pyframe.tensor(np.arange(6).reshape(2, 3))
    i[i > 2] = 7.9  # a float into an integer tensor converts, as the general path does
    assert i.tolist() == [[0, 1, 2], [7, 7, 7]]
    e = pyframe.zeros(1).expand(3)
    with pytest.raises(RuntimeError, match="single memory location"):
        e[pyframe.tensor([True, False, True])] = 1.0
    leaf = pyframe.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf[pyframe.tensor([True, False, True])] = 1.0


@pytest.mark.parametrize(
    "key",
    [(slice(None), True, slice(None), True), (True, slice(None), False), (0, True, slice(None), True),
     (Ellipsis, True, slice(1, 2), True, 0), (slice(None), True, True, slice(None)), (True, None, True),
     (slice(None), False, slice(None), True, 1), (slice(None), True, slice(None), [1])],
)  # fmt: skip
def test_scalar_bools_apart_put_their_dim_first_as_torch(key):
    """Several 0-d masks add one dim: where the first stood when they are adjacent, else first in the result."""
    torch = pytest.importorskip("torch")
    x = np.arange(24.0).reshape(2, 3, 4)
    got, want = pyframe.from_numpy(x)[key], torch.from_numpy(x)[key]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    a, b = pyframe.zeros(2, 3, 4), torch.zeros(2, 3, 4)
    a[key], b[key] = 1.0, 1.0
    np.testing.assert_array_equal(a.numpy(), b.numpy())
