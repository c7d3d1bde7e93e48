"""Property tests: random shapes (1-4 dims, sizes 0-6) and broadcastable pairs against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

import pyframe  # noqa: E402

DTYPES = st.sampled_from(["float32", "float64", "int64", "int32"])
SETTINGS = settings(max_examples=50, deadline=None)


def _elements(dtype):
    if dtype.startswith("float"):
        return st.floats(-1e3, 1e3, width=32 if dtype == "float32" else 64)
    return st.integers(-1000, 1000)


@st.composite
def array_of_shape(draw, shape, dtype):
    return draw(hnp.arrays(np.dtype(dtype), shape, elements=_elements(dtype)))


@st.composite
def broadcast_pair(draw):
    dtype = draw(DTYPES)
    shapes = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=1, max_dims=4, min_side=0, max_side=6))
    a = draw(array_of_shape(shapes.input_shapes[0], dtype))
    b = draw(array_of_shape(shapes.input_shapes[1], dtype))
    return a, b


@st.composite
def one_array(draw, dtypes=DTYPES):
    dtype = draw(dtypes)
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=4, min_side=0, max_side=6))
    return draw(array_of_shape(shape, dtype))


def _check(got, expected, rtol=0.0, atol=0.0):
    assert tuple(got.shape) == expected.shape
    assert got.dtype.np == expected.dtype, f"{got.dtype} vs {expected.dtype}"
    if rtol or atol:
        np.testing.assert_allclose(got.numpy(), expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(got.numpy(), expected)


@SETTINGS
@given(broadcast_pair())
def test_add_mul_maximum_broadcast(pair):
    a, b = pair
    ta, tb = pyframe.tensor(a), pyframe.tensor(b)
    _check(ta + tb, a + b)
    _check(pyframe.mul(ta, tb), a * b)
    _check(pyframe.maximum(ta, tb), np.maximum(a, b))
    _check(tb - ta, b - a)
    _check(ta >= tb, a >= b)


@SETTINGS
@given(broadcast_pair(), st.booleans())
def test_binary_on_transposed_views(pair, flip):
    a, b = pair
    ta, tb = pyframe.tensor(a), pyframe.tensor(b)
    if flip:  # reverse every dim of both: still broadcastable, now non-contiguous
        a, b, ta, tb = a.T, b.T, ta.T, tb.T
        if a.ndim != b.ndim:  # .T only keeps alignment when the ranks match
            return
    _check(ta * tb, a * b)


@SETTINGS
@given(one_array(), st.data())
def test_sum_over_a_dim(a, data):
    dim = data.draw(st.integers(-a.ndim, a.ndim - 1))
    keepdim = data.draw(st.booleans())
    t = pyframe.tensor(a)
    got = t.sum(dim, keepdim=keepdim)
    if a.dtype.kind == "f":
        expected = a.astype(np.float64).sum(axis=dim, keepdims=keepdim).astype(a.dtype)
        _check(got, expected, rtol=1e-5, atol=1e-3)
    else:
        _check(got, a.astype(np.int64).sum(axis=dim, keepdims=keepdim))
    if a.shape[dim]:
        _check(t.amax(dim, keepdim), a.max(axis=dim, keepdims=keepdim))


@SETTINGS
@given(one_array(), st.data())
def test_transpose_then_contiguous(a, data):
    d0 = data.draw(st.integers(-a.ndim, a.ndim - 1))
    d1 = data.draw(st.integers(-a.ndim, a.ndim - 1))
    t = pyframe.tensor(a)
    v = t.transpose(d0, d1)
    assert v._storage is t._storage
    c = v.contiguous()
    assert c.is_contiguous()
    _check(c, np.ascontiguousarray(np.swapaxes(a, d0, d1)))
    _check(c.reshape(-1), np.swapaxes(a, d0, d1).reshape(-1))
    perm = data.draw(st.permutations(range(a.ndim)))
    _check(t.permute(*perm).contiguous(), np.transpose(a, perm))


@st.composite
def slice_for(draw, n):
    start = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    stop = draw(st.one_of(st.none(), st.integers(-n - 2, n + 2)))
    step = draw(st.one_of(st.none(), st.integers(1, 3)))
    return slice(start, stop, step)


@SETTINGS
@given(one_array(), st.data())
def test_basic_slicing_and_assignment(a, data):
    key = tuple(data.draw(slice_for(n)) for n in a.shape)
    t = pyframe.tensor(a)
    v = t[key]
    _check(v, a[key])
    assert v._storage is t._storage
    expected = a.copy()
    expected[key] = 7
    t[key] = 7
    _check(t, expected)


@SETTINGS
@given(one_array(), st.data())
def test_integer_array_indexing(a, data):
    dim = data.draw(st.integers(0, a.ndim - 1))
    n = a.shape[dim]
    if n == 0:
        return
    idx = data.draw(st.lists(st.integers(-n, n - 1), min_size=0, max_size=5))
    key = (slice(None),) * dim + (idx,)
    _check(pyframe.tensor(a)[key], a[key])


@SETTINGS
@given(one_array(st.sampled_from(["float32", "float64"])), st.data())
def test_softmax_rows_sum_to_one(a, data):
    dim = data.draw(st.integers(-a.ndim, a.ndim - 1))
    s = pyframe.softmax(pyframe.tensor(a), dim).numpy().astype(np.float64)
    if a.size:
        np.testing.assert_allclose(s.sum(axis=dim), 1.0, rtol=1e-5)
        assert (s >= 0).all()
