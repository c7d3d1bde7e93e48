"""nn.Parameter: shares memory and is a leaf, errors and repr, the data property, pickle and deepcopy."""

from __future__ import annotations

import copy
import pickle

import pytest

import pyframe
import pyframe.nn as nn


def test_parameter_shares_memory_and_is_a_leaf():
    t = pyframe.arange(4.0)
    p = nn.Parameter(t)
    assert isinstance(p, pyframe.Tensor) and type(p) is nn.Parameter
    assert p.is_leaf and p.requires_grad and p.grad_fn is None
    assert p.data_ptr() == t.data_ptr()
    with pyframe.no_grad():
        p.add_(1)
    assert t.tolist() == [1.0, 2.0, 3.0, 4.0]
    assert not nn.Parameter(t, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    assert type(p * 2) is pyframe.Tensor and type(p.detach()) is pyframe.Tensor


def test_parameter_of_a_non_leaf_is_a_leaf():
    x = pyframe.ones(2, requires_grad=True)
    p = nn.Parameter(x * 2)
    assert p.is_leaf and p.requires_grad
    (p * 3).sum().backward()
    assert p.grad.tolist() == [3.0, 3.0] and x.grad is None


def test_parameter_errors_and_repr():
    with pytest.raises(RuntimeError):
        nn.Parameter(pyframe.tensor([1, 2]))
    assert nn.Parameter(pyframe.tensor([1, 2]), requires_grad=False).dtype == pyframe.int64
    with pytest.raises(TypeError):
        nn.Parameter([1.0])
    assert repr(nn.Parameter(pyframe.tensor([1.0, 2.0]))) == (
        "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    )


def test_parameter_data_property():
    p = nn.Parameter(pyframe.zeros(3))
    d = p.data
    assert type(d) is pyframe.Tensor and not d.requires_grad and d.data_ptr() == p.data_ptr()
    ident = id(p)
    p.data = pyframe.ones(2, dtype=pyframe.float64)
    assert id(p) == ident and p.shape == (2,) and p.dtype == pyframe.float64 and p.tolist() == [1.0, 1.0]


def test_parameter_pickle_and_deepcopy():
    p = nn.Parameter(pyframe.tensor([1.0, 2.0]), requires_grad=False)
    for q in (pickle.loads(pickle.dumps(p)), copy.deepcopy(p)):
        assert type(q) is nn.Parameter and q.tolist() == [1.0, 2.0] and not q.requires_grad
        assert q.data_ptr() != p.data_ptr()


def test_buffer_assigned_as_attribute_is_registered_with_its_persistence():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.mask = nn.Buffer(pyframe.ones(3))
            self.scratch = nn.Buffer(pyframe.zeros(2), persistent=False)
            self.plain = pyframe.ones(1)  # a plain tensor stays a plain attribute

    m = M()
    assert [n for n, _ in m.named_buffers()] == ["mask", "scratch"] and list(m.state_dict()) == ["mask"]
    assert isinstance(m.mask, nn.Buffer) and not isinstance(m.plain, nn.Buffer)
    m.mask = pyframe.zeros(3)  # reassigning a registered buffer keeps it a (persistent) buffer
    m.scratch = pyframe.ones(2)
    assert list(m.state_dict()) == ["mask"] and m.scratch.tolist() == [1.0, 1.0]
    m.double()
    assert m.mask.dtype == pyframe.float64 and m.scratch.dtype == pyframe.float64
    t = pyframe.arange(3.0)
    b = nn.Buffer(t)
    assert b.data_ptr() == t.data_ptr() and not b.requires_grad and nn.Buffer().shape == (0,)
    with pytest.raises(TypeError, match="Buffer data must be a Tensor"):
        nn.Buffer([1.0])
    with pytest.raises(AttributeError, match="before Module.__init__"):

        class Early(nn.Module):
            def __init__(self):
                self.b = nn.Buffer(pyframe.ones(1))
                super().__init__()

        Early()
    copied = copy.deepcopy(nn.Buffer(pyframe.ones(2), persistent=False))
    loaded = pickle.loads(pickle.dumps(nn.Buffer(pyframe.ones(2), persistent=False)))
    for b in (copied, loaded):
        assert isinstance(b, nn.Buffer) and not b.persistent and b.tolist() == [1.0, 1.0]


def test_uninitialized_buffer_and_parameter_materialize_in_place():
    from pyframe.nn.parameter import UninitializedTensorMixin, is_lazy

    b = nn.UninitializedBuffer(persistent=False)
    p = nn.UninitializedParameter(dtype=pyframe.float64)
    assert repr(b) == "<UninitializedBuffer>" and repr(p) == "<UninitializedParameter>"
    assert is_lazy(b) and is_lazy(p) and isinstance(b, UninitializedTensorMixin) and not b.persistent
    ident = id(b)
    b.materialize((2, 3))
    p.materialize(4)
    assert id(b) == ident and type(b) is pyframe.Tensor and b.shape == (2, 3) and not is_lazy(b)
    assert type(p) is nn.Parameter and p.shape == (4,) and p.dtype == pyframe.float64 and p.requires_grad
    with pytest.raises(ValueError, match="non-negative ints"):
        nn.UninitializedBuffer().materialize((2, -1))
    assert type(copy.deepcopy(nn.UninitializedBuffer())) is nn.UninitializedBuffer


def test_parameter_module_names_match_torch():
    torch = pytest.importorskip("torch")
    assert set(torch.nn.parameter.__all__) <= set(pyframe.nn.parameter.__all__)
