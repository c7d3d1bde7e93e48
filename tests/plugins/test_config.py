"""pyframe's configuration: where it is read from, precedence, validation messages, ``Setting``."""

from __future__ import annotations

import textwrap

import pytest

from pyframe import plugins
from pyframe.plugins import PluginConfigError, Setting
from pyframe.plugins import config as cfg


def _write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def _values():
    """Each key's value and winning source (``pyframe config`` also shows help and overridden layers)."""
    return {k: {"value": v["value"], "source": v["source"]} for k, v in plugins.effective_config()["values"].items()}


# ---- Setting -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "setting, good, bad, words",
    [
        (Setting(bool, False), [True, False], [1, "true", None], "true or false"),
        (Setting(int, 1), [0, -3, 10**9], [1.5, True, "1"], "an integer"),
        (Setting(float, 1.0), [1, 2.5], [True, "1.0", None], "a number"),
        (Setting(str, "a"), ["", "x"], [1, None, ["a"]], "a string"),
        (Setting(list[str], []), [[], ["a", "b"]], ["a", [1], None], "a list of strings"),
        (Setting(str, "value", choices=["value", "norm"]), ["norm"], ["nrom", 1], "one of 'value', 'norm'"),
        (Setting(list[str], [], choices=["x", "y"]), [["x", "y"]], [["z"]], "a list of 'x', 'y'"),
        (Setting(float, 1.0, gt=0), [1e-9, 3], [0, -1.0, float("nan")], "a number > 0"),
        (Setting(int, 1, ge=1, le=8), [1, 8], [0, 9], "an integer >= 1 and <= 8"),
        (Setting(float, 0.5, ge=0, lt=1), [0, 0.99], [1.0, -0.1], "a number >= 0 and < 1"),
    ],
)
def test_setting_validation_and_bounds(setting, good, bad, words):
    for v in good:
        setting.validate(v, where="here")
    for v in bad:
        with pytest.raises(PluginConfigError, match=f"^here: expected {words}, got"):
            setting.validate(v, where="here")


def test_setting_converts_and_checks_its_default():
    assert Setting(float, 1).default == 1.0 and isinstance(Setting(float, 1).default, float)
    assert Setting(list, ("a",)).type == list[str] and Setting(list, ("a",)).default == ["a"]
    with pytest.raises(PluginConfigError, match="Setting default: expected one of 'a'"):
        Setting(str, "b", choices=["a"])
    with pytest.raises(TypeError, match="bool, int, float, str, list"):
        Setting(dict, {})
    assert "did you mean 'norm'" in str(
        pytest.raises(PluginConfigError, Setting(str, "norm", choices=["norm"]).validate, "nrm", where="w").value
    )


def test_setting_validator():
    def even(v):
        if v % 2:
            raise ValueError("expected an even number")

    s = Setting(int, 2, validator=even)
    assert s.validate(4, where="here") == 4
    with pytest.raises(PluginConfigError, match=r"^here: expected an even number \(got 3\)$"):
        s.validate(3, where="here")
    with pytest.raises(PluginConfigError, match="Setting default: expected an even number"):
        Setting(int, 1, validator=even)


def test_setting_constraint_arguments_are_checked():
    with pytest.raises(TypeError, match="bounds an int or float setting"):
        Setting(str, "a", ge=1)
    with pytest.raises(TypeError, match="ge must be a number"):
        Setting(int, 1, ge="0")
    with pytest.raises(TypeError, match="validator must be callable"):
        Setting(int, 1, validator=3)
    assert "gt=0" in repr(Setting(float, 1.0, gt=0))


def test_out_of_range_plugin_setting_names_file_key_and_range(site):
    site.add(
        "alpha",
        """
        import pyframe
        from pyframe.plugins import Setting

        @pyframe.hookimpl
        def pyframe_declare_settings():
            return {"max_value": Setting(float, 1.0, gt=0)}
        """,
    )
    path = _write(site.proj / "pyframe.toml", "[alpha]\nmax_value = -1.0\n")
    with pytest.raises(PluginConfigError) as exc:
        plugins.reload_config()
    assert str(exc.value) == f"{path}: key 'alpha.max_value': expected a number > 0, got -1.0"


# ---- where the config comes from ---------------------------------------------------------------------


def test_defaults(site):
    plugins.reload_config()
    v = _values()
    assert {k: (v[k]["value"], v[k]["source"]) for k in cfg.DEFAULTS} == {
        "autoload": (True, "default"),
        "plugins": (None, "default"),
        "disable_plugins": ([], "default"),
        "order": ([], "default"),
        "strict_plugins": (False, "default"),
    }
    assert plugins.effective_config()["files"] == []


def test_precedence_pyproject_then_pyframe_toml_then_env(site, monkeypatch):
    site.add("alpha")
    site.add("beta")
    pp = _write(site.proj / "pyproject.toml", '[tool.pyframe]\norder = ["beta"]\nautoload = false\n')
    plugins.reload_config()
    assert _values()["order"] == {"value": ["beta"], "source": f"{pp} (tool.pyframe.order)"}
    assert not plugins.get("alpha").enabled and str(pp) in plugins.get("alpha").reason
    pf = _write(site.proj / "pyframe.toml", "autoload = true\n")
    plugins.reload_config()
    assert _values()["autoload"] == {"value": True, "source": f"{pf} (autoload)"}
    assert _values()["order"]["value"] == ["beta"]  # keys merge across files: later wins per key
    assert plugins.get("alpha").enabled
    assert plugins.effective_config()["files"] == [str(pp), str(pf)]
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins.reload_config()
    assert _values()["autoload"] == {"value": False, "source": "PYFRAME_DISABLE_PLUGIN_AUTOLOAD=1"}
    assert not plugins.get("alpha").enabled
    monkeypatch.setenv("PYFRAME_PLUGINS", "alpha")  # explicitly named: loaded even with autoload off
    plugins.reload_config()
    assert plugins.get("alpha").enabled and not plugins.get("beta").enabled
    plugins.disable("alpha")  # run-time calls beat everything
    assert not plugins.get("alpha").enabled


def test_later_source_can_reenable_what_an_earlier_one_disabled(site, monkeypatch):
    site.add("alpha")
    _write(site.proj / "pyframe.toml", 'disable_plugins = ["alpha"]\n')
    plugins.reload_config()
    assert not plugins.get("alpha").enabled
    monkeypatch.setenv("PYFRAME_PLUGINS", "alpha")
    plugins.reload_config()
    assert plugins.get("alpha").enabled and "PYFRAME_PLUGINS=alpha" in plugins.get("alpha").reason


def test_files_are_found_in_parent_directories(site, monkeypatch):
    pf = _write(site.proj / "pyframe.toml", "strict_plugins = true\n")
    sub = site.proj / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    plugins.reload_config()
    assert _values()["strict_plugins"] == {"value": True, "source": f"{pf} (strict_plugins)"}


def test_pyproject_without_tool_pyframe_is_ignored(site):
    _write(site.proj / "pyproject.toml", "[project]\nname = 'x'\n")
    plugins.reload_config()
    assert plugins.effective_config()["files"] == []


def test_pyframe_config_names_the_file_outright(site, monkeypatch, tmp_path):
    _write(site.proj / "pyframe.toml", "strict_plugins = true\n")
    other = _write(tmp_path / "elsewhere.toml", 'order = ["x"]\n')
    monkeypatch.setenv("PYFRAME_CONFIG", str(other))
    with pytest.warns(plugins.PluginWarning, match="unknown plugin 'x'"):
        plugins.reload_config()
    assert _values()["strict_plugins"]["source"] == "default"  # the searched file is not read
    assert _values()["order"]["source"] == f"{other} (order)"
    monkeypatch.setenv("PYFRAME_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(PluginConfigError, match="PYFRAME_CONFIG=.*missing.toml: no such file"):
        plugins.reload_config()


def test_pyframe_config_may_name_a_pyproject(site, monkeypatch, tmp_path):
    pp = _write(tmp_path / "pyproject.toml", "[tool.pyframe]\nstrict_plugins = true\n")
    monkeypatch.setenv("PYFRAME_CONFIG", str(pp))
    plugins.reload_config()
    assert _values()["strict_plugins"] == {"value": True, "source": f"{pp} (tool.pyframe.strict_plugins)"}


# ---- validation errors name the file, the key and what is allowed ---------------------------------------


def test_unknown_key(site):
    path = _write(site.proj / "pyframe.toml", "autolaod = false\n")
    with pytest.raises(PluginConfigError) as exc:
        plugins.reload_config()
    msg = str(exc.value)
    assert str(path) in msg and "'autolaod'" in msg and "did you mean 'autoload'" in msg
    assert "allowed keys: autoload, plugins, disable_plugins, order, strict_plugins" in msg


def test_bad_value_in_pyproject(site):
    path = _write(site.proj / "pyproject.toml", '[tool.pyframe]\nautoload = "no"\n')
    with pytest.raises(
        PluginConfigError, match=rf"{path}: key 'tool.pyframe.autoload': expected true or false, got 'no'"
    ):
        plugins.reload_config()


def test_bad_list_value(site):
    _write(site.proj / "pyframe.toml", 'disable_plugins = "alpha"\n')
    with pytest.raises(PluginConfigError, match="'disable_plugins': expected a list of strings, got 'alpha'"):
        plugins.reload_config()


def test_invalid_toml(site):
    path = _write(site.proj / "pyframe.toml", "autoload = \n")
    with pytest.raises(PluginConfigError, match=rf"{path}: not valid TOML"):
        plugins.reload_config()


def test_bad_environment_value(site, monkeypatch):
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "maybe")
    with pytest.raises(PluginConfigError, match="PYFRAME_DISABLE_PLUGIN_AUTOLOAD='maybe': expected one of '1'"):
        plugins.reload_config()


def test_table_for_an_unknown_plugin_warns(site):
    site.add("alpha")
    _write(site.proj / "pyframe.toml", "[alpah]\nlevel = 2\n")
    with pytest.warns(plugins.PluginWarning, match=r"table \[alpah\].*did you mean 'alpha'"):
        plugins.reload_config()


def test_config_error_fails_import(site, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    _write(site.proj / "pyframe.toml", "autoload = 3\n")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root)}
    r = subprocess.run([sys.executable, "-c", "import pyframe"], cwd=site.proj, env=env, capture_output=True, text=True)
    assert r.returncode != 0
    assert "PluginConfigError" in r.stderr and "'autoload': expected true or false, got 3" in r.stderr


# ---- warnings point at the user's file, failures at the plugin's line -----------------------------------


def test_unknown_table_warning_points_at_the_config_file(site):
    site.add("alpha")
    path = _write(site.proj / "pyframe.toml", "strict_plugins = false\n\n[alpah]\nlevel = 2\n")
    with pytest.warns(plugins.PluginWarning, match=r"table \[alpah\]") as rec:
        plugins.reload_config()
    (w,) = [w for w in rec if "alpah" in str(w.message)]
    assert (w.filename, w.lineno) == (str(path), 3)


def test_plugin_failure_warning_names_the_line_and_points_at_the_caller(site):
    import pyframe

    site.add("broken", "import pyframe\n\nx = 1\nraise RuntimeError('boom')\n")
    with pytest.warns(plugins.PluginWarning, match=r"RuntimeError: boom \(at .*pftest_broken\.py:4\)") as rec:
        plugins.reload_config()
    (w,) = [w for w in rec if "boom" in str(w.message)]
    assert w.filename == __file__  # this test's call, not pyframe's manager
    assert "pftest_broken.py:4" in pyframe.plugins.get("broken").error
