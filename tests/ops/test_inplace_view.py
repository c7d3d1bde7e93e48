"""In-place shape ops: the tensor object keeps its storage and identity, takes the view's metadata, bumps its
version and (under autograd) its node, named as torch names it."""

import numpy as np
import pytest

import pyframe

F64 = pyframe.float64


def test_metadata_rebound_storage_kept():
    x = pyframe.arange(6.0)
    ptr = x.data_ptr()
    assert x.unsqueeze_(0) is x and x.shape == (1, 6) and x.stride() == (6, 1)
    x.squeeze_()
    assert x.shape == (6,)
    v = x.view(2, 3)
    v.transpose_(0, 1)
    assert v.shape == (3, 2) and v.stride() == (1, 3) and v._base is x and x.shape == (6,)
    v.t_()
    assert v.shape == (2, 3) and v.data_ptr() == ptr
    v.swapdims_(0, 1)
    v.swapaxes_(0, 1)
    assert v.tolist() == [[0, 1, 2], [3, 4, 5]]
    s = pyframe.zeros(1, 3, 1)
    s.squeeze_(0)
    assert s.shape == (3, 1)
    s.squeeze_((0, 1))
    assert s.shape == (3,)


def test_writes_after_reshape_reach_the_storage():
    x = pyframe.zeros(2, 3)
    y = x.view(6)
    x.t_()
    x[0, 1] = 7.0  # element (1, 0) of the original layout
    assert y.tolist() == [0, 0, 0, 7, 0, 0]


def test_version_bumped_and_saved_tensor_check():
    a = pyframe.randn(3, dtype=F64, requires_grad=True)
    b = a * 2
    c = b * b  # saves b
    v = b._version
    b.unsqueeze_(0)
    assert b._version == v + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()


def test_autograd_records_the_view_change():
    a = pyframe.randn(2, 3, dtype=F64, requires_grad=True)
    b = a * 1
    first = b.grad_fn
    b.unsqueeze_(0)
    assert type(b.grad_fn).__name__ == "UnsqueezeBackward1" and b.grad_fn.next_functions[0][0] is first
    b.squeeze_(0)
    b.t_()
    assert b.grad_fn.name() == "TBackward1"
    g = pyframe.arange(6.0, dtype=F64).reshape(3, 2)
    b.backward(g)
    assert np.array_equal(a.grad.numpy(), g.numpy().T)


def test_leaf_that_requires_grad_refused():
    a = pyframe.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        a.unsqueeze_(0)
    with pyframe.no_grad():
        a.unsqueeze_(0)
    assert a.shape == (1, 3) and a.is_leaf


def test_resize():
    y = pyframe.arange(6.0)
    assert y.resize_(2, 2) is y and y.tolist() == [[0, 1], [2, 3]] and y.stride() == (2, 1)
    y.resize_(4, 5)  # grows: the old elements kept, the storage now larger
    assert y.shape == (4, 5) and y.reshape(-1)[:6].tolist() == [0, 1, 2, 3, 4, 5]
    t = pyframe.zeros(3)
    t.resize_as_(pyframe.zeros(2, 1))
    assert t.shape == (2, 1)
    assert pyframe.resize_as_(t, pyframe.zeros(3)) is t and t.shape == (3,)
    with pytest.raises(RuntimeError, match="require grad"):
        (pyframe.zeros(2, requires_grad=True) * 1).resize_(2)
    base = pyframe.zeros(4)
    view = base[:2]
    with pytest.raises(RuntimeError, match="share"):
        view.resize_(10)
    view.resize_(3)  # fits in the storage: fine
    assert view.shape == (3,)
    with pytest.raises(RuntimeError, match="negative"):
        pyframe.zeros(2).resize_(-1)


def test_as_strided_():
    t = pyframe.arange(6.0)
    t.as_strided_((2, 2), (1, 2), 1)
    assert t.tolist() == [[1, 3], [2, 4]] and t.storage_offset() == 1
    with pytest.raises(RuntimeError, match="storage"):
        pyframe.arange(6.0).as_strided_((3, 3), (3, 1))


def test_against_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    data = rng.standard_normal((2, 1, 3))
    ops = [("unsqueeze_", (1,)), ("squeeze_", ()), ("squeeze_", (1,)), ("transpose_", (0, 2)),
           ("swapdims_", (2, 1)), ("resize_", ((3, 2),)), ("as_strided_", ((2, 2), (2, 1), 1))]  # fmt: skip
    for name, args in ops:
        p, t = pyframe.tensor(data), torch.tensor(data)
        getattr(p, name)(*args)
        getattr(t, name)(*args)
        assert p.shape == tuple(t.shape) and p.stride() == t.stride(), name
        assert np.array_equal(p.numpy(), t.numpy()), name
