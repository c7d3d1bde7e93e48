"""compile(backend=callable): the user's backend gets each captured graph, its result runs the calls; guards
recapture on new shapes, Python values and train/eval; data-dependent control flow runs eagerly."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
import pyframe.nn as nn
import pyframe.nn.functional as F
from pyframe._dynamo import config
from pyframe.fx import GraphModule


class Recorder:
    """A backend that keeps what it was given and returns the graph's forward, as the tutorials' backends do."""

    def __init__(self) -> None:
        self.graphs: list = []

    def __call__(self, gm, example_inputs):
        assert isinstance(gm, GraphModule)
        self.graphs.append((gm, [tuple(t.shape) for t in example_inputs]))
        return gm.forward


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc, self.bn, self.drop = nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Dropout(0.5)
        self.config = {"width": 6}

    def forward(self, x, targets=None):
        y = self.drop(F.relu(self.bn(self.fc(x))))
        return y if targets is None else F.cross_entropy(y, targets)


def test_a_module_runs_its_backends_graph_and_keeps_torchs_wrapper():
    pyframe.manual_seed(0)
    model, backend = Net(), Recorder()
    compiled = pyframe.compile(model, backend=backend)
    x, t = pyframe.randn(5, 4), pyframe.randint(0, 6, (5,))
    pyframe.manual_seed(1)
    want = model(x, t)
    stats = model.bn.running_mean.clone()
    model.bn.reset_running_stats()
    pyframe.manual_seed(1)
    got = compiled(x, t)  # the first call captures, then runs the backend's callable: the same draws, stats once
    assert len(backend.graphs) == 1 and backend.graphs[0][1] == [(5, 4), (5,)]
    assert "cross_entropy" in backend.graphs[0][0].code
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)
    np.testing.assert_allclose(model.bn.running_mean.numpy(), stats.numpy(), rtol=1e-6)
    assert int(model.bn.num_batches_tracked) == 1
    got.backward()
    assert model.fc.weight.grad is not None
    assert compiled._orig_mod is model and compiled.fc is model.fc and compiled.config == {"width": 6}
    assert list(compiled.state_dict())[0] == "_orig_mod.fc.weight"
    assert [id(p) for p in compiled.parameters()] == [id(p) for p in model.parameters()]


def test_new_shapes_values_and_modes_capture_again_and_the_same_call_does_not():
    model, backend = Net(), Recorder()
    compiled = pyframe.compile(model, backend=backend)
    x = pyframe.randn(5, 4)
    compiled(x)
    compiled(pyframe.randn(5, 4))
    assert len(backend.graphs) == 1
    compiled(pyframe.randn(7, 4))  # another shape
    compiled(x, pyframe.randint(0, 6, (5,)))  # targets given: another Python path
    compiled.eval()
    assert not model.training
    compiled(x)  # eval mode
    assert len(backend.graphs) == 4


def test_control_flow_on_tensor_values_runs_eagerly_or_refuses_with_fullgraph():
    backend = Recorder()

    def f(x):
        return x * 2 if x.sum() > 0 else x + 10

    compiled = pyframe.compile(f, backend=backend)
    np.testing.assert_array_equal(compiled(pyframe.ones(3)).numpy(), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(compiled(-pyframe.ones(3)).numpy(), [9.0, 9.0, 9.0])
    assert backend.graphs == []
    with pytest.raises(RuntimeError, match="fullgraph=True.*control flow on a tensor's value"):
        pyframe.compile(f, backend=backend, fullgraph=True)(pyframe.ones(3))

    def by_shape(x):
        return x * 3 if x.size(1) > 2 else x

    compiled = pyframe.compile(by_shape, backend=backend)
    np.testing.assert_array_equal(compiled(pyframe.ones(1, 3)).numpy(), [[3.0, 3.0, 3.0]])
    np.testing.assert_array_equal(compiled(pyframe.ones(1, 2)).numpy(), [[1.0, 1.0]])
    assert len(backend.graphs) == 2  # shapes are guarded: one graph each


def test_the_decorator_form_the_cache_limit_and_bad_backends(monkeypatch):
    backend = Recorder()

    @pyframe.compile(backend=backend)
    def f(a, b):
        return pyframe.sin(a) + pyframe.cos(b)

    np.testing.assert_allclose(f(pyframe.ones(2), pyframe.zeros(2)).numpy(), np.sin(1.0) + 1.0, rtol=1e-6)
    assert f.__name__ == "f" and len(backend.graphs) == 1
    monkeypatch.setattr(config, "cache_size_limit", 2)
    for n in range(2, 6):
        f(pyframe.ones(n), pyframe.zeros(n))
    assert len(backend.graphs) == 2  # past the limit the function runs eagerly
    model = nn.Linear(2, 2)
    assert pyframe.compile(model) is model and pyframe.compile(model, backend="eager") is model
    assert pyframe.compile(model, backend=backend, disable=True) is model
    with pytest.raises(TypeError, match="backend must be a name or a callable"):
        pyframe.compile(model, backend=3)
    with pytest.raises(TypeError, match="backend returned int"):
        pyframe.compile(model, backend=lambda gm, ex: 3)(pyframe.ones(2))


def test_dynamo_optimize_is_the_older_spelling():
    backend = Recorder()

    @pyframe._dynamo.optimize(backend)
    def f(x):
        return x * 2

    np.testing.assert_array_equal(f(pyframe.ones(2)).numpy(), [2.0, 2.0])
    assert len(backend.graphs) == 1

    def g(x):
        return x

    assert pyframe._dynamo.optimize("inductor")(g) is g


def test_explain_counts_the_breaks_torch_would_make():
    def bar(a, b):
        x = a / (pyframe.abs(a) + 1)
        if b.sum() < 0:
            b = b * -1
        return x * b

    out = pyframe._dynamo.explain(bar)(pyframe.randn(10), pyframe.randn(10))
    assert (out.graph_count, out.graph_break_count, out.graphs) == (2, 1, [])
    assert "control flow on a tensor's value" in out.break_reasons[0].reason and "Graph Count: 2" in str(out)
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    out = pyframe._dynamo.explain(model)(pyframe.randn(4, 3))
    assert (out.graph_count, out.graph_break_count, out.op_count) == (1, 0, 2) and len(out.graphs) == 1


def test_fullgraph_with_a_backend_name_checks_the_graph_and_runs_eagerly():
    def bar(a, b):
        return a * b if b.sum() < 0 else a + b

    with pytest.raises(RuntimeError, match="fullgraph=True"):
        pyframe.compile(bar, fullgraph=True)(pyframe.ones(3), pyframe.ones(3))
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    compiled = pyframe.compile(model, fullgraph=True)
    x = pyframe.randn(4, 3)
    np.testing.assert_array_equal(compiled(x).detach().numpy(), model(x).detach().numpy())
    assert compiled._orig_mod is model


def test_signatures_the_graph_cannot_take_positionally_run_eagerly():
    backend = Recorder()

    def scaled(x, *, scale=2.0):
        return x * scale

    def summed(*xs):
        return sum(xs)

    np.testing.assert_array_equal(pyframe.compile(scaled, backend=backend)(pyframe.ones(2), scale=3.0).numpy(), [3, 3])
    np.testing.assert_array_equal(
        pyframe.compile(summed, backend=backend)(pyframe.ones(2), pyframe.ones(2)).numpy(), [2, 2]
    )
    assert backend.graphs == []
