"""End to end: pip-install a tiny plugin into a fresh virtual environment and watch behaviour change with no
code change; uninstall it (or disable it) and the behaviour is back."""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, pyframe
m = pyframe.nn.Linear(2, 2)
out = m(pyframe.ones(1, 2)).tolist()
print(json.dumps({"out": out, "plugins": [(p.name, p.version, p.enabled) for p in pyframe.plugins.list()]}))
"""


def _make_plugin(folder: Path) -> None:
    (folder / "pyframe_tiny_doubler").mkdir(parents=True)
    (folder / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [build-system]
            requires = ["setuptools>=70.1"]
            build-backend = "setuptools.build_meta"

            [project]
            name = "pyframe-tiny-doubler"
            version = "0.2.0"
            dependencies = ["pyframe-core"]

            [project.entry-points.pyframe]
            tiny-doubler = "pyframe_tiny_doubler"
            """
        )
    )
    (folder / "pyframe_tiny_doubler" / "__init__.py").write_text(
        textwrap.dedent(
            """
            import pyframe
            from pyframe.plugins import Setting

            _factor = [2.0]

            @pyframe.hookimpl
            def pyframe_declare_settings():
                return {"factor": Setting(float, 1000.0)}

            @pyframe.hookimpl
            def pyframe_configure(settings):
                _factor[0] = settings["factor"]

            @pyframe.hookimpl
            def pyframe_module_forward(module, output):
                return output * 0 + _factor[0]
            """
        )
    )


@pytest.mark.slow
def test_pip_installed_plugin_changes_behaviour(tmp_path):
    # A new environment that sees this one's packages (numpy, pip, a current setuptools) through a .pth file: its
    # own pip and setuptools would be whatever `venv` bundles (setuptools 65.5 on 3.11, none on 3.12+), and the
    # base interpreter's site-packages (--system-site-packages) need not hold numpy at all.
    venv = tmp_path / "venv"
    try:
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True, timeout=60
        )
    except (subprocess.SubprocessError, OSError) as e:
        pytest.skip(f"cannot create a virtual environment: {e}")
    py = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    inner = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], capture_output=True, text=True
    )
    Path(inner.stdout.strip(), "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
    env.update(PYTHONPATH=str(ROOT), PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INDEX="1")
    work = tmp_path / "work"
    work.mkdir()

    def run_script(**extra):
        r = subprocess.run(
            [str(py), "-c", SCRIPT], cwd=work, env={**env, **extra}, capture_output=True, text=True, timeout=60
        )
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout.strip().splitlines()[-1])

    before = run_script()
    assert before["out"] != [[1000.0, 1000.0]] and "tiny-doubler" not in [p[0] for p in before["plugins"]]

    plugin = tmp_path / "plugin"
    _make_plugin(plugin)
    r = subprocess.run(
        [str(py), "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--check-build-dependencies", "-q"]
        + [str(plugin)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if r.returncode != 0 and "No module named pip" in r.stderr:
        pytest.skip("the virtual environment has no pip")
    assert r.returncode == 0, r.stderr

    after = run_script()  # the same script, nothing changed but the installation
    assert ["tiny-doubler", "0.2.0", True] in after["plugins"]
    assert after["out"] == [[1000.0, 1000.0]]

    (work / "pyframe.toml").write_text("[tiny-doubler]\nfactor = 3.0\n")
    assert run_script()["out"] == [[3.0, 3.0]]
    disabled = run_script(PYFRAME_DISABLE_PLUGINS="tiny-doubler")
    assert disabled["out"] != [[3.0, 3.0]] and ["tiny-doubler", "0.2.0", False] in disabled["plugins"]
