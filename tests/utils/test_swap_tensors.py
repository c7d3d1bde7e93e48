"""pyframe.utils.swap_tensors: two tensors exchange everything they are, as torch.utils.swap_tensors."""

import weakref

import pytest

import pyframe
from pyframe import nn
from pyframe.utils import swap_tensors


def _state(t):
    return type(t), t.tolist(), tuple(t.shape), t.dtype, t.requires_grad, None if t.grad is None else t.grad.tolist()


def test_swap_exchanges_data_shape_dtype_class_and_grad():
    a = pyframe.arange(2)
    b = nn.Parameter(pyframe.tensor([1.5, 2.5, 3.5]))
    b.grad = pyframe.ones(3)
    sa, sb = _state(a), _state(b)
    swap_tensors(a, b)
    assert _state(a) == sb and _state(b) == sa
    assert isinstance(a, nn.Parameter) and not isinstance(b, nn.Parameter)
    b[0] = 7  # each now owns the other's memory: writes stay with the data
    assert b.tolist() == [7, 1] and a.tolist() == [1.5, 2.5, 3.5]


def test_an_optimizer_holding_the_parameter_trains_the_swapped_data():
    torch = pytest.importorskip("torch")
    out = []
    for lib in (torch, pyframe):
        lib.manual_seed(0)
        mod = lib.nn.Linear(2, 1, bias=False)
        with lib.no_grad():
            mod.weight.copy_(lib.tensor([[1.0, -1.0]]))
        opt = lib.optim.SGD(mod.parameters(), lr=0.5)
        lib.utils.swap_tensors(mod.weight, lib.nn.Parameter(2 * mod.weight.detach()))
        assert opt.param_groups[0]["params"][0] is mod.weight
        mod(lib.tensor([[1.0, 2.0]])).sum().backward()
        opt.step()
        out.append(mod.weight.detach().tolist())
    assert out[0] == out[1] == [[1.5, -3.0]]


def test_a_graph_recorded_before_the_swap_refuses_backward():
    torch = pytest.importorskip("torch")
    for lib in (torch, pyframe):
        w = lib.nn.Parameter(lib.ones(2))
        loss = (w * 3).sum()
        lib.utils.swap_tensors(w, lib.nn.Parameter(lib.zeros(2)))
        with pytest.raises(RuntimeError, match="poisoned by swap_tensors"):
            loss.backward()
        (w * 3).sum().backward()  # a graph recorded after it accumulates into the swapped tensor
        assert w.grad.tolist() == [3.0, 3.0], lib


def test_bad_arguments_are_refused():
    a, b = pyframe.zeros(2), pyframe.zeros(3)
    r = weakref.ref(a)
    with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref"):
        swap_tensors(a, b)
    del r
    with pytest.raises(TypeError, match="t2 must be a Tensor, got list"):
        swap_tensors(a, [0.0])
    b2 = pyframe.zeros(3)
    swap_tensors(a, b2)
    assert tuple(a.shape) == (3,) and tuple(b2.shape) == (2,)
