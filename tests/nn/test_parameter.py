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
