"""Tests of the float32-enforcer plugin: the hook functions directly, then registered with pyframe."""

from __future__ import annotations

import logging

import pyframe_float32_enforcer as plugin
import pytest

import pyframe
import pyframe.plugins.testing
from pyframe.nn import Module, Parameter

NAME = "float32-enforcer"


_defaults = pyframe.plugins.testing.unconfigured_fixture(plugin)  # each test from the defaults


# the plugin on with its default settings and every other plugin off (also under autoload), for one test
registered = pyframe.plugins.testing.activated_fixture(plugin, NAME, **plugin.DEFAULTS)


# ---- the hook functions, called directly --------------------------------------------------------


def test_float64_parameter_becomes_float32_parameter():
    m = Module()
    p = Parameter(pyframe.ones(2, 3, dtype=pyframe.float64))
    out = plugin.pyframe_module_parameter_registration(m, "w", p)
    assert isinstance(out, Parameter)
    assert out.dtype == pyframe.float32
    assert out.requires_grad
    assert out.shape == p.shape
    assert out.tolist() == p.tolist()


def test_requires_grad_false_is_kept():
    p = Parameter(pyframe.ones(2, dtype=pyframe.float16), requires_grad=False)
    out = plugin.pyframe_module_parameter_registration(Module(), "w", p)
    assert isinstance(out, Parameter)
    assert out.dtype == pyframe.float32
    assert not out.requires_grad


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32", "bool"])
def test_float32_integer_bool_and_none_are_kept(dtype):
    m = Module()
    t = pyframe.ones(3, dtype=getattr(pyframe, "bool_" if dtype == "bool" else dtype, None) or dtype)
    assert plugin.pyframe_module_buffer_registration(m, "b", t) is None
    assert plugin.pyframe_module_buffer_registration(m, "b", None) is None
    assert plugin.pyframe_module_parameter_registration(m, "p", None) is None


def test_float64_buffer_becomes_float32_tensor():
    t = pyframe.tensor([1.5, 2.5], dtype=pyframe.float64)
    out = plugin.pyframe_module_buffer_registration(Module(), "running_mean", t)
    assert isinstance(out, pyframe.Tensor) and not isinstance(out, Parameter)
    assert out.dtype == pyframe.float32
    assert out.tolist() == [1.5, 2.5]


@pytest.mark.parametrize("name, expected", [("float64", "float64"), ("double", "float64"), ("float16", "float16")])
def test_dtype_setting(name, expected):
    plugin.pyframe_configure({"dtype": name, "strict": False, "log": False})
    out = plugin.pyframe_module_buffer_registration(Module(), "b", pyframe.ones(2, dtype=pyframe.float32))
    assert out.dtype == getattr(pyframe, expected)
    # a tensor already of the target dtype is kept as it is
    t = pyframe.ones(2, dtype=getattr(pyframe, expected))
    assert plugin.pyframe_module_buffer_registration(Module(), "b", t) is None


def test_non_floating_dtype_setting_is_rejected():
    with pytest.raises(ValueError, match="dtype"):
        plugin.pyframe_configure({"dtype": "int64"})
    assert plugin.target_dtype() == pyframe.float32


def test_strict_raises_naming_module_name_and_dtype():
    class Net(Module):
        pass

    plugin.pyframe_configure({"dtype": "float32", "strict": True, "log": False})
    p = Parameter(pyframe.ones(2, dtype=pyframe.float64))
    with pytest.raises(TypeError, match=r"Net\.weight.*float64"):
        plugin.pyframe_module_parameter_registration(Net(), "weight", p)
    # strict still accepts tensors of the right dtype and leaves integer buffers alone
    assert plugin.pyframe_module_parameter_registration(Net(), "w", Parameter(pyframe.ones(2))) is None
    assert plugin.pyframe_module_buffer_registration(Net(), "n", pyframe.ones(2, dtype=pyframe.int64)) is None


def test_log_records_each_conversion(caplog):
    plugin.pyframe_configure({"dtype": "float32", "strict": False, "log": True})
    with caplog.at_level(logging.INFO, logger="pyframe.plugins.float32_enforcer"):
        plugin.pyframe_module_buffer_registration(Module(), "b", pyframe.ones(2, dtype=pyframe.float64))
        plugin.pyframe_module_buffer_registration(Module(), "c", pyframe.ones(2))  # no conversion, no record
    records = [r for r in caplog.records if r.name == "pyframe.plugins.float32_enforcer"]
    assert len(records) == 1
    assert "Module.b" in records[0].getMessage() and "float64" in records[0].getMessage()


def test_no_log_by_default(caplog):
    with caplog.at_level(logging.DEBUG, logger="pyframe.plugins.float32_enforcer"):
        plugin.pyframe_module_buffer_registration(Module(), "b", pyframe.ones(2, dtype=pyframe.float64))
    assert not [r for r in caplog.records if r.name == "pyframe.plugins.float32_enforcer"]


# ---- registered with pyframe, on real modules -----------------------------------------------------


def test_linear_built_as_float64_is_float32(registered):
    m = pyframe.nn.Linear(3, 2, dtype=pyframe.float64)
    assert isinstance(m.weight, Parameter) and m.weight.requires_grad
    assert m.weight.dtype == pyframe.float32
    assert m.bias.dtype == pyframe.float32
    y = m(pyframe.ones(4, 3))
    assert y.dtype == pyframe.float32


def test_assignment_and_buffers(registered):
    m = Module()
    m.w = Parameter(pyframe.ones(2, dtype=pyframe.float64), requires_grad=False)
    m.register_buffer("stat", pyframe.zeros(2, dtype=pyframe.float16))
    m.register_buffer("count", pyframe.zeros(1, dtype=pyframe.int64))
    assert m.w.dtype == pyframe.float32 and not m.w.requires_grad
    assert m.stat.dtype == pyframe.float32
    assert m.count.dtype == pyframe.int64
    assert {k: v.dtype for k, v in m.state_dict().items()} == {
        "w": pyframe.float32,
        "stat": pyframe.float32,
        "count": pyframe.int64,
    }


def test_strict_leaves_module_unchanged(registered):
    pyframe.plugins.configure(NAME, strict=True)
    m = Module()
    with pytest.raises(TypeError, match="float64"):
        m.register_buffer("b", pyframe.ones(2, dtype=pyframe.float64))
    assert "b" not in m._buffers
    m.register_buffer("b", pyframe.ones(2))
    assert m.b.dtype == pyframe.float32


def test_dtype_setting_on_a_model(registered):
    pyframe.plugins.configure(NAME, dtype="float64")
    m = pyframe.nn.Linear(2, 2)
    assert m.weight.dtype == pyframe.float64


# ---- packaging and settings ---------------------------------------------------------------------


class TestPackaging(pyframe.plugins.testing.PackagingTests):
    plugin, name, defaults = plugin, NAME, plugin.DEFAULTS


def test_summary_counts_conversions():
    import pyframe_float32_enforcer as fe

    with pyframe.plugins.testing.activated(fe, "float32-enforcer"):
        pyframe.nn.Linear(2, 2, dtype=pyframe.float64)  # weight and bias converted
        pyframe.nn.Linear(2, 2)  # already float32
        pyframe.nn.BatchNorm1d(2, dtype=pyframe.float64)  # two parameters, two floating buffers
        assert pyframe.plugins.summary()["float32-enforcer"] == {"parameters converted": 4, "buffers converted": 2}
