"""The smaller frictions: where warnings point, short config tracebacks, summary counters across disabled(), the
misspelt hook's file, a non-UTF-8 config file, the example plugin's default."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import pytest

import pyframe
from pyframe import plugins
from pyframe.plugins import PluginConfigError, PluginWarning
from tests.plugins.conftest import ROOT, reload, shipped_env, site  # noqa: F401  (fixture)


def python(cwd, code, env):
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip


def test_a_failing_plugin_warns_at_its_own_line_not_sys_1(site, tmp_path):  # noqa: F811
    module = site.add("broken", "import pyframe\n\nx = 1\nraise RuntimeError('boom')\n")
    env = shipped_env(tmp_path, ())
    env["PYTHONPATH"] += ":" + str(site.root)
    (tmp_path / "s.py").write_text("import pyframe\n")
    for cmd in (["s.py"], ["-m", "pyframe", "run", "s.py"]):
        r = subprocess.run([sys.executable, *cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        warning = next(line for line in r.stderr.splitlines() if "PluginWarning" in line)
        assert "sys:1" not in warning
        if cmd == ["s.py"]:
            assert warning.startswith(f"{tmp_path / 's.py'}:1: PluginWarning")  # the user's import
        else:  # pyframe run: no user frame at import time, so the plugin's own line
            assert warning.startswith(f"{site.root / (module + '.py')}:4: PluginWarning"), warning


def test_a_misspelt_hook_cites_the_plugins_file(site):  # noqa: F811
    source = "from pyframe.hookspecs import hookimpl\n\n@hookimpl\ndef pyframe_module_foward(output):\n    pass\n"
    module = site.add("typo", source)
    with pytest.warns(PluginWarning) as rec:
        reload()
    (w,) = [w for w in rec if "pyframe_module_foward" in str(w.message)]
    text = str(w.message)
    assert f"(at {site.root / (module + '.py')}:3)" in text and "manager.py" not in text
    assert "did you mean 'pyframe_module_forward'" in text


def test_config_error_in_a_script_is_short_and_named_as_documented(tmp_path):
    env = shipped_env(tmp_path, ("grad-clipper",))
    (tmp_path / "train.py").write_text("import pyframe\npyframe.plugins.configure('grad-clipper', max_value=-1.0)\n")
    r = subprocess.run([sys.executable, "train.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    # Python 3.13 underlines more expressions with ~~~^^^ lines: those are not lines of the traceback to count
    lines = [x for x in r.stderr.strip().splitlines() if x.strip(" ~^")]
    assert lines[-1] == (
        "pyframe.plugins.PluginConfigError: pyframe.plugins.configure('grad-clipper', max_value=...): "
        "expected a number > 0.0, got -1.0"
    )
    assert len(lines) <= 8, r.stderr  # the script's line, the one pyframe function called, the message
    assert "manager.py" not in r.stderr and "settings.py" not in r.stderr
    # the same at import: a bad value in pyframe.toml
    (tmp_path / "pyframe.toml").write_text("[grad-clipper]\nmax_value = -1.0\n")
    (tmp_path / "imp.py").write_text("import pyframe\n")
    r = subprocess.run([sys.executable, "imp.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert r.stderr.strip().splitlines()[-1].startswith("pyframe.plugins.PluginConfigError: ")
    assert "manager.py" not in r.stderr and len([x for x in r.stderr.splitlines() if x.strip(" ~^")]) <= 8, r.stderr


def test_a_non_utf8_config_file_is_a_one_line_error(tmp_path):
    env = shipped_env(tmp_path, ())
    (tmp_path / "pyframe.toml").write_bytes(b"# caf\xe9\nautoload = true\n")
    r = python(tmp_path, "import pyframe", env)
    last = r.stderr.strip().splitlines()[-1]
    assert last == (
        f"pyframe.plugins.PluginConfigError: {tmp_path / 'pyframe.toml'}: not valid TOML: byte 0xe9 at line 1 is "
        "not UTF-8 (a TOML file must be UTF-8; re-save it as UTF-8)"
    )
    assert "UnicodeDecodeError" not in r.stderr
    for cmd in (["plugins"], ["config"], ["run", "x.py"]):
        r = subprocess.run([sys.executable, "-m", "pyframe", *cmd], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=60)  # fmt: skip
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "is not UTF-8" in r.stderr


def test_summary_counts_survive_a_disabled_block(site):  # noqa: F811
    site.add(
        "counter",
        """
        from pyframe.hookspecs import hookimpl
        seen = {"outputs": 0}

        @hookimpl
        def pyframe_configure(settings):
            seen["outputs"] = 0

        @hookimpl
        def pyframe_module_forward(output):
            seen["outputs"] += 1

        @hookimpl
        def pyframe_summary():
            return dict(seen)
        """,
    )
    reload()
    m = pyframe.nn.Linear(1, 1)
    m(pyframe.ones(1, 1))
    m(pyframe.ones(1, 1))
    with plugins.disabled("counter"):
        m(pyframe.ones(1, 1))
        assert "counter" not in plugins.summary()
    m(pyframe.ones(1, 1))
    assert plugins.summary()["counter"] == {"outputs": 3}
    plugins.configure("counter")  # a real reconfiguration restarts the counts
    assert plugins.summary()["counter"] == {"outputs": 0}


def test_example_plugin_changes_nothing_on_install_alone():
    sys.path.insert(0, str(ROOT / "examples" / "output-scaler"))
    try:
        import pyframe_output_scaler as scaler
    finally:
        sys.path.pop(0)
    declared = scaler.pyframe_declare_settings()
    assert declared["factor"].default == 1.0 and declared.numerics({"factor": 1.0, "modules": []}) is False
    with plugins.activated(scaler, "output-scaler"):
        m = pyframe.nn.Linear(2, 2)
        with plugins.disabled("output-scaler"):
            plain = m(pyframe.ones(1, 2)).tolist()
        assert m(pyframe.ones(1, 2)).tolist() == plain


def test_disable_plugins_typo_in_pyproject_is_an_error(site):  # noqa: F811
    site.add("alpha")
    (site.proj / "pyproject.toml").write_text('[tool.pyframe]\ndisable_plugins = ["alhpa"]\n')
    with pytest.raises(PluginConfigError, match=r"\(tool.pyframe.disable_plugins\): unknown plugin 'alhpa' \(did you"):
        reload()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (site.proj / "pyproject.toml").unlink()
        reload()
