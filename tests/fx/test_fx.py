"""pyframe.fx against torch.fx on the same models: the programs of pytorch/examples' fx folder in their
style (invert a function, swap an op, rewrite a pattern, propagate shapes), graph and code checks, and
GraphModule outputs equal to the module's."""

from __future__ import annotations

import math
import operator

import numpy as np
import pytest

import pyframe
import pyframe.fx as fx
import pyframe.nn as nn
import pyframe.nn.functional as F  # noqa: N812
from pyframe.fx.passes.shape_prop import ShapeProp


def _mlp(lib):
    class MLP(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(4, 8)
            self.act = lib.nn.ReLU()
            self.fc2 = lib.nn.Linear(8, 3)
            self.scale = lib.nn.Parameter(lib.ones(3))

        def forward(self, x):
            h = self.act(self.fc1(x))
            h = lib.nn.functional.dropout(h, 0.0, self.training)
            y = self.fc2(h) * self.scale + 1.0
            return lib.sigmoid(y).view(y.shape[0], -1).sum(dim=-1)

    return MLP()


def _weights(torch_mod, mod) -> None:
    sd = {k: pyframe.tensor(v.detach().numpy()) for k, v in torch_mod.state_dict().items()}
    mod.load_state_dict(sd)


def _data(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _summary(graph):
    return [(n.op, n.name) for n in graph.nodes]


def test_trace_matches_torch_fx_graph_and_output():
    torch = pytest.importorskip("torch")
    tm, m = _mlp(torch), _mlp(pyframe)
    _weights(tm, m)
    tgm, gm = torch.fx.symbolic_trace(tm), fx.symbolic_trace(m)
    assert _summary(gm.graph) == _summary(tgm.graph)
    x = _data(5, 4)
    np.testing.assert_allclose(
        gm(pyframe.tensor(x)).detach().numpy(), m(pyframe.tensor(x)).detach().numpy(), rtol=0, atol=0
    )
    np.testing.assert_allclose(gm(pyframe.tensor(x)).detach().numpy(), tgm(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)  # fmt: skip
    assert "self.fc1(x)" in gm.code and "pyframe.sigmoid(" in gm.code
    assert "class MLP(pyframe.nn.Module):" in gm.print_readable(print_output=False)


# ---- pytorch/examples fx/invert.py: the inverse of a function, built node by node ---------------------
def _invert(fx_lib, fn, mapping):
    traced = fx_lib.symbolic_trace(fn)
    new_graph = fx_lib.Graph()
    env = {}
    for node in reversed(traced.graph.nodes):
        if node.op == "call_function":
            new_node = new_graph.call_function(mapping[node.target], (env[node.name],))
            env[node.args[0].name] = new_node
        elif node.op == "output":
            env[node.args[0].name] = new_graph.placeholder(node.name)
        elif node.op == "placeholder":
            new_graph.output(env[node.name])
    new_graph.lint()
    return fx_lib.GraphModule(traced, new_graph)


def _inverses(lib):
    pairs = [(lib.sin, lib.asin), (lib.cos, lib.acos), (lib.tan, lib.atan), (lib.exp, lib.log)]
    return {**dict(pairs), **{b: a for a, b in pairs}}


def test_invert_as_pytorch_examples():
    torch = pytest.importorskip("torch")

    def f(x):
        return pyframe.exp(pyframe.tan(x))

    def tf(x):
        return torch.exp(torch.tan(x))

    inv, tinv = _invert(fx, f, _inverses(pyframe)), _invert(torch.fx, tf, _inverses(torch))
    assert _summary(inv.graph) == _summary(tinv.graph)
    x = pyframe.tensor([0.1, 0.5, 1.0])
    np.testing.assert_allclose(inv(f(x)).detach().numpy(), x.numpy(), rtol=1e-5)
    np.testing.assert_allclose(
        inv(f(x)).detach().numpy(), tinv(tf(torch.tensor(x.numpy()))).detach().numpy(), rtol=1e-5
    )
    assert "pyframe.log(output)" in inv.code and "pyframe.atan(log)" in inv.code


# ---- replace an op: graph surgery and the Transformer -------------------------------------------------
class _AddRelu(nn.Module):
    def forward(self, x, y):
        return pyframe.relu(x + y) - y


def test_swap_op_by_graph_surgery_and_transformer():
    torch = pytest.importorskip("torch")

    class TorchAddRelu(torch.nn.Module):
        def forward(self, x, y):
            return torch.relu(x + y) - y

    def surgery(fx_lib, mod, relu, gelu):
        gm = fx_lib.symbolic_trace(mod)
        for node in gm.graph.nodes:
            if node.op == "call_function" and node.target is operator.add:
                node.target = operator.mul
            if node.op == "call_function" and node.target is relu:
                with gm.graph.inserting_after(node):
                    new = gm.graph.call_function(gelu, node.args, node.kwargs)
                node.replace_all_uses_with(new)
                gm.graph.erase_node(node)
        gm.graph.lint()
        gm.recompile()
        return gm

    gm = surgery(fx, _AddRelu(), pyframe.relu, F.gelu)
    tgm = surgery(torch.fx, TorchAddRelu(), torch.relu, torch.nn.functional.gelu)
    assert _summary(gm.graph) == _summary(tgm.graph)
    x, y = _data(3, 4), _data(3, 4, seed=1)
    want = tgm(torch.tensor(x), torch.tensor(y)).detach().numpy()
    np.testing.assert_allclose(gm(pyframe.tensor(x), pyframe.tensor(y)).detach().numpy(), want, rtol=1e-5, atol=1e-6)

    class Swap(fx.Transformer):
        def call_function(self, target, args, kwargs):
            if target is operator.sub:
                return pyframe.sigmoid(args[0]) + args[1]  # pyframe calls on Proxies inside a Transformer
            return super().call_function(target, args, kwargs)

    out = Swap(fx.symbolic_trace(_AddRelu())).transform()
    got = out(pyframe.tensor(x), pyframe.tensor(y)).detach().numpy()
    np.testing.assert_allclose(got, torch.sigmoid(torch.relu(torch.tensor(x + y))).detach().numpy() + y, rtol=1e-6)
    assert [n.target for n in out.graph.nodes if n.op == "call_function"] == [
        operator.add,
        pyframe.relu,
        pyframe.sigmoid,
        operator.add,
    ]


# ---- subgraph_rewriter ------------------------------------------------------------------------------
def test_replace_pattern_as_torch():
    torch = pytest.importorskip("torch")

    def make(lib):
        class M(lib.nn.Module):
            def forward(self, x, w1, w2):
                m1 = lib.cat([w1, w2]).sum()
                m2 = lib.cat([w1, w2]).sum()
                return x + lib.max(m1) + lib.max(m2)

        def pattern(w1, w2):
            return lib.cat([w1, w2]).sum()

        def replacement(w1, w2):
            return lib.stack([w1, w2])

        return M(), pattern, replacement

    m, p, r = make(pyframe)
    tm, tp, tr = make(torch)
    gm, tgm = fx.symbolic_trace(m), torch.fx.symbolic_trace(tm)
    matches = fx.replace_pattern(gm, p, r)
    tmatches = torch.fx.replace_pattern(tgm, tp, tr)
    assert len(matches) == len(tmatches) == 2
    assert [(n.op, getattr(n.target, "__name__", n.target)) for n in gm.graph.nodes] == \
        [(n.op, getattr(n.target, "__name__", n.target)) for n in tgm.graph.nodes]  # fmt: skip
    x, w1, w2 = _data(2, 3), _data(2, 3, seed=1), _data(2, 3, seed=2)
    got = gm(*map(pyframe.tensor, (x, w1, w2))).detach().numpy()
    np.testing.assert_allclose(got, tgm(*map(torch.tensor, (x, w1, w2))).detach().numpy(), rtol=1e-6)


def test_replace_pattern_keeps_matches_read_elsewhere():
    def f(x):
        a = pyframe.relu(x)
        return pyframe.neg(a) + a

    gm = fx.symbolic_trace(f)
    assert fx.replace_pattern(gm, lambda x: pyframe.neg(pyframe.relu(x)), lambda x: x) == []


# ---- shape propagation -----------------------------------------------------------------------------
def _cnn(lib):
    class CNN(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = lib.nn.Conv2d(3, 4, 3, padding=1)
            self.bn = lib.nn.BatchNorm2d(4)
            self.pool = lib.nn.MaxPool2d(2)
            self.fc = lib.nn.Linear(4 * 4 * 4, 5)

        def forward(self, x):
            x = self.pool(lib.nn.functional.relu(self.bn(self.conv(x))))
            return lib.nn.functional.log_softmax(self.fc(lib.flatten(x, 1)), dim=1)

    return CNN().eval()


def test_shape_prop_as_torch():
    torch = pytest.importorskip("torch")
    from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp

    tm, m = _cnn(torch), _cnn(pyframe)
    _weights(tm, m)
    x = _data(2, 3, 8, 8)
    gm, tgm = fx.symbolic_trace(m), torch.fx.symbolic_trace(tm)
    out = ShapeProp(gm).propagate(pyframe.tensor(x))
    TorchShapeProp(tgm).propagate(torch.tensor(x))
    mine = [(n.name, tuple(n.meta["tensor_meta"].shape), n.meta["tensor_meta"].dtype.name) for n in gm.graph.nodes
            if "tensor_meta" in n.meta]  # fmt: skip
    theirs = [(n.name, tuple(n.meta["tensor_meta"].shape), str(n.meta["tensor_meta"].dtype).split(".")[1])
              for n in tgm.graph.nodes if "tensor_meta" in n.meta]  # fmt: skip
    assert mine == theirs
    np.testing.assert_allclose(out.detach().numpy(), tm(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-5)


# ---- tracer options, graph API ---------------------------------------------------------------------
def test_leaf_modules_and_concrete_args():
    torch = pytest.importorskip("torch")

    class Inner(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(x).relu()

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x, flag=True):
            return self.inner(x) * 2 if flag else x

    class LeafInner(fx.Tracer):
        def is_leaf_module(self, m, name):
            return isinstance(m, Inner) or super().is_leaf_module(m, name)

    m = Outer()
    g = LeafInner().trace(m, concrete_args={"flag": True})
    assert [n.op for n in g.nodes] == ["placeholder", "placeholder", "call_module", "call_function", "output"]
    full = fx.symbolic_trace(m, concrete_args={"flag": True}).graph
    assert [n.target for n in full.find_nodes(op="call_module")] == ["inner.lin"]
    tg = torch.fx.symbolic_trace(_torch_outer(torch), concrete_args={"flag": True}).graph
    assert [n.op for n in tg.nodes if n.op != "call_function"] == [n.op for n in full.nodes if n.op != "call_function"]
    with pytest.raises(fx.TraceError, match="control flow"):
        fx.symbolic_trace(m)
    gm = fx.symbolic_trace(m, concrete_args={"flag": False})
    x = pyframe.randn(2, 3)
    assert gm(x) is x or (gm(x) == x).all()
    assert "def forward(self, x, flag = True)" in gm.code  # the input keeps its own default, as torch's

    # a fixed value that has no literal (a Tensor) or comes before an input without default: the code is valid
    # Python, the input stays in the signature (unused: the graph is specialised to the value), as in torch
    def f(x, y):
        return -y if x.sum() < 0 else y

    y = pyframe.randn(3)
    for value in (pyframe.ones(2), -pyframe.ones(2)):
        gm = fx.symbolic_trace(f, concrete_args={"x": value})
        assert "def forward(self, x, y)" in gm.code
        assert pyframe.equal(gm(-value, y), f(value, y))  # specialised: the new x does not change the branch
    gm = fx.symbolic_trace(lambda x, y: x + y, concrete_args={"x": 3})
    assert "def forward(self, x, y)" in gm.code and pyframe.equal(gm(3, y), y + 3)


def _torch_outer(torch):
    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x, flag=True):
            return self.lin(x).relu() * 2 if flag else x

    return Outer()


def test_graph_editing_api():
    g = fx.Graph()
    x = g.placeholder("x")
    r = g.call_function(pyframe.relu, (x,))
    dead = g.call_method("sum", (x,))
    out = g.output(r)
    with g.inserting_before(out):
        n = g.call_function(operator.neg, (r,))
    out.args = (n,)
    assert [u.name for u in r.users] == ["neg"] and dead.users == {}
    assert g.eliminate_dead_code() and "sum" not in [n.name for n in g.nodes]
    g.lint()
    gm = fx.GraphModule(nn.Module(), g)
    assert gm(pyframe.tensor([-1.0, 2.0])).tolist() == [0.0, -2.0]
    with pytest.raises(RuntimeError, match="still has 1 user"):
        g.erase_node(r)
    bad = fx.Graph()
    y = bad.placeholder("y")
    z = bad.call_function(pyframe.relu, (y,))
    bad.output(z)
    with bad.inserting_before(z):
        bad.call_function(pyframe.neg, (z,))
    with pytest.raises(RuntimeError, match="before it is defined"):
        bad.lint()
    assert "%relu : [num_users=1] = call_function[target=pyframe.relu]" in str(g)


def test_interpreter_and_proxy_built_graph():
    m = _mlp(pyframe)
    gm = fx.symbolic_trace(m)
    x = pyframe.randn(4, 4)
    seen = []

    class Counting(fx.Interpreter):
        def run_node(self, n):
            seen.append(n.op)
            return super().run_node(n)

    np.testing.assert_array_equal(Counting(gm).run(x).detach().numpy(), m(x).detach().numpy())
    assert seen.count("call_module") == 3
    # pytorch/examples fx/proxy_based_graph_creation.py: a graph built by calling functions on Proxies
    graph = fx.Graph()
    with fx.proxy.GraphAppendingTracer(graph) as tracer:
        a = fx.Proxy(graph.placeholder("x"), tracer)
        b = pyframe.cat([a, a]) * 2
        graph.output(pyframe.relu(b).node)
    gm2 = fx.GraphModule(nn.Module(), graph)
    assert gm2(pyframe.tensor([-1.0, 3.0])).tolist() == [0.0, 6.0, 0.0, 6.0]


def test_capture_follows_values_and_keeps_shapes():
    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            b, t = x.shape[0], x.shape[1]
            if x.dim() == 3 and x.sum() > -1e9:  # values steer the trace
                x = self.lin(x).reshape(b * t, -1)
            return F.softmax(x / math.sqrt(x.size(-1)), dim=-1)

    m = Branchy()
    x = pyframe.randn(2, 3, 4)
    gm = fx.capture(m, (x,))
    assert all("val" in n.meta for n in gm.graph.nodes if n.op != "output")
    np.testing.assert_array_equal(gm(x).detach().numpy(), m(x).detach().numpy())
    y = pyframe.randn(5, 3, 4)
    np.testing.assert_array_equal(gm(y).detach().numpy(), m(y).detach().numpy())  # the batch size stayed a node
    assert gm.graph.find_nodes(op="call_module")[0].meta["module_path"] == "lin"


def _wrapped_helper(x):
    return x.relu() + len(x.shape)  # len() of a Proxy would fail if traced through


fx.wrap("_wrapped_helper")


def test_wrap_deepcopy_tabular_and_unused_submodules(capsys):
    import copy

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(3, 3), nn.Linear(3, 3)

        def forward(self, x):
            return self.b(_wrapped_helper(self.a(x)))

    gm = fx.symbolic_trace(M())
    helper = gm.graph.find_nodes(op="call_function")[0]
    assert helper.target is _wrapped_helper and "_wrapped_helper(a)" in gm.code
    x = pyframe.randn(2, 3)
    twin = copy.deepcopy(gm)
    out = next(n for n in gm.graph.nodes if n.op == "output")
    out.args = (helper,)  # drop self.b from gm only
    gm.graph.eliminate_dead_code()
    gm.recompile()
    gm.delete_all_unused_submodules()
    assert not hasattr(gm, "b") and hasattr(twin, "b")
    np.testing.assert_array_equal(twin(x).detach().numpy(), M.forward(twin, x).detach().numpy())
    gm.graph.print_tabular()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs"] and len(lines) == 2 + 4


def test_node_moves_and_input_replacement():
    g = fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(pyframe.exp, (x,))
    b = g.call_function(pyframe.neg, (x,))
    c = g.call_function(operator.add, (a, b))
    g.output(c)
    a.prepend(b)  # b now comes first
    assert [n.name for n in g.nodes] == ["x", "neg", "exp", "add", "output"]
    c.replace_input_with(b, x)
    assert set(c.all_input_nodes) == {a, x} and b.users == {}
    g.erase_node(b)
    g.lint()
    gm = fx.GraphModule(nn.Module(), g)
    t = pyframe.tensor([0.0, 1.0])
    np.testing.assert_allclose(gm(t).numpy(), np.exp([0.0, 1.0]) + [0.0, 1.0], rtol=1e-6)
    with pytest.raises(fx.TraceError, match="iterated"):
        fx.symbolic_trace(lambda x: [v for v in x])


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt_block", "lstm_lm", "transformer_encoder"])
def test_exported_models_trace_as_torch_fx(name):
    torch = pytest.importorskip("torch")
    from tests.onnx import models

    m, tm = getattr(models, name)(pyframe).eval(), getattr(models, name)(torch)
    gm, tgm = fx.symbolic_trace(m), torch.fx.symbolic_trace(tm)
    assert _summary(gm.graph) == _summary(tgm.graph)
    assert [str(n.target).rpartition(".")[2] for n in gm.graph.nodes if n.op != "call_function"] == \
        [str(n.target).rpartition(".")[2] for n in tgm.graph.nodes if n.op != "call_function"]  # fmt: skip
    inputs = {
        "mlp": (pyframe.randn(3, 6),), "cnn": (pyframe.randn(2, 3, 12, 12),),
        "gpt_block": (pyframe.randint(0, 11, (2, 5)),),
        "lstm_lm": (pyframe.randint(0, 13, (4, 2)), (pyframe.randn(2, 2, 12), pyframe.randn(2, 2, 12))),
        "transformer_encoder": (pyframe.randn(2, 5, 16), pyframe.zeros(2, 5, dtype=pyframe.bool)),
    }[name]  # fmt: skip
    with pyframe.no_grad():
        want, got = m(*inputs), gm(*inputs)
    for w, g in zip(_leaves(want), _leaves(got), strict=True):
        np.testing.assert_array_equal(g.numpy(), w.numpy())


def _leaves(x):
    return [y for v in x for y in _leaves(v)] if isinstance(x, (tuple, list)) else [x]
