"""asarray and frombuffer: tensors over memory other code owns, shared where torch shares it."""

import array

import numpy as np
import pytest

import pyframe


def test_frombuffer_shares_a_writable_buffer():
    b = bytearray(16)
    x = pyframe.frombuffer(b, dtype=pyframe.int32)
    x[1] = 7
    assert b[4] == 7 and x.shape == (4,)
    assert pyframe.frombuffer(b, dtype=pyframe.int32, count=2, offset=4).tolist() == [7, 0]
    b[8] = 3
    assert x[2].item() == 3


def test_frombuffer_checks_count_offset_and_dtype():
    b = bytearray(8)
    with pytest.raises(ValueError, match="holds only 2"):
        pyframe.frombuffer(b, dtype=pyframe.float32, count=3)
    with pytest.raises(ValueError, match="offset"):
        pyframe.frombuffer(b, dtype=pyframe.float32, offset=9)
    with pytest.raises(ValueError, match="must not be 0"):
        pyframe.frombuffer(bytearray(), dtype=pyframe.float32)
    with pytest.raises(TypeError, match="bfloat16"):
        pyframe.frombuffer(b, dtype=pyframe.bfloat16)
    with pytest.warns(UserWarning, match="not writable"):
        assert pyframe.frombuffer(b"\x01\x00\x00\x00", dtype=pyframe.int32).tolist() == [1]


def test_asarray_shares_when_it_can():
    a = np.arange(3.0)
    t = pyframe.asarray(a)
    a[0] = 9
    assert t.tolist() == [9.0, 1.0, 2.0] and t.dtype is pyframe.float64
    assert pyframe.asarray(a, copy=True).tolist() == [9.0, 1.0, 2.0]
    c = pyframe.asarray(a, copy=True)
    a[1] = 5
    assert c[1].item() == 1.0
    assert pyframe.asarray(array.array("f", [1, 2])).tolist() == [1.0, 2.0]
    x = pyframe.ones(2)
    assert pyframe.asarray(x) is x and pyframe.asarray(x, copy=True) is not x
    assert pyframe.asarray(x, dtype=pyframe.float64).dtype is pyframe.float64
    assert pyframe.asarray([1, 2]).dtype is pyframe.int64
    assert pyframe.asarray([1.0], requires_grad=True).requires_grad
    with pytest.raises(ValueError, match="needs a copy"):
        pyframe.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match="needs a copy"):
        pyframe.asarray(x, dtype=pyframe.float64, copy=False)
