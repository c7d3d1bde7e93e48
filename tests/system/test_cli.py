"""The ``pyframe`` command: ``plugins``, ``config`` (also as ``python -m pyframe``), ``version``, ``show-config``; help,
did-you-mean, tables that fit the terminal, and one behaviour for the console script and ``python -m pyframe``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pyframe
import pyframe.__main__ as cli
from pyframe.__main__ import COMMANDS, Command, _table, main
from tests.plugins.conftest import site  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _wide(monkeypatch):
    """Tables as on a 200-column terminal unless a test narrows it (output to a pipe would be 80)."""
    monkeypatch.setenv("COLUMNS", "200")


def test_version(site, capsys):  # noqa: F811
    """As ``pytest --version --version``: the version, where it is imported from, each plugin's version and place."""
    site.add("alpha", version="1.2.3")
    assert main(["version"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith(f"pyframe {pyframe.__version__}, imported from {ROOT / 'pyframe' / '__init__.py'} ")
    assert f"Python {sys.version_info.major}.{sys.version_info.minor}" in first
    assert f"  alpha-1.2.3 (pyframe-alpha) at {site.root}" in out.splitlines()
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == out


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


def test_bare_pyframe_prints_help(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: pyframe")
    for cmd in COMMANDS:
        assert f"    {cmd.name}" in out  # each subcommand, with its summary
    assert "pyframe COMMAND --help" in out


@pytest.mark.parametrize(("typed", "meant"), [("plugin", "plugins"), ("confg", "config"), ("show", "show-config")])
def test_mistyped_command_did_you_mean(typed, meant, capsys):
    with pytest.raises(SystemExit) as e:
        main([typed])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"pyframe: error: unknown command '{typed}' (did you mean '{meant}'?)" in err


def test_unknown_command_without_a_close_match_lists_the_commands(capsys):
    with pytest.raises(SystemExit):
        main(["frobnicate"])
    err = capsys.readouterr().err
    assert "did you mean" not in err and "commands: " + ", ".join(c.name for c in COMMANDS) in err


@pytest.mark.parametrize("cmd", [c.name for c in COMMANDS])
def test_every_subcommand_help_has_a_description(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        main([cmd, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    (entry,) = [c for c in COMMANDS if c.name == cmd]
    assert out.startswith(f"usage: pyframe {cmd}")
    assert len(entry.description) > len(entry.summary)
    assert " ".join(entry.description.split()[:6]) in " ".join(out.split())


def test_a_subcommand_in_a_module_of_its_own(tmp_path, monkeypatch, capsys):
    """How a subcommand defined elsewhere registers: one row naming its module, imported only when it runs."""
    (tmp_path / "pftest_cli_hello.py").write_text(
        "DESCRIPTION = 'Say hello to NAME, as often as asked.'\n"
        "def add_arguments(parser):\n    parser.add_argument('name')\n    parser.add_argument('--times', type=int)\n"
        "def run(args):\n    print('hello ' + args.name * (args.times or 1))\n    return 3\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(cli, "COMMANDS", [*COMMANDS, Command("hello", "say hello", module="pftest_cli_hello")])
    assert main(["plugins", "--json"]) == 0 and "pftest_cli_hello" not in sys.modules
    capsys.readouterr()
    assert main(["hello", "x", "--times", "2"]) == 3
    assert capsys.readouterr().out == "hello xx\n"
    with pytest.raises(SystemExit):
        main(["hello", "--help"])
    assert "Say hello to NAME" in capsys.readouterr().out
    sys.modules.pop("pftest_cli_hello")


def test_dash_dash_version():
    r = _run(["--version"], ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"pyframe {pyframe.__version__}, imported from {ROOT / 'pyframe' / '__init__.py'} ")


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
    lines = capsys.readouterr().out.splitlines()
    i = next(n for n, x in enumerate(lines) if x.startswith("alpha.level"))
    assert "default" in lines[i] and lines[i + 1] == "    how much"  # the help, under its row


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
    assert r.returncode == 0 and r.stdout.startswith(f"pyframe {pyframe.__version__}, imported from ")
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


# ---- tables that fit the terminal ----------------------------------------------------------------------------------


def test_table_wraps_a_long_cell_in_its_own_row():
    rows = [["alpha", "ok", "configure"], ["beta", "x" * 5 + " word" * 68, "configure"]]  # a 345-character why
    out = _table(rows, ["name", "why", "hooks"], wrap=("why",), width=60).splitlines()
    assert max(len(line) for line in out) <= 60
    assert out[2].startswith("alpha ") and out[3].startswith("beta ")  # alpha's row stays one line
    assert sum(1 for line in out if line.startswith(" ")) >= 6  # beta's why continues below it
    assert " ".join(w for line in out[3:] for w in line.split() if w not in ("beta", "configure")) == rows[1][1]


def test_table_leaves_out_optional_columns_before_breaking_words():
    rows = [["alpha", "pyframe-alpha-distribution", "entry point", "installed; autoload is on by default"]]
    header = ["name", "distribution", "source", "why"]
    wide = _table(rows, header, wrap=("why",), optional=("distribution",), width=200)
    assert "distribution" in wide.splitlines()[0] and len(wide.splitlines()) == 3
    narrow = _table(rows, header, wrap=("why",), optional=("distribution",), width=50).splitlines()
    assert narrow[0].split() == ["name", "source", "why"] and max(len(x) for x in narrow) <= 50


def _failing_plugin(site, why: str) -> None:  # noqa: F811
    site.add("broken", f"raise RuntimeError({why!r})\n")
    site.add("alpha", version="1.2.3")


@pytest.mark.parametrize("columns", [80, 120])
def test_plugins_table_fits_the_terminal(site, monkeypatch, capsys, columns):  # noqa: F811
    why = "the plugin cannot start: " + "a long explanation " * 17  # ~340 characters
    _failing_plugin(site, why)
    monkeypatch.setenv("COLUMNS", str(columns))
    with pytest.warns(Warning):
        pyframe.plugins.reload_config()
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert max(len(line) for line in out) <= columns
    alpha = next(n for n, line in enumerate(out) if line.startswith("alpha"))
    assert "1.2.3" in out[alpha] and "yes" in out[alpha].split()
    assert "a long explanation a long" in " ".join(" ".join(out).split())  # wrapped, all there


def test_python_m_pyframe_uses_the_terminal_width(site):  # noqa: F811
    site.add("alpha", version="3.1.4")
    for columns in ("70", "150"):
        r = _run(["plugins"], site.proj, EXTRA_PATH=str(site.root), COLUMNS=columns)
        assert r.returncode == 0, r.stderr
        assert max(len(line) for line in r.stdout.splitlines()) <= int(columns)


# ---- config: types, defaults, limits, disabled plugins ------------------------------------------------------------


def test_config_shows_type_default_and_limits(site, capsys):  # noqa: F811
    site.add(
        "alpha",
        """
        import pyframe
        from pyframe.plugins import Setting

        @pyframe.hookimpl
        def pyframe_declare_settings():
            return {"level": Setting(int, 1, ge=0, lt=10, help="how much"),
                    "mode": Setting(str, "a", choices=["a", "b"], help="which")}
        """,
    )
    (site.proj / "pyframe.toml").write_text('[alpha]\nmode = "b"\n')
    pyframe.plugins.reload_config()
    assert main(["config"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["key", "value", "type", "default", "from"]
    level = next(x for x in lines if x.startswith("alpha.level"))
    assert level.split()[:6] == ["alpha.level", "1", "int", ">=", "0", "and"]
    assert lines[lines.index(level) + 1].split() == ["how", "much"]
    mode = next(x for x in lines if x.startswith("alpha.mode"))
    assert mode.split()[:4] == ["alpha.mode", '"b"', "str", '"a"']
    assert lines[lines.index(mode) + 1] == "    which (one of 'a', 'b')"  # choices with the help, under the row
    autoload = next(x for x in lines if x.startswith("autoload"))
    assert autoload.split()[:4] == ["autoload", "true", "bool", "true"]
    assert main(["config", "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)["values"]["alpha.level"]
    assert (entry["type"], entry["default"], entry["limits"]) == ("int", 1, ">= 0 and < 10")


def test_config_shows_a_disabled_plugins_settings(site, monkeypatch, capsys):  # noqa: F811
    site.add("alpha")
    path = site.proj / "pyframe.toml"
    path.write_text("[alpha]\nlevel = 5\n")
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGINS", "alpha")
    pyframe.plugins.reload_config()
    assert main(["config"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("alpha.level"))
    assert line.split()[:4] == ["alpha.level", "5", "?", "?"] and f"{path} (alpha.level)" in line
    assert "not enabled" in out.splitlines()[out.splitlines().index(line) + 1]
    assert main(["config", "--json"]) == 0
    entry = json.loads(capsys.readouterr().out)["values"]["alpha.level"]
    assert entry["value"] == 5 and entry["plugin_enabled"] is False and entry["type"] is None


# ---- the console script and python -m pyframe ---------------------------------------------------------------------


def test_console_script_imports_a_plugin_module_from_the_current_directory(tmp_path):
    """``PYFRAME_PLUGINS=localplug pyframe plugins`` as ``python -m pyframe plugins``: a module in the current
    directory is importable for both (the script pip generates has its own folder first on sys.path)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pyframe"  # what pip writes for [project.scripts] pyframe = "pyframe.__main__:main"
    script.write_text(
        "import sys\nfrom pyframe.__main__ import main\nif __name__ == '__main__':\n    sys.exit(main())\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    (work / "localplug.py").write_text(
        "import pyframe\n\n@pyframe.hookimpl\ndef pyframe_configure(settings):\n    pass\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
    env.update(PYTHONPATH=str(ROOT), PYFRAME_PLUGINS="localplug", COLUMNS="200")
    outputs = []
    for argv in (
        [sys.executable, str(script), "plugins", "--json"],
        [sys.executable, "-m", "pyframe", "plugins", "--json"],
    ):
        r = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outputs.append(json.loads(r.stdout))
    assert outputs[0] == outputs[1]
    (local,) = [p for p in outputs[0] if p["name"] == "localplug"]
    assert local["enabled"] and local["error"] is None and "pyframe_configure" in local["hooks"]
