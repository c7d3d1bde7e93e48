"""The eight global module hook registries (API.md "The global hook registries" and "Plugins"),
with torch's global hooks as the oracle for call sequences and arguments where torch is installed."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
import pyframe.nn as nn
import pyframe.optim as optim
from pyframe.nn.modules import module as module_mod
from tests._helpers import log_module_hooks

try:
    import torch
    from torch.nn.modules import module as tmod
except ImportError:  # torch is the oracle only
    torch = None


pytestmark = pytest.mark.usefixtures("no_installed_plugins")  # built-in plugins off: only the tests' own hooks


def arr(t):
    return np.array(t.tolist())


# ---- registration hooks ----------------------------------------------------------------------------


def test_registration_hooks_chain_in_order_none_keeps_value_replaces():
    seen = []

    def first(m, name, p):
        seen.append(("first", name, p.shape))
        if name == "weight":
            return nn.Parameter(pyframe.zeros(*p.shape))

    def second(m, name, p):
        seen.append(("second", name, p.tolist() if name == "weight" else None))

    nn.register_module_parameter_registration_hook(first)
    nn.register_module_parameter_registration_hook(second)
    lin = nn.Linear(2, 1)
    assert seen == [("first", "weight", (1, 2)), ("second", "weight", [[0.0, 0.0]]),
                    ("first", "bias", (1,)), ("second", "bias", None)]  # fmt: skip
    assert lin.weight.tolist() == [[0.0, 0.0]] and type(lin.weight) is nn.Parameter


def test_plain_tensor_becomes_parameter_keeping_requires_grad():
    nn.register_module_parameter_registration_hook(lambda m, n, p: p.to(dtype=pyframe.float64))
    lin = nn.Linear(2, 2)
    assert type(lin.weight) is nn.Parameter and lin.weight.dtype == pyframe.float64 and lin.weight.requires_grad
    m = nn.Module()
    m.frozen = nn.Parameter(pyframe.ones(1), requires_grad=False)
    assert type(m.frozen) is nn.Parameter and not m.frozen.requires_grad


def test_block_registers_none_and_ends_chain():
    later = []
    nn.register_module_parameter_registration_hook(lambda m, n, p: nn.BLOCK if n == "bias" else None)
    nn.register_module_parameter_registration_hook(lambda m, n, p: later.append(n))
    lin = nn.Linear(3, 2)
    assert later == ["weight"]
    assert "bias" in lin._parameters and lin.bias is None
    assert [n for n, _ in lin.named_parameters()] == ["weight"] and list(lin.state_dict()) == ["weight"]
    opt = optim.SGD(lin.parameters(), lr=0.1)
    assert [len(g["params"]) for g in opt.param_groups] == [1]
    assert lin(pyframe.ones(1, 3)).shape == (1, 2)


def test_buffer_hooks_see_none_and_may_replace_or_block():
    seen = []

    def hook(m, name, buf):
        seen.append((name, buf))
        if name == "fill":
            return pyframe.zeros(2)
        if name == "temp_buffer":
            return nn.BLOCK

    nn.register_module_buffer_registration_hook(hook)
    m = nn.Module()
    m.register_buffer("empty", None)
    m.register_buffer("fill", None)
    m.register_buffer("temp_buffer", pyframe.ones(1))
    assert seen[0] == ("empty", None) and seen[1] == ("fill", None)
    assert m.empty is None and m.fill.tolist() == [0.0, 0.0] and m.temp_buffer is None
    assert list(m.state_dict()) == ["fill"]


def test_module_registration_hook_replaces_and_blocks():
    def swap(m, n, sub):
        return nn.Identity() if isinstance(sub, nn.Tanh) else nn.BLOCK if isinstance(sub, nn.ReLU) else None

    nn.register_module_module_registration_hook(swap)
    seq = nn.Sequential(nn.Linear(2, 2), nn.Tanh(), nn.ReLU())
    assert isinstance(seq[1], nn.Identity) and seq[2] is None
    x = pyframe.randn(3, 2)
    np.testing.assert_allclose(arr(seq(x)), arr(seq[0](x)))


@pytest.mark.parametrize(
    ("register", "value", "build"),
    [
        (nn.register_module_parameter_registration_hook, "not a tensor", lambda: nn.Linear(2, 2)),
        (nn.register_module_buffer_registration_hook, 3, lambda: nn.BatchNorm1d(2)),
        (nn.register_module_module_registration_hook, pyframe.ones(1), lambda: nn.Sequential(nn.ReLU())),
    ],
)
def test_replacement_type_is_checked_naming_the_hook(register, value, build):
    def wrong_kind(m, name, v):
        return value

    register(wrong_kind)
    with pytest.raises(TypeError, match="wrong_kind") as info:
        build()
    assert "BLOCK" in str(info.value)


def test_error_keeps_type_gains_note_and_leaves_module_unchanged():
    m = nn.Module()
    m.register_buffer("x", pyframe.ones(1))

    def exploding(module, name, param):
        raise ValueError("nope")

    nn.register_module_parameter_registration_hook(exploding)
    with pytest.raises(ValueError, match="nope") as info:
        m.x = nn.Parameter(pyframe.zeros(1))  # would replace the buffer
    notes = "\n".join(info.value.__notes__)
    assert "exploding" in notes and __name__ in notes and "parameter registration hook" in notes
    assert m._buffers["x"].tolist() == [1.0] and "x" not in m._parameters


def test_forward_and_backward_errors_gain_notes():
    def bad_forward(m, args, out):
        raise KeyError("fwd")

    h = nn.register_module_forward_hook(bad_forward)
    with pytest.raises(KeyError) as info:
        nn.ReLU()(pyframe.ones(1))
    assert any("bad_forward" in n for n in info.value.__notes__)
    h.remove()

    def bad_backward(m, gi, go):
        raise ArithmeticError("bwd")

    nn.register_module_full_backward_hook(bad_backward)
    x = pyframe.ones(2, requires_grad=True)
    with pytest.raises(ArithmeticError) as info:
        nn.Tanh()(x).sum().backward()
    assert any("bad_backward" in n for n in info.value.__notes__)


# ---- forward / backward hooks -------------------------------------------------------------------------


def test_apply_to_modules_built_before_and_run_global_first():
    m = nn.Linear(2, 1)  # built before any hook exists
    order = []
    log_module_hooks(m, order)
    nn.register_module_forward_pre_hook(lambda *a: order.append("g_pre"))
    nn.register_module_forward_hook(lambda *a: order.append("g_fwd"))
    nn.register_module_full_backward_pre_hook(lambda *a: order.append("g_bpre"))
    nn.register_module_backward_hook(lambda *a: order.append("g_bwd"))
    m(pyframe.ones(1, 2, requires_grad=True)).sum().backward()
    assert order == ["g_pre", "pre", "g_fwd", "fwd", "g_bpre", "bpre", "g_bwd", "bwd"]


def test_forward_pre_and_forward_hooks_replace():
    nn.register_module_forward_pre_hook(lambda m, args: args[0] * 2)  # a single value is wrapped
    nn.register_module_forward_hook(lambda m, args, out: out + 1)
    nn.register_module_forward_hook(lambda m, args, kwargs, out: out * 10, with_kwargs=True)
    assert nn.Identity()(pyframe.ones(1)).tolist() == [30.0]


def test_forward_pre_with_kwargs():
    nn.register_module_forward_pre_hook(lambda m, args, kwargs: (args, {**kwargs, "k": 5}), with_kwargs=True)

    class M(nn.Module):
        def forward(self, x, k=0):
            return x + k

    assert M()(pyframe.zeros(1)).tolist() == [5.0]


def test_always_call_forward_hook_runs_when_forward_raises():
    calls = []
    nn.register_module_forward_hook(lambda m, a, o: calls.append(("always", o)), always_call=True)
    nn.register_module_forward_hook(lambda m, a, o: calls.append("normal"))

    class Boom(nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        Boom()(pyframe.ones(1))
    assert calls == [("always", None)]


def test_backward_hooks_replace_gradients_and_check_length():
    nn.register_module_full_backward_pre_hook(lambda m, go: tuple(g * 2 for g in go))
    nn.register_module_full_backward_hook(lambda m, gi, go: tuple(None if g is None else g + 1 for g in gi))
    x = pyframe.ones(3, requires_grad=True)
    nn.Identity()(x).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    nn.register_module_full_backward_hook(lambda m, gi, go: (*gi, None))
    y = pyframe.ones(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="invalid number"):
        nn.Identity()(y).sum().backward()


def test_handles_remove_and_fast_flag():
    calls = []
    h = nn.register_module_forward_hook(lambda *a: calls.append(1))
    assert module_mod._global_hooks_active and isinstance(h, pyframe.utils.hooks.RemovableHandle)
    nn.ReLU()(pyframe.ones(1))
    h.remove()
    h.remove()  # harmless
    assert not module_mod._global_hooks_active
    nn.ReLU()(pyframe.ones(1))
    assert calls == [1]
    with nn.register_module_parameter_registration_hook(lambda m, n, p: calls.append(n)):
        nn.Linear(1, 1)
    nn.Linear(1, 1)
    assert calls == [1, "weight", "bias"]


# ---- plugins: the same pluggy hooks ---------------------------------------------------------------------


def test_plugin_hookimpl_lands_in_the_same_hook(tmp_path, monkeypatch):
    order = []

    class Plugin:
        def __init__(self, tag):
            self.tag = tag

        @pyframe.hookimpl
        def pyframe_module_parameter_registration(self, name):  # a subset of the arguments
            order.append((self.tag, name))

        @pyframe.hookimpl
        def pyframe_module_forward(self, output):
            order.append((self.tag, "forward"))
            return output + 1

    nn.register_module_parameter_registration_hook(lambda m, n, p: order.append(("fn", n)))
    pyframe.plugins.register(Plugin("b"), name="b-plugin")
    pyframe.plugins.register(Plugin("a"), name="a-plugin")
    nn.Module().register_parameter("weight", nn.Parameter(pyframe.ones(1)))
    # plugins first (by name by default), then functions in registration order
    assert order == [("a", "weight"), ("b", "weight"), ("fn", "weight")]
    order.clear()
    (tmp_path / "pyframe.toml").write_text('order = ["b-plugin"]\n')
    monkeypatch.setenv("PYFRAME_CONFIG", str(tmp_path / "pyframe.toml"))
    pyframe.plugins.reload_config()
    nn.Module().register_parameter("weight", nn.Parameter(pyframe.ones(1)))
    assert order == [("b", "weight"), ("a", "weight"), ("fn", "weight")]
    order.clear()
    assert nn.Identity()(pyframe.zeros(1)).tolist() == [2.0]
    assert order == [("b", "forward"), ("a", "forward")]


def test_plugin_errors_name_the_plugin():
    class Broken:
        @pyframe.hookimpl
        def pyframe_module_buffer_registration(self, module, name, buffer):
            raise OSError("broken plugin")

    pyframe.plugins.register(Broken(), name="broken")
    with pytest.raises(OSError) as info:
        nn.BatchNorm1d(2)
    assert info.value.__notes__ == [
        "raised in the buffer registration hook of plugin 'broken' (registered at run time) (hook function "
        f"test_plugin_errors_name_the_plugin.<locals>.Broken.pyframe_module_buffer_registration (module {__name__}))"
    ]


def test_plugin_forward_pre_may_return_args_or_args_and_kwargs():
    class Pre:
        @pyframe.hookimpl
        def pyframe_module_forward_pre(self, args, kwargs):
            return (args, {"k": 2}) if not kwargs else None

    pyframe.plugins.register(Pre())

    class M(nn.Module):
        def forward(self, x, k=0):
            return x * k

    assert M()(pyframe.ones(1)).tolist() == [2.0]


# ---- torch as the oracle -----------------------------------------------------------------------------------


def _record(lib, register, log):
    def shapes(ts):
        return tuple(None if t is None else tuple(t.shape) for t in ts)

    return [
        register["pre"](lambda m, args: log.append(("pre", type(m).__name__, shapes(args)))),
        register["fwd"](lambda m, args, out: log.append(("fwd", type(m).__name__, shapes(args), tuple(out.shape)))),
        register["bpre"](lambda m, go: log.append(("bpre", type(m).__name__, shapes(go)))),
        register["bwd"](lambda m, gi, go: log.append(("bwd", type(m).__name__, shapes(gi), shapes(go)))),
        register["param"](lambda m, n, p: log.append(("param", type(m).__name__, n, tuple(p.shape)))),
        register["buffer"](lambda m, n, b: log.append(("buffer", type(m).__name__, n))),
        register["module"](lambda m, n, s: log.append(("module", type(m).__name__, n, type(s).__name__))),
    ]


@pytest.mark.skipif(torch is None, reason="torch is the oracle")
def test_call_sequence_and_arguments_match_torch():
    logs = {}
    grads = {}
    for name, lib, regs in (
        ("pyframe", pyframe, module_mod),
        ("torch", torch, tmod),
    ):
        log = logs[name] = []
        register = {
            "pre": regs.register_module_forward_pre_hook, "fwd": regs.register_module_forward_hook,
            "bpre": regs.register_module_full_backward_pre_hook, "bwd": regs.register_module_full_backward_hook,
            "param": regs.register_module_parameter_registration_hook,
            "buffer": regs.register_module_buffer_registration_hook,
            "module": regs.register_module_module_registration_hook,
        }  # fmt: skip
        handles = _record(lib, register, log)
        try:
            model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
            with lib.no_grad():
                for i, p in enumerate(model.parameters()):
                    p.copy_((lib.arange(float(p.numel())).reshape(p.shape) - i) * 0.1)
            x = (lib.arange(15.0).reshape(5, 3) / 10).requires_grad_()
            model(x).sum().backward()
            grads[name] = np.array(x.grad.tolist())
        finally:
            for h in handles:
                h.remove()
    assert logs["pyframe"] == logs["torch"]
    np.testing.assert_allclose(grads["pyframe"], grads["torch"], rtol=1e-5, atol=1e-6)


# ---- the examples in docs/hooks run -----------------------------------------------------------------------

_DOCS = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "hooks"


@pytest.mark.parametrize("page", sorted(p.name for p in _DOCS.glob("*.md")))
def test_docs_examples_run(page):
    import re

    blocks = re.findall(r"```python\n(.*?)```", (_DOCS / page).read_text(), re.S)
    assert blocks, f"{page} has no example"
    for code in blocks:
        exec(compile(code, f"docs/hooks/{page}", "exec"), {"__name__": "docs_example"})
    assert not module_mod._global_hooks_active


def test_reentering_hook_error_carries_one_note(no_installed_plugins):
    def reenter(module, args, kwargs):
        module(*args)  # calls itself from inside its own forward pre-hook

    h = nn.register_module_forward_pre_hook(reenter, with_kwargs=True)
    try:
        with pytest.raises(RecursionError) as info:
            nn.ReLU()(pyframe.ones(1))
    finally:
        h.remove()
    notes = info.value.__notes__
    assert len(notes) == 1 and "reenter" in notes[0]
