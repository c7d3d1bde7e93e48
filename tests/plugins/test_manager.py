"""The plugin manager: discovery through entry points, enabling and disabling, settings, ordering, errors.
Installed plugins are simulated by the ``site`` fixture (``tests/plugins/conftest.py``)."""

from __future__ import annotations

import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import pyframe
from pyframe import plugins
from pyframe.plugins import PluginConfigError, PluginError, PluginWarning
from tests.plugins.conftest import RECORDING_PLUGIN, Recorder, calls, reload

# ---- discovery and records -------------------------------------------------------------------------


def test_discovered_plugin_is_loaded_configured_and_listed(site):
    mod = site.add("alpha", version="1.2.3")
    reload()
    info = plugins.get("alpha")
    assert (info.name, info.version, info.source, info.distribution) == (
        "alpha",
        "1.2.3",
        "entry point",
        "pyframe-alpha",
    )
    assert info.enabled and "autoload" in info.reason
    assert {"pyframe_configure", "pyframe_declare_settings", "pyframe_unconfigure"} <= set(info.hooks)
    assert calls(mod) == [("configure", {"level": 1, "mode": "a", "names": [], "scale": 1.0, "on": True})]
    assert dict(info.settings)["level"] == 1
    assert [i.name for i in plugins.list() if i.source != "built-in"] == ["alpha"]


def test_names_are_normalized(site):
    site.add("nan-detector")
    reload()
    assert plugins.get("nan_detector").name == "nan-detector"
    assert plugins.get("pyframe-nan-detector").name == "nan-detector"
    with pytest.raises(PluginConfigError, match="unknown plugin 'nan-detectr'.*did you mean 'nan-detector'"):
        plugins.get("nan-detectr")


# ---- every way of turning a plugin off, and the plugin is never imported -------------------------------


def _write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


@pytest.mark.parametrize(
    "how",
    ["env-disable", "env-autoload", "env-only", "pyframe.toml", "pyproject", "toml-autoload", "toml-plugins"],
)
def test_each_way_of_disabling_blocks_before_import(site, monkeypatch, how):
    bad = site.add("beta")
    site.add("alpha")
    expect = {
        "env-disable": "PYFRAME_DISABLE_PLUGINS=beta",
        "env-autoload": "PYFRAME_DISABLE_PLUGIN_AUTOLOAD=1",
        "env-only": "PYFRAME_PLUGINS=alpha",
        "pyframe.toml": "pyframe.toml (disable_plugins)",
        "pyproject": "pyproject.toml (tool.pyframe.disable_plugins)",
        "toml-autoload": "pyframe.toml (autoload)",
        "toml-plugins": "pyframe.toml (plugins)",
    }[how]
    if how == "env-disable":
        monkeypatch.setenv("PYFRAME_DISABLE_PLUGINS", "beta")
    elif how == "env-autoload":
        monkeypatch.setenv("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")
    elif how == "env-only":
        monkeypatch.setenv("PYFRAME_PLUGINS", "alpha")
    elif how == "pyframe.toml":
        _write(site.proj / "pyframe.toml", 'disable_plugins = ["beta"]\n')
    elif how == "pyproject":
        _write(site.proj / "pyproject.toml", '[tool.pyframe]\ndisable_plugins = ["beta"]\n')
    elif how == "toml-autoload":
        _write(site.proj / "pyframe.toml", "autoload = false\n")
    else:
        _write(site.proj / "pyframe.toml", 'plugins = ["alpha"]\n')
    reload()
    info = plugins.get("beta")
    assert not info.enabled
    assert expect in info.reason
    assert bad not in sys.modules  # blocked before import: its code never ran
    assert info.hooks == ()
    assert plugins.get("alpha").enabled is (how not in ("env-autoload", "toml-autoload"))


def test_disable_and_enable_at_run_time(site):
    mod = site.add("alpha")
    reload()
    plugins.disable("alpha")
    info = plugins.get("alpha")
    assert not info.enabled and info.reason == "disabled by pyframe.plugins.disable()"
    assert calls(mod)[-1] == ("unconfigure",)
    plugins.enable("alpha")
    assert plugins.get("alpha").enabled
    assert calls(mod)[-1][0] == "configure"


def test_enable_imports_a_plugin_disabled_by_config(site, monkeypatch):
    mod = site.add("alpha")
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGINS", "alpha")
    reload()
    assert mod not in sys.modules
    plugins.enable("alpha")  # a run-time call beats the environment
    assert plugins.get("alpha").enabled and calls(mod)[-1][0] == "configure"


def test_disabled_context_manager_restores(site):
    mod = site.add("alpha")
    reload()
    with plugins.disabled("alpha"):
        assert not plugins.get("alpha").enabled
        assert "pyframe.plugins.disabled()" in plugins.get("alpha").reason
        assert calls(mod)[-1] == ("unconfigure",)
    assert plugins.get("alpha").enabled
    assert calls(mod)[-1][0] == "configure"


def test_unknown_name_in_runtime_calls(site):
    reload()
    with pytest.raises(PluginConfigError, match="unknown plugin 'nope'"):
        plugins.disable("nope")


# ---- broken plugins -------------------------------------------------------------------------------


def test_plugin_raising_at_import_warns_and_the_rest_load(site):
    site.add("broken", "raise ZeroDivisionError('boom at import')\n", dist="pyframe-broken", version="0.3.0")
    good = site.add("alpha")
    with pytest.warns(PluginWarning) as rec:
        reload()
    msg = str(rec[0].message)
    assert "plugin 'broken'" in msg and "pyframe-broken 0.3.0" in msg and "boom at import" in msg
    info = plugins.get("broken")
    assert not info.enabled and "failed to import" in info.reason and "ZeroDivisionError" in info.error
    assert plugins.get("alpha").enabled and calls(good)


def test_strict_plugins_makes_it_an_error(site):
    site.add("broken", "raise ZeroDivisionError('boom at import')\n", version="0.3.0")
    _write(site.proj / "pyframe.toml", "strict_plugins = true\n")
    with pytest.raises(PluginError, match=r"plugin 'broken' \(distribution pyframe-broken 0.3.0\)") as exc:
        reload()
    assert isinstance(exc.value.__cause__, ZeroDivisionError)


def test_plugin_raising_in_configure_warns(site):
    site.add(
        "grumpy",
        """
        from pyframe.hookspecs import hookimpl

        @hookimpl
        def pyframe_configure(settings):
            raise RuntimeError("cannot set up")
        """,
    )
    with pytest.warns(PluginWarning, match=r"plugin 'grumpy' \(distribution pyframe-grumpy 0.1.0\).*cannot set up"):
        reload()
    assert not plugins.get("grumpy").enabled


def test_plugin_with_misspelled_hook_is_reported(site):
    site.add(
        "typo",
        """
        from pyframe.hookspecs import hookimpl

        @hookimpl
        def pyframe_module_forwrd(module, output):
            return output
        """,
    )
    with pytest.warns(
        PluginWarning, match="unknown hook.*pyframe_module_forwrd.*did you mean 'pyframe_module_forward'"
    ):
        reload()
    assert not plugins.get("typo").enabled


# ---- settings --------------------------------------------------------------------------------------


def test_settings_precedence_files_then_runtime(site):
    mod = site.add("alpha")
    _write(site.proj / "pyproject.toml", "[tool.pyframe.alpha]\nlevel = 2\nmode = 'b'\n")
    _write(site.proj / "pyframe.toml", "[alpha]\nlevel = 3\n")
    reload()
    assert calls(mod)[-1][1]["level"] == 3 and calls(mod)[-1][1]["mode"] == "b"
    values = plugins.effective_config()["values"]
    assert values["alpha.level"]["source"].endswith("pyframe.toml (alpha.level)")
    assert values["alpha.mode"]["source"].endswith("pyproject.toml (tool.pyframe.alpha.mode)")
    assert (values["alpha.scale"]["value"], values["alpha.scale"]["source"]) == (1.0, "default")
    plugins.configure("alpha", level=7)
    assert calls(mod)[-1][1]["level"] == 7
    assert plugins.effective_config()["values"]["alpha.level"]["source"] == "pyframe.plugins.configure()"
    plugins.reload_config()  # run-time calls survive a reload
    assert calls(mod)[-1][1]["level"] == 7


def test_bad_plugin_setting_names_file_key_and_allowed(site):
    site.add("alpha")
    path = _write(site.proj / "pyframe.toml", "[alpha]\nmode = 'c'\n")
    with pytest.raises(PluginConfigError) as exc:
        reload()
    msg = str(exc.value)
    assert str(path) in msg and "'alpha.mode'" in msg and "one of 'a', 'b'" in msg and "'c'" in msg


def test_unknown_plugin_setting_is_an_error(site):
    site.add("alpha")
    _write(site.proj / "pyproject.toml", "[tool.pyframe.alpha]\nlevl = 3\n")
    with pytest.raises(PluginConfigError, match=r"tool.pyframe.alpha.levl.*did you mean 'level'.*allowed keys: level"):
        reload()


def test_runtime_configure_is_validated(site):
    site.add("alpha")
    reload()
    with pytest.raises(PluginConfigError, match="expected an integer, got 'x'"):
        plugins.configure("alpha", level="x")
    with pytest.raises(PluginConfigError, match="unknown setting"):
        plugins.configure("alpha", nope=1)


def test_unknown_plugin_in_plugins_is_an_error(site):
    site.add("alpha")
    _write(site.proj / "pyframe.toml", 'plugins = ["alpah"]\n')
    with pytest.raises(PluginConfigError, match="pyframe.toml.*unknown plugin 'alpah'.*did you mean 'alpha'"):
        reload()


def test_unknown_plugin_in_disable_plugins_is_an_error_like_in_plugins(site, monkeypatch):
    site.add("alpha")
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGINS", "alpah")
    with pytest.raises(PluginConfigError, match="PYFRAME_DISABLE_PLUGINS=alpah.*did you mean 'alpha'"):
        reload()
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGINS", "alpha")
    (site.proj / "pyframe.toml").write_text('disable_plugins = ["alpah"]\n')
    with pytest.raises(PluginConfigError, match=r"pyframe.toml \(disable_plugins\): unknown plugin 'alpah'"):
        reload()


# ---- ordering ---------------------------------------------------------------------------------------


def test_order_is_config_first_then_by_name_and_stable(site):
    for digit, name in enumerate(("mike", "zulu", "alpha", "kilo"), 1):  # each appends its digit to the output
        site.add(name, RECORDING_PLUGIN.format(extra=f"@hookimpl\ndef pyframe_module_forward(output):\n"
                                                     f"    return output * 10 + {digit}\n"))  # fmt: skip
    _write(site.proj / "pyframe.toml", 'order = ["zulu", "kilo"]\n')
    reload()
    first = [i.name for i in plugins.list() if i.source != "built-in"]
    reload()
    assert first == [i.name for i in plugins.list() if i.source != "built-in"] == ["zulu", "kilo", "alpha", "mike"]
    assert pyframe.nn.Identity()(pyframe.zeros(1)).tolist() == [2431.0]  # the hooks ran in that order


# ---- run-time plugins and built-ins -------------------------------------------------------------------


def test_register_at_run_time_returns_a_handle(site):
    reload()
    obj = Recorder()
    handle = plugins.register(obj, name="rec")
    info = plugins.get("rec")
    assert info.source == "runtime" and info.enabled and obj.calls == [{"k": 0}]
    with pytest.raises(ValueError, match="already known"):
        plugins.register(Recorder(), name="rec")
    plugins.configure("rec", k=4)
    assert obj.calls[-1] == {"k": 4}
    handle.remove()
    assert obj.calls[-1] == "unconfigure"
    assert "rec" not in [i.name for i in plugins.list()]


def test_describe_plugin_names_distribution_and_version(site):
    site.add("alpha", RECORDING_PLUGIN.format(extra="@hookimpl\ndef pyframe_module_forward(output):\n    1 / 0\n"),
             version="2.0.1")  # fmt: skip
    reload()
    obj = sys.modules["pftest_alpha"]
    assert plugins._manager.describe_plugin(obj) == "plugin 'alpha' (distribution pyframe-alpha 2.0.1)"
    with pytest.raises(ZeroDivisionError) as info:
        pyframe.nn.Identity()(pyframe.zeros(1))
    assert "plugin 'alpha' (distribution pyframe-alpha 2.0.1) (hook function" in info.value.__notes__[0]


def test_builtin_plugins_survive_autoload_false(site, monkeypatch):
    obj = Recorder()
    monkeypatch.setattr(plugins._manager, "builtins", [("builtin-thing", obj)])
    monkeypatch.setitem(plugins._manager._records, "__dummy__", None)  # removed again below
    del plugins._manager._records["__dummy__"]
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")
    reload()
    info = plugins.get("builtin-thing")
    assert info.source == "built-in" and info.enabled and info.reason == "built-in"
    assert info.distribution == "pyframe-core" and info.version == pyframe.__version__
    monkeypatch.setenv("PYFRAME_PLUGINS", "")
    reload()
    assert plugins.get("builtin-thing").enabled
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGINS", "builtin-thing")
    reload()
    info = plugins.get("builtin-thing")
    assert not info.enabled and "PYFRAME_DISABLE_PLUGINS" in info.reason
    assert obj.calls[-1] == "unconfigure"
    monkeypatch.undo()
    plugins._manager._records.pop("builtin-thing", None)


# ---- save/load records the active plugin set ------------------------------------------------------------


def test_checkpoint_records_plugins_and_load_warns_on_difference(site, tmp_path):
    site.add("alpha", version="1.0.0")
    reload()
    plugins.configure("alpha", level=3)
    path = tmp_path / "ckpt.pf"
    pyframe.save({"x": pyframe.tensor([1.0, 2.0])}, path)
    meta = pyframe.serialization.read_metadata(path)
    assert meta["plugins"]["plugins"] == [
        {
            "name": "alpha",
            "version": "1.0.0",
            "source": "entry point",
            "settings": {"level": 3, "mode": "a", "names": [], "scale": 1.0, "on": True},
            "changes_numerics": True,  # a plain dict of settings: it may change numerics
        }
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pyframe.load(path)  # same plugins: silent
    plugins.configure("alpha", level=4)
    with pytest.warns(PluginWarning, match="'alpha' settings were"):
        pyframe.load(path)
    plugins.disable("alpha")
    with pytest.warns(PluginWarning, match="'alpha' 1.0.0 was active when it was saved but is not now"):
        pyframe.load(path)


# ---- plugins change module behaviour through the shared hooks ------------------------------------------

FORWARD_PLUGIN = """
from pyframe.hookspecs import hookimpl
from pyframe.plugins import Setting

STATE = {"add": 0.0}

@hookimpl
def pyframe_declare_settings():
    return {"add": Setting(float, 100.0)}

@hookimpl
def pyframe_configure(settings):
    STATE["add"] = settings["add"]

@hookimpl
def pyframe_module_forward(module, output):
    if STATE["add"] < 0:
        raise ValueError("negative add")
    return output * 0 + STATE["add"]
"""


def test_entry_point_plugin_changes_module_output(site):
    site.add("adder", FORWARD_PLUGIN, version="0.9.0")
    reload()
    m = pyframe.nn.Linear(2, 3)
    x = pyframe.ones(1, 2)
    assert m(x).tolist() == [[100.0] * 3]
    plugins.configure("adder", add=5)
    assert m(x).tolist() == [[5.0] * 3]
    with plugins.disabled("adder"):
        assert m(x).tolist() != [[5.0] * 3]
    assert m(x).tolist() == [[5.0] * 3]
    plugins.configure("adder", add=-1.0)
    with pytest.raises(ValueError, match="negative add") as exc:
        m(x)
    assert any("'adder' (distribution pyframe-adder 0.9.0)" in n for n in getattr(exc.value, "__notes__", []))


def test_no_plugin_record_without_plugins_and_warning_when_one_appears(site, tmp_path):
    reload()
    path = tmp_path / "plain.pf"
    pyframe.save(pyframe.ones(2), path, metadata={"k": 1})
    assert pyframe.serialization.read_metadata(path) == {"k": 1}  # nothing added when no plugin is active
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pyframe.load(path)
    site.add("alpha")
    reload()
    with pytest.warns(PluginWarning, match="'alpha' is active now but was not when it was saved"):
        pyframe.load(path)


def test_plugin_imported_before_pyframe_is_reported_not_registered_empty(site):
    mod = site.add(
        "early",
        """
        import pyframe.plugins
        pyframe.plugins.reload_config()  # as if pyframe were first imported from here
        from pyframe.hookspecs import hookimpl

        @hookimpl
        def pyframe_configure(settings):
            pass
        """,
    )
    with pytest.warns(PluginWarning, match="'early'.*still being imported"):
        __import__(mod)
    assert not plugins.get("early").enabled


def test_register_refuses_an_object_registered_twice(site):
    reload()
    obj = Recorder()
    with plugins.register(obj, name="one"), pytest.raises(ValueError, match="already registered as plugin 'one'"):
        plugins.register(obj, name="two")
    assert "one" not in [i.name for i in plugins.list()]


def test_register_refuses_non_plugins_and_misspelt_hooks(no_installed_plugins):
    with pytest.raises(
        TypeError, match="a plugin is a module, class or object with @pyframe.hookimpl functions, got int"
    ):
        pyframe.plugins.register(42)

    class Misspelt:
        @pyframe.hookimpl
        def pyframe_module_foward(self, module, args, kwargs, output):
            return None

    with pytest.raises(ValueError, match="'pyframe_module_foward' \\(did you mean 'pyframe_module_forward'\\?\\)"):
        pyframe.plugins.register(Misspelt())

    class Unmarked:  # a pyframe_* function without the marker would never be called either
        def pyframe_module_forward_pr(self, module, args):
            return None

    with pytest.raises(ValueError, match="did you mean 'pyframe_module_forward_pre'"):
        pyframe.plugins.register(Unmarked())
    with pytest.raises(TypeError, match="implements no pyframe hook"):
        pyframe.plugins.register(object())
    assert all(i.name not in ("int", "Misspelt", "Unmarked", "object") for i in pyframe.plugins.list())
