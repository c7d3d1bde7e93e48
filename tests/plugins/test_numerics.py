"""Plugins declare whether they change numerics; a checkpoint load warns only when such a plugin differs."""

from __future__ import annotations

import warnings

import pytest

import pyframe
from pyframe import plugins
from pyframe.plugins import PluginWarning
from tests.plugins.conftest import reload, shipped_module, site  # noqa: F401  (fixture)

LOGGER = """
from pyframe.hookspecs import hookimpl
from pyframe.plugins import Setting, declare

@hookimpl
def pyframe_declare_settings():
    return declare(changes_numerics=False, every=Setting(int, 10))
"""

SCALER = """
from pyframe.hookspecs import hookimpl
from pyframe.plugins import Setting, declare

@hookimpl
def pyframe_declare_settings():
    return declare(changes_numerics=lambda s: s["factor"] != 1.0, factor=Setting(float, 1.0))
"""


def test_load_warns_only_for_plugins_that_change_numerics(site, tmp_path):  # noqa: F811
    site.add("logger", LOGGER)
    site.add("scaler", SCALER)
    reload()
    path = tmp_path / "ckpt.pf"
    pyframe.save({"x": pyframe.ones(2)}, path)
    record = {p["name"]: p for p in pyframe.serialization.read_metadata(path)["plugins"]["plugins"]}
    assert record["logger"]["changes_numerics"] is False
    assert record["scaler"]["changes_numerics"] is False  # factor 1.0: it changes nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plugins.configure("logger", every=5)  # a logger reconfigured, or gone: numerics are the same
        pyframe.load(path)
        plugins.disable("logger")
        pyframe.load(path)
    plugins.configure("scaler", factor=2.0)  # now it changes numerics: the difference matters
    with pytest.warns(PluginWarning, match=r"'scaler' settings were .*\(these plugins change numerics\)"):
        pyframe.load(path)


def test_a_plain_dict_counts_as_changing_numerics(site, tmp_path):  # noqa: F811
    site.add("alpha")  # RECORDING_PLUGIN: pyframe_declare_settings returns a dict
    reload()
    path = tmp_path / "ckpt.pf"
    pyframe.save({"x": pyframe.ones(2)}, path)
    plugins.configure("alpha", level=2)
    with pytest.warns(PluginWarning, match="'alpha' settings were"):
        pyframe.load(path)


def test_shipped_plugins_declare_it():
    assert shipped_module("float32-enforcer").pyframe_declare_settings().changes_numerics is True
    assert shipped_module("grad-clipper").pyframe_declare_settings().changes_numerics is True
    nan = shipped_module("nan-detector").pyframe_declare_settings()
    assert nan.numerics({"action": "raise"}) is False and nan.numerics({"action": "zero"}) is True


def test_declare_refuses_a_bad_flag():
    with pytest.raises(TypeError, match="changes_numerics must be a bool"):
        plugins.declare(changes_numerics="yes")
