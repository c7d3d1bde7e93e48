"""The plugin tests' own world: fake installed distributions with ``pyframe`` entry points (the ``site`` fixture, also
used by tests/system/test_cli.py) and small plugins that record what pyframe calls.

Entry points are simulated with a temporary distribution: a folder on ``sys.path`` holding
``<dist>-<version>.dist-info/{METADATA,entry_points.txt}`` and the plugin module, which is all that
``importlib.metadata`` needs.
"""

from __future__ import annotations

import importlib
import re
import sys
import textwrap
import tomllib
import warnings
from pathlib import Path

import pytest

import pyframe
from pyframe import plugins
from pyframe.plugins import Setting
from pyframe.plugins import manager as manager_module

RECORDING_PLUGIN = """
from pyframe.hookspecs import hookimpl
from pyframe.plugins import Setting

CALLS = []

@hookimpl
def pyframe_declare_settings():
    return {{"level": Setting(int, 1), "mode": Setting(str, "a", choices=["a", "b"]),
             "names": Setting(list[str], []), "scale": Setting(float, 1.0), "on": Setting(bool, True)}}

@hookimpl
def pyframe_configure(settings):
    CALLS.append(("configure", dict(settings)))

@hookimpl
def pyframe_unconfigure():
    CALLS.append(("unconfigure",))
{extra}
"""


class Site:
    """A folder on sys.path where tests create fake installed distributions with ``pyframe`` entry points."""

    def __init__(self, root: Path, monkeypatch) -> None:
        self.root = root
        self.modules: list[str] = []
        root.mkdir(parents=True, exist_ok=True)
        monkeypatch.syspath_prepend(str(root))

    def add(self, name: str, source: str | None = None, *, dist: str | None = None, version: str = "0.1.0") -> str:
        """Installs plugin ``name`` (entry point name) from distribution ``dist``; returns its module name."""
        dist = dist or f"pyframe-{name}"
        module = "pftest_" + re.sub(r"\W", "_", name)
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text(f"[pyframe]\n{name} = {module}\n")
        src = RECORDING_PLUGIN.format(extra="") if source is None else textwrap.dedent(source)
        (self.root / f"{module}.py").write_text(src)
        self.modules.append(module)
        importlib.invalidate_caches()
        return module


@pytest.fixture
def site(tmp_path, monkeypatch):
    """An isolated plugin world: no PYFRAME_* variables, cwd in an empty project folder, a fake site dir.
    Afterwards everything is undone and the real plugin state is reloaded."""
    for var in ("PYFRAME_CONFIG", "PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "PYFRAME_PLUGINS", "PYFRAME_DISABLE_PLUGINS"):
        monkeypatch.delenv(var, raising=False)
    proj = tmp_path / "proj"
    proj.mkdir()
    monkeypatch.chdir(proj)
    s = Site(tmp_path / "site", monkeypatch)
    s.proj = proj
    # only the fake distributions count: plugins installed in the test environment stay out of these tests
    real = manager_module._entry_points
    monkeypatch.setattr(
        manager_module,
        "_entry_points",
        lambda: [ep for ep in real() if Path(str(getattr(ep.dist, "_path", ""))).parent == s.root],
    )
    yield s
    monkeypatch.undo()
    for m in s.modules:
        sys.modules.pop(m, None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plugins._manager.reset()


def reload():
    plugins._manager.reset()


def calls(module: str) -> list:
    return sys.modules[module].CALLS


class Recorder:
    def __init__(self):
        self.calls = []

    @pyframe.hookspecs.hookimpl
    def pyframe_declare_settings(self):
        return {"k": Setting(int, 0)}

    @pyframe.hookspecs.hookimpl
    def pyframe_configure(self, settings):
        self.calls.append(dict(settings))

    @pyframe.hookspecs.hookimpl
    def pyframe_unconfigure(self):
        self.calls.append("unconfigure")


# ---- the shipped plugins, "installed" from the source tree, for tests that run a fresh interpreter -----------

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = {  # entry-point name -> (distribution, module, folder under plugins/)
    "float32-enforcer": ("pyframe-float32-enforcer", "pyframe_float32_enforcer", "float32-enforcer"),
    "grad-clipper": ("pyframe-grad-clipper", "pyframe_grad_clipper", "grad-clipper"),
    "nan-detector": ("pyframe-nan-detector", "pyframe_nan_detector", "nan-detector"),
    "lora": ("pyframe-lora", "pyframe_lora", "lora"),
}


def shipped_env(tmp_path: Path, names=tuple(SHIPPED), **extra: str) -> dict:
    """The environment of a fresh interpreter in which exactly ``names`` of the shipped plugins are installed
    (entry-point metadata in a temporary site folder, their code from plugins/<name>), no PYFRAME_* variable set;
    ``extra`` adds variables."""
    import os

    site_dir = tmp_path / "shipped-site"
    site_dir.mkdir(exist_ok=True)
    paths = [str(ROOT), str(site_dir)]
    for name in names:
        dist, module, folder = SHIPPED[name]
        version = tomllib.loads((ROOT / "plugins" / folder / "pyproject.toml").read_text())["project"]["version"]
        info = site_dir / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir(exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text(f"[pyframe]\n{name} = {module}\n")
        paths.append(str(ROOT / "plugins" / folder))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra)
    return env


def shipped_module(name: str):
    """The shipped plugin ``name``'s module, imported from plugins/<name> (installed or not; a stale installed copy
    does not shadow it unless it was imported first)."""
    import importlib

    _, module, folder = SHIPPED[name]
    path = str(ROOT / "plugins" / folder)
    if path not in sys.path:
        sys.path.insert(0, path)  # this tree's source, before a copy installed elsewhere (build/plugin-site)
    return importlib.import_module(module)
