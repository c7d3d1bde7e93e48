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


def _both(fn):
    """``fn(nn_module, tensor_factory)`` run on pyframe and torch."""
    return fn(nn, pyframe), fn(torch.nn, torch)


def test_parameter_list_registers_converts_and_indexes_as_torch():
    def build(n, lib):
        pl = n.ParameterList([n.Parameter(lib.ones(2, 3)), lib.zeros(4)])
        pl.append(lib.ones(1))
        pl.extend([n.Parameter(lib.ones(2))])
        pl += [lib.ones(3), "tag"]
        pl[0] = lib.full((2,), 3.0)  # a plain tensor is made a Parameter
        return (len(pl), [type(p).__name__ for p in pl], list(pl.state_dict()), [tuple(p.shape) for p in pl[:5]],
                [tuple(p.shape) for p in pl[1:4:2]], type(pl[1:3]).__name__, tuple(pl[-2].shape),
                sum(1 for _ in pl.parameters()), pl[0].tolist(), pl[0].requires_grad)  # fmt: skip

    ours, theirs = _both(build)
    assert ours == theirs
    assert ours[1][-1] == "str" and ours[2] == ["0", "1", "2", "3", "4"]


def test_parameter_list_errors_repr_and_conversion():
    pl = nn.ParameterList([pyframe.ones(2, 3), pyframe.zeros(4)])
    assert repr(pl) == ("ParameterList(\n    (0): Parameter containing: [pyframe.float32 of size 2x3]\n"
                        "    (1): Parameter containing: [pyframe.float32 of size 4]\n)")  # fmt: skip
    with pytest.raises(IndexError, match="index 2 is out of range"):
        pl[2]
    with pytest.raises(TypeError, match="iterable, but got Tensor"):
        pl.extend(pyframe.ones(3))
    with pytest.raises(RuntimeError, match="should not be called"):
        pl(pyframe.ones(1))
    with pytest.raises(TypeError, match="cannot assign 'int' as parameter '0'"):
        pl[0] = 3
    first = pl[0]
    pl.double()  # a conversion keeps each parameter object (optimizers hold them)
    assert pl[0] is first and all(p.dtype == pyframe.float64 for p in pl)
    assert "0" not in dir(pl) and "append" in dir(pl)


def test_parameter_dict_orders_registers_and_updates_as_torch():
    def build(n, lib):
        pd = n.ParameterDict({"b": lib.ones(2), "a": n.Parameter(lib.zeros(3))})  # a plain dict: sorted keys
        pd["c"] = lib.ones(1)
        pd.update([("z", lib.ones(2)), ("y", lib.ones(1))])
        pd.update(OrderedDict([("x", lib.ones(1)), ("w", lib.ones(1))]))
        pd["note"] = "kept as an object"
        keys = list(pd.keys())
        state = list(pd.state_dict())
        popped = tuple(pd.pop("a").shape)
        last = pd.popitem()[0]
        merged = list((pd | n.ParameterDict({"k": lib.ones(1)})).keys())
        default = pd.setdefault("d", lib.ones(5))
        return (keys, state, popped, last, "b" in pd, pd.get("q", 5), len(pd), merged, type(default).__name__,
                list(reversed(pd)), list(pd.copy().keys()), list(pd.fromkeys(["p", "q"]).keys()),
                [type(v).__name__ for v in pd.values()], [k for k, _ in pd.items()])  # fmt: skip

    ours, theirs = _both(build)
    assert ours == theirs and ours[0] == ["a", "b", "c", "z", "y", "x", "w", "note"]


def test_parameter_dict_errors_and_model_use():
    pd = nn.ParameterDict({"w": pyframe.ones(3)})
    with pytest.raises(TypeError, match="not a string"):
        pd[3] = pyframe.ones(1)
    with pytest.raises(KeyError):
        pd.pop("absent")
    with pytest.raises(RuntimeError, match="should not be called"):
        pd(pyframe.ones(1))
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        pd.update([("a", pyframe.ones(1), 1)])
    with pytest.raises(TypeError, match="iterable of key/value pairs"):
        pd.update(5)
    pd.clear()
    assert len(pd) == 0 and list(pd.state_dict()) == []

    class Net(nn.Module):
        def __init__(self, lib_nn, lib):
            super().__init__()
            self.ps = lib_nn.ParameterList([lib_nn.Parameter(lib.ones(3, 3) * (i + 1) / 10) for i in range(2)])
            self.d = lib_nn.ParameterDict({"scale": lib_nn.Parameter(lib.ones(3) * 2)})

        def forward(self, x):
            for p in self.ps:
                x = x @ p
            return x * self.d["scale"]

    net = Net(nn, pyframe)
    assert [n for n, _ in net.named_parameters()] == ["ps.0", "ps.1", "d.scale"]
    x = pyframe.ones(2, 3)
    net(x).sum().backward()
    np.testing.assert_allclose(net.d["scale"].grad.numpy(), np.full(3, 2 * (3 * 0.1) * (3 * 0.2)), rtol=1e-6)
    assert net.ps[0].grad.shape == (3, 3)
