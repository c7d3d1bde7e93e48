"""The core suite is immune to plugins installed into the test environment (README: "pip install ./plugins/...").

``tests/conftest.py`` turns entry-point autoload off before pyframe is imported; the variable is inherited by every
subprocess a test starts. Plugin tests turn their plugin on themselves (``pyframe.plugins.testing.activated``), and the
``site`` fixture of tests/plugins/conftest.py builds its own plugin world.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pyframe


def test_autoload_is_off_for_the_core_suite():
    assert os.environ.get("PYFRAME_DISABLE_PLUGIN_AUTOLOAD") == "1"
    active = [p.name for p in pyframe.plugins.list() if p.enabled and p.source == "entry point"]
    assert active == [], f"installed plugins are active in the core suite: {active}"


def test_subprocesses_inherit_it():
    code = "import pyframe; print([p.name for p in pyframe.plugins.list() if p.enabled and p.source != 'built-in'])"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
