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


# numpy's scalars stand for Python numbers wherever torch takes them (np.argmax, np.random.randint and array
# arithmetic all return them); each case beside the same call with Python numbers
_N, _M = np.int64(3), np.int32(2)
_NUMPY_SCALAR_CASES = {
    "sum dim": (lambda x: x.sum(dim=_N - 2), lambda x: x.sum(dim=1)),
    "narrow": (lambda x: x.narrow(np.int64(1), np.int64(0), _M), lambda x: x.narrow(1, 0, 2)),
    "topk": (lambda x: x.topk(_M).values, lambda x: x.topk(2).values),
    "split": (lambda x: x.split(np.int64(1), dim=0)[1], lambda x: x.split(1, dim=0)[1]),
    "split sections": (lambda x: x.split([_M, np.int64(1)], dim=1)[0], lambda x: x.split([2, 1], dim=1)[0]),
    "chunk": (lambda x: x.chunk(_M, np.int64(2))[1], lambda x: x.chunk(2, 2)[1]),
    "roll": (lambda x: x.roll(np.int64(1), np.int64(0)), lambda x: x.roll(1, 0)),
    "flip": (lambda x: x.flip(np.int64(2)), lambda x: x.flip(2)),
    "cat": (lambda x: pyframe.cat([x, x], dim=np.int64(0)), lambda x: pyframe.cat([x, x], dim=0)),
    "softmax": (lambda x: pyframe.softmax(x, dim=np.int64(-1)), lambda x: pyframe.softmax(x, dim=-1)),
    "mul float32": (lambda x: x * np.float32(0.5), lambda x: x * 0.5),
    "pow int64": (lambda x: x ** np.int64(2), lambda x: x**2),
    "rsub float64": (lambda x: np.float64(1.0) - x, lambda x: 1.0 - x),
    "arange": (lambda x: pyframe.arange(_N), lambda x: pyframe.arange(3)),
    "one_hot": (lambda x: pyframe.nn.functional.one_hot(pyframe.tensor([1]), num_classes=_N),
                lambda x: pyframe.nn.functional.one_hot(pyframe.tensor([1]), num_classes=3)),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(_NUMPY_SCALAR_CASES))
def test_numpy_scalars_count_as_python_numbers(case):
    with_numpy, with_python = _NUMPY_SCALAR_CASES[case]
    x = pyframe.arange(24.0).reshape(2, 3, 4)
    got, want = with_numpy(x), with_python(x)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


def test_numpy_integers_as_counts_and_lengths():
    pyframe.manual_seed(0)
    assert pyframe.randint(0, np.int64(5), (_M,)).shape == (2,)
    assert pyframe.multinomial(pyframe.ones(3), np.int64(2)).shape == (2,)
    packed = pyframe.nn.utils.rnn.pack_padded_sequence(pyframe.zeros(3, 2, 1), np.array([3, 2]))
    assert packed.batch_sizes.tolist() == [2, 2, 1]
    opt = pyframe.optim.SGD([pyframe.zeros(1, requires_grad=True)], lr=0.1)
    assert pyframe.optim.lr_scheduler.StepLR(opt, step_size=np.int64(2)).step_size == 2
    with pytest.raises(TypeError, match="dim must be an int"):
        pyframe.zeros(2).sum(dim=np.float64(0.0))  # a float is no dim, numpy's or not


def test_numpy_operators_and_functions_give_tensors():
    t = pyframe.arange(3.0)
    for r in (np.float64(2.0) * t, np.float32(1.0) - t, np.int64(1) + t):  # numpy's operators defer to Tensor's
        assert isinstance(r, pyframe.Tensor) and r.dtype == pyframe.float32
    assert (np.float64(1.0) - t).tolist() == [1.0, 0.0, -1.0]
    with pytest.raises(TypeError, match="ndarray"):
        np.ones(3) * t  # an array is no number: refused, as in torch
    e = np.exp(t)  # numpy's functions wrap their result back into a tensor (bool as uint8), as torch's do
    assert (
        isinstance(e, pyframe.Tensor)
        and e.dtype == pyframe.float32
        and e.tolist() == np.exp(np.arange(3.0, dtype=np.float32)).tolist()
    )
    g = np.greater(t, 0.5)
    assert isinstance(g, pyframe.Tensor) and g.dtype == pyframe.uint8 and g.tolist() == [0, 1, 1]
