"""Proxies made outside a trace: graphs built and edited by hand (pytorch/examples' fx programs), as torch's
``__torch_function__`` lets them."""

import gc

import pytest

import pyframe
import pyframe.nn.functional as F
from pyframe import fx, nn


def test_hand_built_proxies_record_pyframe_functions_without_a_tracer_block():
    ops = [pyframe.cat, pyframe.tanh, pyframe.neg]
    graph = fx.Graph()
    tracer = fx.proxy.GraphAppendingTracer(graph)
    y = fx.Proxy(graph.placeholder("x"), tracer)
    z = fx.Proxy(graph.placeholder("y"))  # no tracer: one that appends to the node's graph
    c = pyframe.neg(pyframe.tanh(pyframe.cat([y, z])))
    graph.output(c.node)
    gm = fx.GraphModule(nn.Module(), graph)
    x1, x2 = pyframe.tensor([0.5, -1.0]), pyframe.tensor([2.0])
    assert pyframe.allclose(gm(x1, x2), -pyframe.tanh(pyframe.cat([x1, x2])))
    assert [n.target for n in graph.nodes if n.op == "call_function"] == ops  # the functions, not the swaps


def test_the_swaps_end_with_the_last_loose_proxy():
    tanh = pyframe.tanh
    graph = fx.Graph()
    p = fx.Proxy(graph.placeholder("x"))
    q = fx.Proxy(graph.placeholder("y"))
    assert pyframe.tanh is not tanh  # recording while they live
    del p
    gc.collect()
    assert pyframe.tanh is not tanh  # q still lives
    del q
    gc.collect()
    assert pyframe.tanh is tanh and F.relu.__module__.startswith("pyframe")
    assert pyframe.tanh(pyframe.tensor([0.0])).tolist() == [0.0]


def test_inline_a_traced_module_into_an_existing_graph():
    # pytorch/examples fx/wrap_output_dynamically.py: a traced module called on a Proxy of another graph's node
    class M(nn.Module):
        def forward(self, x, y):
            return x * y

    traced = fx.symbolic_trace(M())
    output = next(n for n in traced.graph.nodes if n.op == "output")
    wrap = fx.Proxy(output.all_input_nodes[0])
    act = fx.symbolic_trace(nn.LeakyReLU())  # traced while a loose Proxy lives: still named by its path
    assert "pyframe.nn.functional.leaky_relu(" in act.code
    with traced.graph.inserting_after(wrap.node):
        output.args = (act(wrap).node,)
    traced.recompile()
    x, y = pyframe.tensor([1.0, -2.0]), pyframe.tensor([3.0, 4.0])
    assert traced(x, y).tolist() == F.leaky_relu(x * y).tolist()


def test_a_global_never_takes_a_nodes_name():
    def add_lowp(a, b):
        return a + b

    graph = fx.Graph()
    a = graph.placeholder("a")
    out = graph.call_function(add_lowp, (a, a))
    assert out.name == "add_lowp"  # the node and the function share a name
    graph.output(out)
    gm = fx.GraphModule(nn.Module(), graph)
    assert gm(pyframe.tensor([1.5])).tolist() == [3.0]


def test_profiler_ranges_survive_tracing(monkeypatch):
    # pytorch/examples fx/profiling_tracer.py: a tracer that emits record_function ranges as torch.ops.profiler calls
    rf = pyframe.autograd.profiler.record_function
    prof_ops = pyframe.ops.profiler

    class Foo(nn.Module):
        def forward(self, x):
            with pyframe.profiler.record_function("foo"):
                return pyframe.relu(x)

    class ProfilerTracer(fx.Tracer):
        def trace(self, root, concrete_args=None):
            def enter(r):
                r._handle = self.create_proxy("call_function", prof_ops._record_function_enter, (r.name,), {})
                return r._handle

            def exit_(r, *exc):
                prof_ops._record_function_exit(r._handle)  # a Proxy argument: recorded

            monkeypatch.setattr(rf, "__enter__", enter)
            monkeypatch.setattr(rf, "__exit__", exit_)
            try:
                return super().trace(root, concrete_args)
            finally:
                monkeypatch.undo()

    tracer = ProfilerTracer()
    graph = tracer.trace(Foo())
    gm = fx.GraphModule(tracer.root, graph)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == [prof_ops._record_function_enter, pyframe.relu, prof_ops._record_function_exit]
    with pyframe.autograd.profiler.profile() as prof:
        gm(pyframe.tensor([-1.0, 1.0]))
    table = str(prof)
    assert "foo" in table and "Self CPU" in table
    with pytest.raises(TypeError, match="handle"):
        prof_ops._record_function_exit(object())
