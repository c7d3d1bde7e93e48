"""pyframe's distribution is ``pyframe-core`` (``pyframe`` on the package index is an unrelated package): every
plugin depends on it, and upgrading a plugin eagerly keeps our core instead of pulling the other package in."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = sorted(p for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").is_file())


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _project(path: Path) -> dict:
    return tomllib.loads((path / "pyproject.toml").read_text())["project"]


def test_core_distribution_name():
    assert _project(ROOT)["name"] == "pyframe-core"
    try:
        dist = distribution("pyframe-core")
    except PackageNotFoundError:
        pytest.skip("pyframe-core is not installed (tests run from a source tree)")
    assert "pyframe" in (dist.read_text("top_level.txt") or "pyframe").split() or dist.files


@pytest.mark.parametrize("plugin", PLUGINS, ids=lambda p: p.name)
def test_plugins_depend_on_the_core_and_readmes_name_installable_things(plugin):
    deps = [re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0] for d in _project(plugin)["dependencies"]]
    assert "pyframe-core" in deps and "pyframe" not in [_norm(d) for d in deps]
    readme = (plugin / "README.md").read_text()
    # every `pip install X` names a path in this repository or the core, never an unpublished distribution
    for target in re.findall(r"pip install (?:-e )?([^\s`]+)", readme):
        assert (ROOT / target).exists(), f"{plugin.name}/README.md: pip install {target}: no such path here"


@pytest.mark.slow
def test_eager_upgrade_of_a_plugin_keeps_our_core():
    """What `pip install -U --upgrade-strategy eager plugins/grad-clipper` would do, without doing it."""
    try:
        distribution("pyframe-core")
    except PackageNotFoundError:
        pytest.skip("pyframe-core is not installed in this environment")
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-", "--no-build-isolation"]
    cmd += ["--check-build-dependencies"]
    cmd += ["-U", "--upgrade-strategy", "eager", str(ROOT / "plugins" / "grad-clipper")]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0 and re.search(r"(?i)network|connection|resolve host|no matching distribution", r.stderr):
        pytest.skip(f"the package index is not reachable: {r.stderr.strip().splitlines()[-1]}")
    assert r.returncode == 0, r.stderr
    planned = {_norm(i["metadata"]["name"]): i["metadata"]["version"] for i in json.loads(r.stdout)["install"]}
    assert "pyframe-grad-clipper" in planned
    assert "pyframe" not in planned, f"pip would install the unrelated PyFraME {planned.get('pyframe')}"
    assert "pyframe-core" not in planned  # the installed core satisfies the plugin
