"""Tests of the nan-detector plugin: the hook functions directly, then registered with pyframe."""

from __future__ import annotations

import math
import warnings

import pyframe_nan_detector as plugin
import pytest
from pyframe_nan_detector import NanDetectedWarning

import pyframe
import pyframe.plugins.testing
from pyframe.nn import Linear, Module, Parameter, Sequential

NAME = "nan-detector"
NAN, INF = math.nan, math.inf


_defaults = pyframe.plugins.testing.unconfigured_fixture(plugin)  # each test from the defaults


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


# the plugin on with its default settings and every other plugin off (also under autoload), for one test
registered = pyframe.plugins.testing.activated_fixture(plugin, NAME, **plugin.DEFAULTS)


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
    pyframe.plugins.configure(NAME, check_forward=False)
    first = Linear(2, 2)
    first.weight = Parameter(pyframe.zeros(2, 2))
    first.bias = Parameter(pyframe.zeros(2))
    net = Sequential(first, Sqrt())
    loss = net(pyframe.ones(1, 2, requires_grad=True)).sum()
    with pytest.raises(FloatingPointError, match=r"grad_output\[0\] of Linear '0' contains 2 Inf"):
        loss.backward()


def test_warn_mode_on_a_model(registered):
    pyframe.plugins.configure(NAME, action="warn")
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
    pyframe.plugins.configure(NAME, action="zero")
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


class TestPackaging(pyframe.plugins.testing.PackagingTests):
    plugin, name, defaults = plugin, NAME, plugin.DEFAULTS


def test_summary_counts_checks_and_findings():
    import pyframe_nan_detector as nd

    with pyframe.plugins.testing.activated(nd, "nan-detector", action="warn", check_forward=True):
        m = pyframe.nn.Linear(2, 2)
        m(pyframe.ones(1, 2))
        with pytest.warns(nd.NanDetectedWarning):
            m(pyframe.full((1, 2), float("nan")))
        assert pyframe.plugins.summary()["nan-detector"] == {"tensors checked": 2, "non-finite found": 1}
