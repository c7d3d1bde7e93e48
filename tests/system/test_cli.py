"""The ``pyframe`` command: ``plugins``, ``config`` (also as ``python -m pyframe``), ``version``, ``show-config``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pyframe
from pyframe.__main__ import main
from tests.plugins.conftest import site  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]


def test_version(capsys):
    assert main(["version"]) == 0
    assert capsys.readouterr().out.strip() == pyframe.__version__


def test_plugins_table(site, monkeypatch, capsys):  # noqa: F811
    site.add("alpha", version="1.2.3")
    site.add("beta", version="0.4.0")
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGINS", "beta")
    pyframe.plugins.reload_config()
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["name", "version", "distribution", "source", "enabled", "why", "hooks"]
    alpha = next(line for line in out if line.startswith("alpha"))
    beta = next(line for line in out if line.startswith("beta"))
    assert "1.2.3" in alpha and "pyframe-alpha" in alpha
    assert "entry point" in alpha and " yes " in alpha and "declare_settings" in alpha
    assert "0.4.0" in beta and " no " in beta and "PYFRAME_DISABLE_PLUGINS=beta" in beta and "(not imported)" in beta


def test_plugins_json(site, capsys):  # noqa: F811
    site.add("alpha", version="1.2.3")
    pyframe.plugins.reload_config()
    assert main(["plugins", "--json"]) == 0
    (rec,) = [r for r in json.loads(capsys.readouterr().out) if r["source"] != "built-in"]
    assert rec["name"] == "alpha" and rec["version"] == "1.2.3" and rec["distribution"] == "pyframe-alpha"
    assert rec["source"] == "entry point" and rec["enabled"] is True and "pyframe_configure" in rec["hooks"]
    assert rec["settings"]["level"] == 1


def test_config_table_and_json(site, capsys):  # noqa: F811
    site.add("alpha")
    path = site.proj / "pyframe.toml"
    path.write_text("strict_plugins = true\n[alpha]\nlevel = 5\n")
    pyframe.plugins.reload_config()
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    assert f"config files read: {path}" in out
    line = next(x for x in out.splitlines() if x.startswith("alpha.level"))
    assert line.split()[1] == "5" and f"{path} (alpha.level)" in line
    assert main(["config", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    strict, autoload = data["values"]["strict_plugins"], data["values"]["autoload"]
    assert (strict["value"], strict["source"]) == (True, f"{path} (strict_plugins)")
    assert (autoload["value"], autoload["source"], autoload["overridden"]) == (True, "default", [])
    assert "error" in strict["help"]


def _run(args, cwd, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
    full.update(env, PYTHONPATH=os.pathsep.join([str(ROOT), *env.get("EXTRA_PATH", "").split(os.pathsep)]))
    return subprocess.run([sys.executable, "-m", "pyframe", *args], cwd=cwd, env=full, capture_output=True, text=True)


def test_python_m_pyframe_plugins(site):  # noqa: F811
    site.add("alpha", version="3.1.4")
    r = _run(["plugins", "--json"], site.proj, EXTRA_PATH=str(site.root))
    assert r.returncode == 0, r.stderr
    # plugins a user installed into this environment may be listed too: only alpha is the test's
    listed = [(p["name"], p["version"], p["enabled"]) for p in json.loads(r.stdout) if p["name"] == "alpha"]
    assert listed == [("alpha", "3.1.4", True)]
    r = _run(["plugins"], site.proj, EXTRA_PATH=str(site.root), PYFRAME_DISABLE_PLUGIN_AUTOLOAD="1")
    assert r.returncode == 0, r.stderr
    assert "PYFRAME_DISABLE_PLUGIN_AUTOLOAD=1" in r.stdout


def test_python_m_pyframe_config(tmp_path):
    r = _run(["config"], tmp_path, PYFRAME_PLUGINS="")
    assert r.returncode == 0, r.stderr
    assert "PYFRAME_PLUGINS=" in r.stdout and "config files read: (none)" in r.stdout


@pytest.mark.parametrize("cmd", [["plugins"], ["config"], ["version"]])
def test_help_lists_subcommands(cmd, capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert cmd[0] in capsys.readouterr().out


def test_dash_dash_version():
    r = _run(["--version"], ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == pyframe.__version__


def test_every_layer_of_disable_plugins_is_shown(site, monkeypatch, capsys):  # noqa: F811
    site.add("alpha")
    site.add("beta")
    path = site.proj / "pyframe.toml"
    path.write_text('disable_plugins = ["alpha"]\nstrict_plugins = true\n')
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGINS", "beta")
    pyframe.plugins.reload_config()
    assert main(["config", "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)["values"]["disable_plugins"]
    assert entry["value"] == ["alpha", "beta"]  # both apply, so both are shown
    assert f"{path} (disable_plugins)" in entry["source"] and "PYFRAME_DISABLE_PLUGINS=beta" in entry["source"]
    assert not pyframe.plugins.get("alpha").enabled and not pyframe.plugins.get("beta").enabled


def test_overridden_layers_are_shown(site, monkeypatch, capsys):  # noqa: F811
    site.add("alpha")
    (site.proj / "pyframe.toml").write_text('plugins = ["alpha"]\n')
    monkeypatch.setenv("PYFRAME_PLUGINS", "")
    pyframe.plugins.reload_config()
    assert main(["config"]) == 0
    lines = capsys.readouterr().out.splitlines()
    i = next(n for n, x in enumerate(lines) if x.startswith("plugins "))
    assert "PYFRAME_PLUGINS=" in lines[i] and "[]" in lines[i]
    assert '["alpha"]' in lines[i + 1] and "(overridden)" in lines[i + 1]
    assert not pyframe.plugins.get("alpha").enabled


def test_settings_help_in_config_table(site, capsys):  # noqa: F811
    site.add(
        "alpha",
        """
        import pyframe
        from pyframe.plugins import Setting

        @pyframe.hookimpl
        def pyframe_declare_settings():
            return {"level": Setting(int, 1, ge=0, help="how much")}
        """,
    )
    pyframe.plugins.reload_config()
    assert main(["config"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("alpha.level"))
    assert "default" in line and line.rstrip().endswith("how much")


@pytest.mark.parametrize(
    ("files", "env", "message"),
    [
        ({}, {"PYFRAME_PLUGINS": "freezr"}, "unknown plugin 'freezr'"),
        ({"pyframe.toml": "autoload = tru\n"}, {}, "not valid TOML"),
        ({"pyframe.toml": "autolaod = true\n"}, {}, "did you mean 'autoload'"),
        ({}, {"PYFRAME_GEMM": "foo"}, "PYFRAME_GEMM='foo': gemm path 'foo' is unknown"),
    ],
)
@pytest.mark.parametrize("cmd", ["plugins", "config", "show-config"])
def test_config_errors_are_one_message(tmp_path, files, env, message, cmd):
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    r = _run([cmd], tmp_path, **env)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stdout == ""
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("pyframe: configuration error: ") and message in line


def test_console_script_prints_config_errors_as_one_line(tmp_path):
    """The ``pyframe`` command pip generates (not only ``python -m pyframe``)."""
    import shutil

    exe = shutil.which("pyframe", path=str(Path(sys.executable).parent))
    if exe is None:
        pytest.skip("the pyframe console script is not installed next to this interpreter")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
    r = subprocess.run([exe, "--version"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == pyframe.__version__
    env["PYFRAME_PLUGINS"] = "freezr"
    r = subprocess.run([exe, "plugins"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith("pyframe: configuration error: PYFRAME_PLUGINS=freezr: unknown plugin 'freezr'")


def test_plugin_setting_layers_are_shown(site, capsys):  # noqa: F811
    site.add("alpha")
    pp = site.proj / "pyproject.toml"
    pp.write_text("[tool.pyframe.alpha]\nlevel = 2\n")
    (site.proj / "pyframe.toml").write_text("[alpha]\nlevel = 3\n")
    pyframe.plugins.reload_config()
    pyframe.plugins.configure("alpha", level=4)
    entry = pyframe.plugins.effective_config()["values"]["alpha.level"]
    assert (entry["value"], entry["source"]) == (4, "pyframe.plugins.configure()")
    assert [o["value"] for o in entry["overridden"]] == [3, 2]  # highest first
    assert entry["overridden"][1]["source"] == f"{pp} (tool.pyframe.alpha.level)"
    assert main(["config"]) == 0
    lines = capsys.readouterr().out.splitlines()
    i = next(n for n, x in enumerate(lines) if x.startswith("alpha.level"))
    assert "(overridden)" in lines[i + 1] and "(overridden)" in lines[i + 2]
