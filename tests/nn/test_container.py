"""Containers: Sequential, ModuleList and ModuleDict (indexing, slicing, insertion, deletion, reprs), and
Sequential models of several families against torch (values, gradients, buffers)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

import pyframe
import pyframe.nn as nn
from tests._helpers import arr
from tests._oracle import randn
from tests._tables import module_table_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional


LAYERS = {
    "mlp": (lambda n: n.Sequential(n.Linear(6, 8), n.ReLU(), n.Linear(8, 3), n.Tanh()), [randn(5, 6)]),
    "cnn": (lambda n: n.Sequential(n.Conv2d(1, 4, 3, padding=1), n.BatchNorm2d(4), n.ReLU(), n.MaxPool2d(2),
                                   n.Flatten(), n.Linear(4 * 3 * 3, 2)), [randn(2, 1, 6, 6)]),
}  # fmt: skip


test_layer_matches_torch = module_table_test(LAYERS)


def test_sequential_ops():
    a, b, c = nn.ReLU(), nn.Tanh(), nn.Sigmoid()
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c and list(s) == [a, b, c]
    sub = s[1:]
    assert type(sub) is nn.Sequential and list(sub) == [b, c] and list(sub._modules) == ["1", "2"]
    with pytest.raises(IndexError):
        s[3]  # noqa: B018
    s[0] = nn.Identity()
    assert isinstance(s[0], nn.Identity)
    del s[0]
    assert list(s._modules) == ["0", "1"] and list(s) == [b, c]
    s.append(a).insert(0, nn.Identity())
    assert [type(x).__name__ for x in s] == ["Identity", "Tanh", "Sigmoid", "ReLU"]
    assert s.pop(0).__class__ is nn.Identity and len(s) == 3
    assert len(s + nn.Sequential(a)) == 4 and len(s * 2) == 6
    s.extend([nn.ReLU()])
    assert len(s) == 4
    named = nn.Sequential(OrderedDict([("first", nn.Linear(2, 3)), ("act", nn.ReLU())]))
    assert list(named._modules) == ["first", "act"] and named.first is named[0]
    x = pyframe.randn(4, 2)
    np.testing.assert_allclose(arr(named(x)), np.maximum(arr(named.first(x)), 0))


def test_module_list_and_dict():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    assert len(layers) == 3 and len(list(layers.parameters())) == 6
    assert type(layers[1:]) is nn.ModuleList and len(layers[1:]) == 2
    layers.append(nn.ReLU())
    layers.insert(1, nn.Tanh())
    assert [type(x).__name__ for x in layers] == ["Linear", "Tanh", "Linear", "Linear", "ReLU"]
    del layers[1:3]
    assert list(layers._modules) == ["0", "1", "2"] and isinstance(layers[-1], nn.ReLU)
    layers += [nn.Sigmoid()]
    assert len(layers + nn.ModuleList([nn.Tanh()])) == 5 and isinstance(layers.pop(-1), nn.Sigmoid)
    with pytest.raises(TypeError):
        layers.extend(3)
    d = nn.ModuleDict({"a": nn.ReLU(), "b": nn.Tanh()})
    d.update([("c", nn.Sigmoid())])
    d["d"] = nn.Identity()
    assert list(d) == ["a", "b", "c", "d"] and "a" in d and len(d) == 4
    assert isinstance(d.pop("a"), nn.ReLU) and list(d.keys()) == ["b", "c", "d"]
    assert [type(v).__name__ for v in d.values()] == ["Tanh", "Sigmoid", "Identity"]
    del d["b"]
    assert [k for k, _ in d.items()] == ["c", "d"]
    d.clear()
    assert len(d) == 0
    with pytest.raises(ValueError):
        d.update([("x",)])


def test_module_list_repr_matches_torch():
    def build(lib_nn):
        return lib_nn.ModuleList([lib_nn.ReLU(), lib_nn.ReLU(), lib_nn.Tanh(), lib_nn.ReLU(), lib_nn.ReLU()])

    assert repr(build(nn)) == repr(build(torch.nn))
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList())
