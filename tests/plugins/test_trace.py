"""``pyframe.plugins.trace()``, ``explain(model)`` and errors that name the plugin behind them."""

from __future__ import annotations

import math

import pytest

import pyframe
from pyframe import _hooks
from pyframe.hookspecs import hookimpl
from pyframe.nn import BLOCK
from tests.plugins.conftest import shipped_module


class Meddler:
    """Changes one thing of each kind: a float64 parameter becomes float32, a buffer named 'scratch' is blocked,
    ReLU outputs are doubled, Linear gradients halved; raises on a module named Boom."""

    @hookimpl
    def pyframe_module_parameter_registration(self, module, name, param):
        if param is not None and param.dtype == pyframe.float64:
            return pyframe.nn.Parameter(param.detach().float(), param.requires_grad)
        return None

    @hookimpl
    def pyframe_module_buffer_registration(self, module, name, buffer):
        return BLOCK if name == "scratch" else None

    @hookimpl
    def pyframe_module_forward(self, module, output):
        return output * 2 if isinstance(module, pyframe.nn.ReLU) else None

    @hookimpl
    def pyframe_module_full_backward(self, module, grad_input):
        if isinstance(module, pyframe.nn.Linear):
            return tuple(None if g is None else g * 0.5 for g in grad_input)
        return None

    @hookimpl
    def pyframe_module_forward_pre(self, module, args):
        if type(module).__name__ == "Boom":
            raise RuntimeError("meddler refuses Boom")
        return None


class Boom(pyframe.nn.Module):
    def forward(self, x):
        return x


def build():
    model = pyframe.nn.Sequential(
        pyframe.nn.Linear(3, 4, dtype=pyframe.float64), pyframe.nn.ReLU(), pyframe.nn.Linear(4, 2)
    )
    model[1].register_buffer("scratch", pyframe.zeros(1))
    for p in model[0].parameters():  # every ReLU input positive, so a gradient reaches x whatever the seed
        pyframe.nn.init.constant_(p, 0.1)
    return model


def test_trace_records_what_each_plugin_did_with_qualified_names():
    with pyframe.plugins.activated(Meddler(), "meddler"), pyframe.plugins.trace() as t:
        model = build()
        opt = pyframe.optim.SGD(model.parameters(), lr=0.1)
        x = pyframe.ones(5, 3).requires_grad_()
        for _ in range(3):
            model(x).sum().backward()
            opt.step()
            opt.zero_grad()
        with pytest.raises(RuntimeError, match="meddler refuses Boom"):
            pyframe.nn.Sequential(Boom())(x)
    regs = {(r["name"], r["action"]): r for r in t.registrations}
    assert set(regs) == {("0.weight", "replaced"), ("0.bias", "replaced"), ("1.scratch", "blocked")}
    w = regs[("0.weight", "replaced")]
    assert w["plugin"] == "meddler" and w["kind"] == "parameter"
    assert w["old"] == {"dtype": "float64", "shape": [4, 3], "requires_grad": True}
    assert w["new"] == {"dtype": "float32", "shape": [4, 3], "requires_grad": True}
    assert regs[("1.scratch", "blocked")]["new"] is None
    assert t.forwards == [{"plugin": "meddler", "what": "outputs", "module": "1", "count": 3}]
    grads = {g["module"]: g for g in t.gradients}
    assert set(grads) == {"0", "2"}  # the gradients each Linear passed on (to x, to the ReLU)
    assert grads["2"]["count"] == 3 and grads["0"]["count"] == 3
    assert math.isclose(grads["2"]["largest_relative_change"], 0.5)
    (err,) = t.errors
    assert err["plugin"] == "meddler" and err["hook"] == "forward_pre" and err["module"] == "0"
    assert err["error"] == "RuntimeError: meddler refuses Boom"
    d = t.durations["meddler"]
    assert t.steps == 3 and d["calls"] > 0 and d["per_step"] == pytest.approx(d["total"] / 3)
    assert {"parameter_registration", "buffer_registration", "forward", "full_backward", "forward_pre"} <= set(
        d["hooks"]
    )
    text = t.report()
    assert "meddler:\n    parameter 0.weight: replaced: dtype float64 -> float32" in text
    assert "buffer 1.scratch: blocked" in text and "largest relative change 0.5" in text
    table = t.durations_table(2)
    assert "slowest 2 plugin hook durations" in table and "(3 optimizer steps; " in table


def test_trace_off_leaves_the_plugins_functions_alone():
    plugin = Meddler()
    with pyframe.plugins.activated(plugin, "meddler"):
        (call, _, src) = _hooks.forward.entries[0]
        assert src.name == "meddler"
        plain = [e[0] for r in _hooks.REGISTRIES for e in r.entries]
        with pyframe.plugins.trace():
            assert _hooks.forward.entries[0][0].__wrapped__ is call  # wrapped while the trace is on
        assert [e[0] for r in _hooks.REGISTRIES for e in r.entries] == plain  # the same functions, nothing between
    assert not pyframe.optim.optimizer._global_step_post_hooks  # the step counter is gone with the trace
    with pyframe.plugins.trace(), pytest.raises(RuntimeError, match="already on"):
        pyframe.plugins.trace().__enter__()


def test_every_optimizer_step_counts_lbfgs_too():
    lin = pyframe.nn.Linear(2, 1)
    x, y = pyframe.randn(8, 2), pyframe.randn(8, 1)
    lbfgs = pyframe.optim.LBFGS(lin.parameters(), max_iter=3)
    sgd = pyframe.optim.SGD(lin.parameters(), lr=0.1)

    def closure():
        lbfgs.zero_grad()
        loss = ((lin(x) - y) ** 2).mean()
        loss.backward()
        return loss

    with pyframe.plugins.trace() as t:
        for _ in range(2):
            lbfgs.step(closure)  # one step each, however many closure calls it makes
        closure()
        sgd.step()
    assert t.steps == 3


def test_explain_names_the_plugin_of_each_parameter_and_buffer():
    enforcer = shipped_module("float32-enforcer")
    with pyframe.plugins.activated(enforcer, "float32-enforcer"):
        model = pyframe.nn.Sequential(pyframe.nn.Linear(2, 3, dtype=pyframe.float64), pyframe.nn.BatchNorm1d(3))
    ex = pyframe.plugins.explain(model)
    assert set(ex) == {
        "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var", "1.num_batches_tracked"
    }  # fmt: skip
    assert [c["plugin"] for c in ex["0.weight"]] == ["float32-enforcer"]
    assert ex["0.weight"][0]["old"]["dtype"] == "float64" and ex["0.weight"][0]["new"]["dtype"] == "float32"
    assert ex["1.weight"] == [] and ex["1.num_batches_tracked"] == []
    assert str(ex).splitlines() == [
        "0.weight: float32-enforcer replaced: dtype float64 -> float32",
        "0.bias: float32-enforcer replaced: dtype float64 -> float32",
        "(5 of 7 parameters and buffers untouched by plugins)",
    ]


def test_the_float64_error_names_the_plugin_that_converted_the_weight():
    enforcer = shipped_module("float32-enforcer")
    with pyframe.plugins.activated(enforcer, "float32-enforcer"):
        model = pyframe.nn.Sequential(pyframe.nn.Linear(2, 3, dtype=pyframe.float64))
        with pytest.raises(TypeError, match="input is float64 but weight is float32") as e:
            model(pyframe.ones(1, 2, dtype=pyframe.float64))
    (note,) = e.value.__notes__
    assert note.startswith("0.weight was converted from float64 to float32 by plugin float32-enforcer")
    assert "disable it (pyframe run -p no:float32-enforcer" in note
    assert "or set float32-enforcer.dtype = 'float64'" in note
    # an error that has nothing to do with the change gets no note
    with pyframe.plugins.activated(enforcer, "float32-enforcer"):
        lin = pyframe.nn.Linear(2, 3, dtype=pyframe.float64)
        with pytest.raises(Exception) as e2:
            lin(pyframe.ones(1, 5))
    assert not getattr(e2.value, "__notes__", [])
