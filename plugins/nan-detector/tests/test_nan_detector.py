"""Tests of the nan-detector plugin: the hook functions directly, then registered with pyframe."""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
import sys
import warnings

import pyframe_nan_detector as plugin
import pytest
from pyframe_nan_detector import NanDetectedWarning

import pyframe
from pyframe.nn import Linear, Module, Parameter, Sequential

NAME = "nan-detector"
NAN, INF = math.nan, math.inf


@pytest.fixture(autouse=True)
def _defaults():
    plugin.pyframe_unconfigure()
    yield
    plugin.pyframe_unconfigure()


class MulBy(Module):
    """Multiplies its input by a constant (NaN or Inf to poison the forward pass)."""

    def __init__(self, value: float):
        super().__init__()
        self.value = value

    def forward(self, x):
        return x * self.value


class Sqrt(Module):
    """sqrt: finite at 0, but its gradient there is Inf."""

    def forward(self, x):
        return pyframe.sqrt(x)


# ---- registering the plugin through the public API (skips until pyframe provides it) -----------


def _plugins_api():
    try:
        import pyframe.plugins as plugins
    except ImportError:
        return None
    return plugins if hasattr(plugins, "register") else None


def _plugin_manager():
    try:
        from pyframe._hooks import plugin_manager
    except ImportError:
        return None
    return plugin_manager


def _unregister(plugins, handle, pm) -> None:
    for attr in ("unregister", "remove", "close"):
        fn = getattr(handle, attr, None)
        if callable(fn):
            fn()
            return
    if plugins is not None and hasattr(plugins, "unregister"):
        plugins.unregister(NAME)
    elif pm is not None and pm.is_registered(plugin):
        pm.unregister(plugin)


def _configure(**settings) -> None:
    """Sets this plugin's settings the way a user would at run time (or directly, without a manager)."""
    plugins = _plugins_api()
    if plugins is not None and hasattr(plugins, "configure"):
        plugins.configure(NAME, **settings)
    else:
        plugin.pyframe_configure({**plugin.DEFAULTS, **settings})


SHIPPED = {
    "float32-enforcer": "pyframe_float32_enforcer",
    "grad-clipper": "pyframe_grad_clipper",
    "nan-detector": "pyframe_nan_detector",
}


def _other_active_plugins(pm) -> list[str]:
    """The other plugins shipped with pyframe that are active now (say, autoloaded by entry point)."""
    if pm is None:
        return []
    return [n for n, mod in SHIPPED.items() if n != NAME and mod in sys.modules and pm.is_registered(sys.modules[mod])]


def _known_to_manager(plugins) -> bool:
    """True when pyframe's plugin manager already has a record named NAME (found by entry point)."""
    if plugins is None or not hasattr(plugins, "get") or not hasattr(plugins, "enable"):
        return False
    try:
        plugins.get(NAME)
    except Exception:
        return False
    return True


@pytest.fixture
def registered():
    """The plugin registered with pyframe for one test (the other shipped plugins turned off meanwhile),
    then unregistered and reset to its defaults. If it is already active (autoloaded through its entry
    point), the test uses it as it is."""
    plugins, pm = _plugins_api(), _plugin_manager()
    if plugins is None and pm is None:
        pytest.skip("neither pyframe.plugins.register nor pyframe._hooks.plugin_manager exists yet")
    with contextlib.ExitStack() as stack:
        others = _other_active_plugins(pm)
        if others:
            if plugins is None or not hasattr(plugins, "disabled"):
                pytest.skip(f"other plugins are active ({others}); run with PYFRAME_DISABLE_PLUGIN_AUTOLOAD=1")
            stack.enter_context(plugins.disabled(*others))
        already = pm is not None and pm.is_registered(plugin)
        handle = None
        if not already and _known_to_manager(plugins):  # installed, but off (say autoload = false)
            plugins.enable(NAME)
            stack.callback(plugins.disable, NAME)
            already = True
        if not already:
            handle = plugins.register(plugin, name=NAME) if plugins is not None else pm.register(plugin, name=NAME)
        try:
            _configure(**plugin.DEFAULTS)
            yield plugin
        finally:
            try:
                _configure(**plugin.DEFAULTS)
            finally:
                if not already:
                    _unregister(plugins, handle, pm)
                plugin.pyframe_unconfigure()


# ---- the hook functions, called directly --------------------------------------------------------


def test_finite_output_and_gradients_are_kept():
    m = Linear(2, 2)
    assert plugin.pyframe_module_forward(m, (), {}, pyframe.ones(2)) is None
    assert plugin.pyframe_module_forward(m, (), {}, (pyframe.ones(2), 3, None)) is None
    assert plugin.pyframe_module_full_backward_pre(m, (pyframe.ones(2), None)) is None
    # integer outputs cannot hold NaN
    assert plugin.pyframe_module_forward(m, (), {}, pyframe.ones(2, dtype=pyframe.int64)) is None


def test_raise_names_class_and_output_index():
    with pytest.raises(FloatingPointError, match=r"output\[1\] of Linear contains 1 NaN and 1 Inf of 3"):
        plugin.pyframe_module_forward(Linear(1, 1), (), {}, (pyframe.ones(2), pyframe.tensor([NAN, INF, 1.0])))


def test_raise_on_incoming_gradient():
    with pytest.raises(FloatingPointError, match=r"grad_output\[0\] of Module contains 2 Inf"):
        plugin.pyframe_module_full_backward_pre(Module(), (pyframe.tensor([INF, -INF]), None))


def test_warn_keeps_values():
    plugin.pyframe_configure({"action": "warn", "check_forward": True})
    with pytest.warns(NanDetectedWarning, match="output of Linear contains 1 NaN"):
        assert plugin.pyframe_module_forward(Linear(1, 1), (), {}, pyframe.tensor([NAN, 1.0])) is None
    with pytest.warns(RuntimeWarning, match=r"grad_output\[1\]"):
        assert plugin.pyframe_module_full_backward_pre(Module(), (None, pyframe.tensor([NAN]))) is None


def test_zero_replaces_and_warns():
    plugin.pyframe_configure({"action": "zero", "check_forward": True})
    with pytest.warns(NanDetectedWarning, match="replaced with 0"):
        out = plugin.pyframe_module_forward(Module(), (), {}, pyframe.tensor([NAN, 2.0, -INF]))
    assert out.tolist() == [0.0, 2.0, 0.0]
    with pytest.warns(NanDetectedWarning):
        out = plugin.pyframe_module_forward(Module(), (), {}, (pyframe.ones(1), {"a": pyframe.tensor([INF])}))
    assert isinstance(out, tuple) and out[0].tolist() == [1.0] and out[1]["a"].tolist() == [0.0]
    with pytest.warns(NanDetectedWarning):
        grads = plugin.pyframe_module_full_backward_pre(Module(), (None, pyframe.tensor([NAN, 1.0])))
    assert grads[0] is None and grads[1].tolist() == [0.0, 1.0]


def test_check_forward_false_skips_outputs_only():
    plugin.pyframe_configure({"action": "raise", "check_forward": False})
    assert plugin.pyframe_module_forward(Module(), (), {}, pyframe.tensor([NAN])) is None
    with pytest.raises(FloatingPointError):
        plugin.pyframe_module_full_backward_pre(Module(), (pyframe.tensor([NAN]),))


def test_bad_action_is_rejected():
    with pytest.raises(ValueError, match="action"):
        plugin.pyframe_configure({"action": "ignore"})
    assert plugin.action == "raise"


def test_qualified_name_from_registration_hook():
    root, inner, leaf = Module(), Module(), Linear(1, 1)
    plugin.pyframe_module_module_registration(root, "encoder", inner)
    root._modules["encoder"] = inner
    plugin.pyframe_module_module_registration(inner, "fc", leaf)
    inner._modules["fc"] = leaf
    assert plugin.qualified_name(leaf) == "encoder.fc"
    assert plugin.describe(leaf) == "Linear 'encoder.fc'"
    assert plugin.qualified_name(root) is None
    inner._modules["fc"] = None  # no longer there: the record is not trusted
    assert plugin.describe(leaf) == "Linear"


# ---- registered with pyframe, on real modules -----------------------------------------------------


def test_forward_nan_raises_naming_the_module(registered):
    net = Sequential(Linear(2, 2), MulBy(NAN))
    with pytest.raises(FloatingPointError, match=r"output of MulBy '1' contains 4 NaN"):
        net(pyframe.ones(2, 2))


def test_nested_qualified_name(registered):
    class Net(Module):
        def __init__(self):
            super().__init__()
            self.encoder = Sequential(Linear(2, 2), MulBy(INF))

        def forward(self, x):
            return self.encoder(x)

    with pytest.raises(FloatingPointError, match=r"MulBy 'encoder\.1'.*Inf"):
        Net()(pyframe.ones(1, 2))


def test_backward_inf_gradient_is_reported(registered):
    _configure(check_forward=False)
    first = Linear(2, 2)
    first.weight = Parameter(pyframe.zeros(2, 2))
    first.bias = Parameter(pyframe.zeros(2))
    net = Sequential(first, Sqrt())
    loss = net(pyframe.ones(1, 2, requires_grad=True)).sum()
    with pytest.raises(FloatingPointError, match=r"grad_output\[0\] of Linear '0' contains 2 Inf"):
        loss.backward()


def test_warn_mode_on_a_model(registered):
    _configure(action="warn")
    net = Sequential(Linear(2, 2), MulBy(NAN))
    with pytest.warns(NanDetectedWarning) as record:
        y = net(pyframe.ones(1, 2))
    # reported where it starts (MulBy '1'), then again by the Sequential whose output it is
    assert [str(w.message).split(" contains")[0] for w in record] == [
        "nan-detector: output of MulBy '1'",
        "nan-detector: output of Sequential",
    ]
    assert all(math.isnan(v) for v in y.flatten().tolist())


def test_zero_mode_on_a_model_trains_on(registered):
    _configure(action="zero")
    first = Linear(2, 2)
    first.weight = Parameter(pyframe.zeros(2, 2))
    first.bias = Parameter(pyframe.zeros(2))
    net = Sequential(first, Sqrt())
    x = pyframe.ones(1, 2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net(x).sum().backward()
    assert any(issubclass(w.category, NanDetectedWarning) for w in caught)
    assert first.weight.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert x.grad.tolist() == [[0.0, 0.0]]


def test_finite_model_is_untouched(registered):
    net = Sequential(Linear(2, 3), Linear(3, 1))
    x = pyframe.ones(4, 2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net(x).sum().backward()
    assert x.grad is not None


# ---- packaging and settings ---------------------------------------------------------------------


def test_entry_point_names_the_module():
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group="pyframe") if ep.name == NAME]
    if not eps:
        pytest.skip(f"the distribution providing {NAME!r} is not installed")
    assert eps[0].value == plugin.__name__
    assert eps[0].load() is plugin


def test_declared_settings_match_defaults():
    plugins = pytest.importorskip("pyframe.plugins")
    if not hasattr(plugins, "Setting"):
        pytest.skip("pyframe.plugins.Setting does not exist yet")
    declared = plugin.pyframe_declare_settings()
    assert set(declared) == set(plugin.DEFAULTS)
    for key, setting in declared.items():
        assert isinstance(setting, plugins.Setting)
        assert setting.default == plugin.DEFAULTS[key]


def test_importing_the_plugin_before_pyframe_is_safe():
    """``import <plugin>`` first, then pyframe's entry-point autoload: the plugin is complete when loaded."""
    from importlib.metadata import entry_points

    if not [ep for ep in entry_points(group="pyframe") if ep.name == NAME]:
        pytest.skip(f"the distribution providing {NAME!r} is not installed")
    plugins = _plugins_api()
    if plugins is None or not hasattr(plugins, "get"):
        pytest.skip("pyframe.plugins.get does not exist yet")
    code = f"import {plugin.__name__}\nimport pyframe.plugins as P\nprint(sorted(P.get({NAME!r}).settings))"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
    env["PYFRAME_PLUGINS"] = NAME
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == repr(sorted(plugin.DEFAULTS))
