"""Indexing with every Python sequence torch accepts, NumPy arrays in checkpoints, and ``t.grad = x``
validated as torch does."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest

import pyframe

A = np.arange(24, dtype=np.float32).reshape(4, 6)


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


def test_numpy_arrays_are_saved_as_data_and_restored_as_numpy():
    state = {
        "weights": np.arange(6, dtype=np.float64).reshape(2, 3),
        "mask": np.array([True, False]),
        "ids": np.array([[1, 2], [3, 4]], dtype=np.int32).T,  # not contiguous
        "scalar": np.array(2.5, dtype=np.float32),
        "t": pyframe.ones(2),
    }
    buf = io.BytesIO()
    pyframe.save(state, buf)
    buf.seek(0)
    back = pyframe.load(buf)
    for k in ("weights", "mask", "ids", "scalar"):
        assert isinstance(back[k], np.ndarray) and back[k].dtype == state[k].dtype
        np.testing.assert_array_equal(back[k], state[k])
    assert isinstance(back["t"], pyframe.Tensor)
    assert b"pickle" not in buf.getvalue() and b"numpy.core" not in buf.getvalue()


def test_unsupported_numpy_arrays_are_refused_clearly():
    with pytest.raises(TypeError, match="object"):
        pyframe.save({"a": np.array([1, "x"], dtype=object)}, io.BytesIO())
    with pytest.raises(TypeError, match="complex"):
        pyframe.save([np.zeros(2, dtype=np.complex64)], io.BytesIO())


# ---- t.grad = x ----------------------------------------------------------------------------


def test_grad_assignment_is_validated_as_torch():
    t = pyframe.zeros(2, requires_grad=True)
    t.grad = pyframe.ones(2)
    assert t.grad.tolist() == [1.0, 1.0]
    t.grad = None
    assert t.grad is None
    with pytest.raises(TypeError, match="Tensor or None"):
        t.grad = 0.0
    with pytest.raises(RuntimeError, match="size"):
        t.grad = pyframe.zeros(3)
    with pytest.raises(RuntimeError, match="dtype"):
        t.grad = pyframe.zeros(2, dtype=pyframe.float64)
    assert t.grad is None  # a refused assignment changes nothing
    t.sum().backward()
    assert t.grad.tolist() == [1.0, 1.0]


def test_grad_assignment_vs_torch_messages():
    torch = pytest.importorskip("torch")
    tt, pt = torch.zeros(2, requires_grad=True), pyframe.zeros(2, requires_grad=True)
    for bad in (0.0, "x"):
        with pytest.raises(TypeError):
            tt.grad = bad
        with pytest.raises(TypeError):
            pt.grad = bad
