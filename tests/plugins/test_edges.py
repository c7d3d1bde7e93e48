"""Every shipped plugin at the edges: empty batches, 0-d tensors, float64 and integer inputs, forward and backward.
Each plugin alone (the others off), then all of them together: no plugin may turn a legal edge case into an error,
and each still does its job there."""

from __future__ import annotations

import contextlib

import pytest

import pyframe
from pyframe import nn
from tests.plugins.conftest import shipped_module

SETTINGS = {
    "float32-enforcer": {},
    "grad-clipper": {"max_value": 0.5},
    "nan-detector": {"action": "raise"},
    "lora": {"targets": ["*.0", "*.2", "proj"], "rank": 2, "dropout": 0.1},
}


@contextlib.contextmanager
def active(names):
    with contextlib.ExitStack() as stack:
        for i, name in enumerate(names):
            stack.enter_context(
                pyframe.plugins.activated(shipped_module(name), name, exclusive=(i == 0), **SETTINGS[name])
            )
        yield


class Scalar(nn.Module):
    """A 0-d parameter and a 0-d integer buffer."""

    def __init__(self, dtype):
        super().__init__()
        self.scale = nn.Parameter(pyframe.tensor(2.0, dtype=dtype))
        self.register_buffer("count", pyframe.tensor(0))
        self.proj = nn.Linear(1, 1, dtype=dtype)

    def forward(self, x):  # x: 0-d
        return self.proj((x * self.scale).reshape(1, 1)).reshape(())


CASES = [(name,) for name in SETTINGS] + [tuple(SETTINGS)]


def mlp(dtype):
    return nn.Sequential(nn.Linear(3, 4, dtype=dtype), nn.ReLU(), nn.Linear(4, 2, dtype=dtype))


@pytest.mark.parametrize("names", CASES, ids="+".join)
@pytest.mark.parametrize("dtype", [pyframe.float32, pyframe.float64], ids=["float32", "float64"])
def test_empty_batch_forward_and_backward(names, dtype):
    with active(names):
        model = mlp(dtype)
        x = pyframe.zeros(0, 3, dtype=model[0].weight.dtype).requires_grad_()
        out = model(x)
        assert tuple(out.shape) == (0, 2)
        out.sum().backward()  # grad-clipper once raised here: max() of an empty gradient
        assert tuple(x.grad.shape) == (0, 3)
        trainable = [p for p in model.parameters() if p.requires_grad]
        assert trainable and all(p.grad is None or float(p.grad.abs().sum()) == 0 for p in trainable)


@pytest.mark.parametrize("names", CASES, ids="+".join)
@pytest.mark.parametrize("dtype", [pyframe.float32, pyframe.float64], ids=["float32", "float64"])
def test_zero_dim_tensors(names, dtype):
    with active(names):
        m = Scalar(dtype)
        x = pyframe.tensor(3.0, dtype=m.scale.dtype, requires_grad=True)
        y = m(x)
        assert tuple(y.shape) == ()
        y.backward()
        assert tuple(x.grad.shape) == ()
        assert m.count.dtype == pyframe.int64  # an integer buffer is never converted
        if "grad-clipper" in names:
            assert abs(float(x.grad)) <= 0.5


@pytest.mark.parametrize("names", CASES, ids="+".join)
def test_integer_inputs_and_buffers(names):
    with active(names):
        emb = nn.Sequential(nn.Embedding(5, 3), nn.Linear(3, 2))
        idx = pyframe.tensor([[0, 4], [1, 1]])
        out = emb(idx)
        assert tuple(out.shape) == (2, 2, 2)
        if out.requires_grad:  # (lora freezes both: nothing to train, as in PEFT)
            out.sum().backward()  # the Embedding's input (integers) gets no gradient: grad_input holds None
        lin = nn.Linear(2, 2)
        with pytest.raises(TypeError):  # an integer input to Linear stays linear()'s own error
            lin(pyframe.tensor([[1, 2]]))


def test_float64_under_float32_enforcer_and_all_plugins():
    with active(tuple(SETTINGS)):
        model = mlp(pyframe.float64)
        assert model[0].weight.dtype == pyframe.float32  # converted: the input must follow
        out = model(pyframe.ones(2, 3))
        (out * 100).sum().backward()
        assert out.dtype == pyframe.float32


def test_nan_detector_still_finds_nan_in_0d_and_not_in_empty():
    with active(("nan-detector",)):
        m = Scalar(pyframe.float32)
        with pytest.raises(FloatingPointError, match="nan-detector"):
            m(pyframe.tensor(float("nan")))
        mlp(pyframe.float32)(pyframe.zeros(0, 3))  # nothing to find in an empty batch
