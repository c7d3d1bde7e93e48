"""Tests of the grad-clipper plugin: the hook functions directly, then registered with pyframe."""

from __future__ import annotations

import math

import pyframe_grad_clipper as plugin
import pytest

import pyframe
import pyframe.plugins.testing
from pyframe.nn import Linear, Module, Parameter, Sequential

NAME = "grad-clipper"


_defaults = pyframe.plugins.testing.unconfigured_fixture(plugin)  # each test from the defaults


def _norm(t) -> float:
    return math.sqrt(sum(v * v for v in t.flatten().tolist()))


# the plugin on with its default settings and every other plugin off (also under autoload), for one test
registered = pyframe.plugins.testing.activated_fixture(plugin, NAME, **plugin.DEFAULTS)


# ---- the hook functions, called directly --------------------------------------------------------


def test_value_mode_clamps_every_element_and_keeps_none():
    g = pyframe.tensor([[-5.0, 0.5], [2.0, -0.25]])
    out = plugin.pyframe_module_full_backward(Linear(2, 2), (g, None), (pyframe.ones(2),))
    assert isinstance(out, tuple) and len(out) == 2
    assert out[0].tolist() == [[-1.0, 0.5], [1.0, -0.25]]
    assert out[1] is None


def test_max_value_setting():
    plugin.pyframe_configure({"max_value": 0.1, "mode": "value", "max_norm": 1.0, "modules": []})
    (out,) = plugin.pyframe_module_full_backward(Module(), (pyframe.tensor([0.5, -0.5, 0.05]),), ())
    assert out.tolist() == pytest.approx([0.1, -0.1, 0.05])


def test_norm_mode_scales_each_tensor_down_to_max_norm():
    plugin.pyframe_configure({"max_value": 1.0, "mode": "norm", "max_norm": 2.0, "modules": []})
    big = pyframe.tensor([3.0, 4.0])  # norm 5
    small = pyframe.tensor([0.3, 0.4])  # norm 0.5: kept
    a, b, c = plugin.pyframe_module_full_backward(Module(), (big, small, None), ())
    assert a.tolist() == pytest.approx([1.2, 1.6])
    assert _norm(a) == pytest.approx(2.0)
    assert b.tolist() == pytest.approx([0.3, 0.4])
    assert c is None


def test_all_none_grad_input_is_kept():
    assert plugin.pyframe_module_full_backward(Module(), (None, None), ()) is None


def test_modules_setting_restricts_by_class_name():
    class Block(Linear):
        pass

    plugin.pyframe_configure({"max_value": 1.0, "mode": "value", "max_norm": 1.0, "modules": ["Linear"]})
    g = (pyframe.tensor([9.0]),)
    assert plugin.pyframe_module_full_backward(Sequential(), g, ()) is None
    assert plugin.pyframe_module_full_backward(Linear(1, 1), g, ())[0].tolist() == [1.0]
    assert plugin.pyframe_module_full_backward(Block(1, 1), g, ())[0].tolist() == [1.0]  # a subclass counts


@pytest.mark.parametrize(
    "settings",
    [{"mode": "clip"}, {"max_value": 0.0}, {"max_norm": -1.0}, {"modules": "Linear"}],
)
def test_bad_settings_are_rejected_and_leave_state_alone(settings):
    with pytest.raises(ValueError, match="grad-clipper"):
        plugin.pyframe_configure({**plugin.DEFAULTS, **settings})
    assert (plugin.max_value, plugin.mode, plugin.max_norm, plugin.modules) == (1.0, "value", 1.0, frozenset())


# ---- registered with pyframe, on real modules -----------------------------------------------------


def _big_linear() -> Linear:
    m = Linear(3, 2)
    m.weight = Parameter(pyframe.full((2, 3), 10.0))
    m.bias = Parameter(pyframe.zeros(2))
    return m


def test_input_gradient_is_clamped(registered):
    m = _big_linear()
    x = pyframe.ones(4, 3, requires_grad=True)
    m(x).sum().backward()
    assert x.grad.tolist() == [[1.0] * 3] * 4  # 20 per element without the plugin
    assert m.weight.grad.tolist() == [[4.0] * 3] * 2  # parameter gradients are not grad_input


def test_norm_mode_on_a_model(registered):
    pyframe.plugins.configure(NAME, mode="norm", max_norm=0.5)
    m = _big_linear()
    x = pyframe.ones(4, 3, requires_grad=True)
    m(x).sum().backward()
    assert _norm(x.grad) == pytest.approx(0.5, rel=1e-5)
    assert x.grad.tolist()[0] == pytest.approx([0.5 / math.sqrt(12)] * 3, rel=1e-5)


def test_nested_modules_clip_at_every_level(registered):
    pyframe.plugins.configure(NAME, max_value=5.0)
    net = Sequential(_big_linear(), _big_linear().__class__(2, 1))
    net[1].weight = Parameter(pyframe.full((1, 2), 10.0))
    x = pyframe.ones(1, 3, requires_grad=True)
    net(x).sum().backward()
    # the second Linear's input grad (10) is clamped to 5, then the first's (2 * 5 * 10 = 100) to 5
    assert x.grad.tolist() == [[5.0, 5.0, 5.0]]


def test_modules_setting_on_a_model(registered):
    pyframe.plugins.configure(NAME, modules=["Conv2d"])
    m = _big_linear()
    x = pyframe.ones(1, 3, requires_grad=True)
    m(x).sum().backward()
    assert x.grad.tolist() == [[20.0] * 3]


# ---- packaging and settings ---------------------------------------------------------------------


class TestPackaging(pyframe.plugins.testing.PackagingTests):
    plugin, name, defaults = plugin, NAME, plugin.DEFAULTS


@pytest.mark.parametrize(("key", "value"), [("max_value", -1.0), ("max_norm", 0.0), ("max_value", math.inf)])
def test_out_of_range_setting_is_a_config_error(key, value):
    """A bad bound must not silently switch the plugin off: it is rejected where it is set, naming what is allowed."""
    declared = plugin.pyframe_declare_settings()
    with pytest.raises(pyframe.plugins.PluginConfigError, match=rf"pyframe.toml: key '{NAME}.{key}'.*") as exc:
        declared[key].validate(value, where=f"pyframe.toml: key '{NAME}.{key}'")
    assert "> 0.0" in str(exc.value) or "finite" in str(exc.value)


def test_out_of_range_setting_at_run_time(registered):
    with pytest.raises(pyframe.plugins.PluginConfigError, match=r"max_value=.*expected a number > 0.0, got -1.0"):
        pyframe.plugins.configure(NAME, max_value=-1.0)
    assert plugin.max_value == 1.0


def test_summary_counts_seen_and_clipped(registered):
    m = _big_linear()
    m(pyframe.ones(4, 3, requires_grad=True)).sum().backward()  # input gradient 20 per element: clipped
    small = Linear(3, 2)
    with pyframe.no_grad():
        small.weight.fill_(0.01)
    small(pyframe.ones(4, 3, requires_grad=True)).sum().backward()  # 0.02 per element: seen, not clipped
    assert pyframe.plugins.summary()[NAME] == {"gradients seen": 2, "gradients clipped": 1}
    pyframe.plugins.configure(NAME, max_value=2.0)  # counters restart with the configuration
    assert pyframe.plugins.summary()[NAME] == {"gradients seen": 0, "gradients clipped": 0}


def test_empty_gradients_pass_through_in_both_modes():
    for mode in ("value", "norm"):
        plugin.pyframe_configure({**plugin.DEFAULTS, "mode": mode})
        g = pyframe.zeros(0, 3)
        assert plugin.clip(g) is g
    assert plugin.stats == {"gradients seen": 1, "gradients clipped": 0}


def test_backward_of_an_empty_batch(registered):
    m = Sequential(Linear(3, 2))
    x = pyframe.zeros(0, 3).requires_grad_()
    m(x).sum().backward()
    assert tuple(x.grad.shape) == (0, 3)
