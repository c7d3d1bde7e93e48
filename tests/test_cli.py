"""The ``pyframe`` command: ``plugins``, ``config`` (also as ``python -m pyframe``), ``version``, ``show-config``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_plugins import site  # noqa: F401  (fixture)

import pyframe
from pyframe.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


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
    assert out[0].split() == ["name", "version", "source", "enabled", "why", "hooks"]
    alpha = next(line for line in out if line.startswith("alpha"))
    beta = next(line for line in out if line.startswith("beta"))
    assert "1.2.3" in alpha and "entry point" in alpha and " yes " in alpha and "declare_settings" in alpha
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
    assert data["values"]["strict_plugins"] == {"value": True, "source": f"{path} (strict_plugins)"}
    assert data["values"]["autoload"] == {"value": True, "source": "default"}


def _run(args, cwd, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
    full.update(env, PYTHONPATH=os.pathsep.join([str(ROOT), *env.get("EXTRA_PATH", "").split(os.pathsep)]))
    return subprocess.run([sys.executable, "-m", "pyframe", *args], cwd=cwd, env=full, capture_output=True, text=True)


def test_python_m_pyframe_plugins(site):  # noqa: F811
    site.add("alpha", version="3.1.4")
    r = _run(["plugins", "--json"], site.proj, EXTRA_PATH=str(site.root))
    assert r.returncode == 0, r.stderr
    listed = [(p["name"], p["version"], p["enabled"]) for p in json.loads(r.stdout) if p["source"] != "built-in"]
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
