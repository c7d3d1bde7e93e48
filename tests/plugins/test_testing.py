"""pyframe.plugins.testing: ``activated()`` (a plugin on for one block, then the previous state exactly) and
``PackagingTests`` (what every plugin distribution has to get right), for plugin authors' tests."""

from __future__ import annotations

import sys

import pytest

from pyframe import plugins
from pyframe.plugins import PluginConfigError, testing
from tests.plugins.conftest import RECORDING_PLUGIN, Recorder, calls, reload


def _states() -> dict:
    return {i.name: (i.enabled, i.reason, dict(i.settings)) for i in plugins.list()}


def test_activated_registers_an_unknown_object_with_settings_then_removes_it(site):
    reload()
    obj = Recorder()
    with plugins.activated(obj, "rec", k=3) as got:  # pyframe.plugins.activated is the same function
        assert got is obj
        info = plugins.get("rec")
        assert info.enabled and info.source == "runtime" and dict(info.settings) == {"k": 3}
        assert obj.calls[-1] == {"k": 3}
    assert obj.calls[-1] == "unconfigure"
    assert "rec" not in [i.name for i in plugins.list()]


def test_activated_is_exclusive_and_restores_everything(site):
    a, b = site.add("alpha"), site.add("beta")
    reload()
    plugins.disable("beta")
    plugins.configure("alpha", level=5)
    other = Recorder()
    with plugins.register(other, name="other"):
        before = _states()
        with testing.activated("alpha", mode="b"):
            info = plugins.get("alpha")
            assert info.enabled and "activated()" in info.reason
            assert (info.settings["level"], info.settings["mode"]) == (5, "b")
            assert not plugins.get("beta").enabled and not plugins.get("other").enabled
            assert other.calls[-1] == "unconfigure"
            plugins.configure("alpha", level=9)  # changed inside the block: undone too
        assert _states() == before
        assert calls(a)[-1] == ("configure", {"level": 5, "mode": "a", "names": [], "scale": 1.0, "on": True})
        assert other.calls[-1] == {"k": 0}
    assert plugins.get("beta").reason == "disabled by pyframe.plugins.disable()"
    assert calls(b)[-1] == ("unconfigure",)


def test_activated_not_exclusive_leaves_the_others_on(site):
    site.add("alpha"), site.add("beta")
    reload()
    with testing.activated("alpha", exclusive=False):
        assert plugins.get("beta").enabled
    with testing.activated("alpha"):
        assert not plugins.get("beta").enabled
    assert plugins.get("beta").enabled


def test_activated_enables_an_installed_plugin_by_name_or_object(site, monkeypatch):
    mod = site.add("alpha")
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")
    reload()
    assert not plugins.get("alpha").enabled and mod not in sys.modules
    with testing.activated("pyframe-alpha", level=2) as got:  # a distribution name works too
        assert got is sys.modules[mod] and plugins.get("alpha").enabled
        assert calls(mod)[-1] == ("configure", {"level": 2, "mode": "a", "names": [], "scale": 1.0, "on": True})
    assert not plugins.get("alpha").enabled and calls(mod)[-1] == ("unconfigure",)
    # the module object itself, known through its entry point: enabled, not registered a second time
    with testing.activated(sys.modules[mod], "alpha"):
        assert [i.name for i in plugins.list() if i.enabled and i.source != "built-in"] == ["alpha"]
    assert not plugins.get("alpha").enabled
    with pytest.raises(ValueError, match="different object"), testing.activated(Recorder(), "alpha"):
        pass
    with pytest.raises(PluginConfigError, match="unknown plugin"), testing.activated("nope"):
        pass


def test_activated_nests(site):
    site.add("alpha"), site.add("beta")
    reload()
    before = _states()
    with testing.activated("alpha", level=2):
        with testing.activated("beta", exclusive=False, level=3):
            assert plugins.get("alpha").enabled and plugins.get("beta").enabled
            assert plugins.get("beta").settings["level"] == 3
        assert not plugins.get("beta").enabled
        assert plugins.get("alpha").settings["level"] == 2
        with testing.activated("beta"):
            assert not plugins.get("alpha").enabled
        assert plugins.get("alpha").enabled and plugins.get("alpha").settings["level"] == 2
    assert _states() == before


def test_activated_restores_after_an_error_and_rejects_bad_settings(site):
    site.add("alpha"), site.add("beta")
    reload()
    before = _states()
    with pytest.raises(KeyError), testing.activated("alpha", level=4):
        raise KeyError("inside")
    assert _states() == before
    with pytest.raises(PluginConfigError, match="unknown setting"), testing.activated("alpha", lvl=4):
        pass
    assert _states() == before


_FIXTURE_PLUGIN = Recorder()
active_recorder = testing.activated_fixture(_FIXTURE_PLUGIN, "recorder", k=5)


def test_activated_fixture_runs_the_test_inside_activated(active_recorder):
    assert active_recorder is _FIXTURE_PLUGIN and _FIXTURE_PLUGIN.calls[-1] == {"k": 5}
    info = plugins.get("recorder")
    assert info.enabled and info.source == "runtime" and dict(info.settings) == {"k": 5}


# ---- PackagingTests ---------------------------------------------------------------------------------------

SAFE_PLUGIN = """
import pluggy

hookimpl = pluggy.HookimplMarker("pyframe")


@hookimpl
def pyframe_declare_settings():
    from pyframe.plugins import Setting

    return {"level": Setting(int, 1), "mode": Setting(str, "a")}
"""


def _packaging_tests(plugin_module, plugin_name, declared_defaults=None):
    class Check(testing.PackagingTests):
        plugin, name, defaults = plugin_module, plugin_name, declared_defaults

    return Check()


def test_packaging_tests_pass_for_a_well_made_plugin(site):
    module = site.add("alpha", SAFE_PLUGIN)
    reload()
    check = _packaging_tests(sys.modules[module], "alpha", {"level": 1, "mode": "a"})
    assert testing.entry_point("alpha").value == module and testing.entry_point("nope") is None
    check.test_entry_point_names_the_module()
    check.test_declared_settings_match_defaults()
    check.test_importing_the_plugin_before_pyframe_is_safe()


def test_packaging_tests_catch_what_is_wrong(site):
    module = site.add("alpha", RECORDING_PLUGIN.format(extra=""))  # imports pyframe at its top
    reload()
    check = _packaging_tests(sys.modules[module], "alpha", {"level": 2})
    with pytest.raises(AssertionError):
        check.test_declared_settings_match_defaults()
    with pytest.raises(AssertionError):  # pyframe's autoload finds it half-imported: no settings
        check.test_importing_the_plugin_before_pyframe_is_safe()
    with pytest.raises(pytest.skip.Exception, match="not installed"):
        _packaging_tests(sys.modules[module], "not-installed").test_entry_point_names_the_module()
