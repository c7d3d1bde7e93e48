"""The documentation: every ```python block runs, every ```toml block parses, and the site builds with no warning.

A page's python blocks run in order in one fresh interpreter (a later block may use names from an earlier one, as a
reader would run them), with the current directory in a temporary folder and installed plugins not autoloaded.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted([*DOCS.rglob("*.md"), ROOT / "README.md", *(ROOT / "plugins").glob("*/README.md")])
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)


def blocks(page: Path, lang: str) -> list[tuple[int, str]]:
    """(line number, code) of every block fenced as ```lang on the page."""
    text = page.read_text()
    return [(text.count("\n", 0, m.start()) + 1, m[2]) for m in FENCE.finditer(text) if m[1] == lang]


def _id(page: Path) -> str:
    return str(page.relative_to(ROOT))


PY_PAGES = [p for p in PAGES if blocks(p, "python")]
TOML_PAGES = [p for p in PAGES if blocks(p, "toml")]


def test_pages_are_found():
    assert len(PY_PAGES) >= 15 and (DOCS / "quickstart.md") in PY_PAGES


# a block whose first line is a comment naming a .py file (``# tests/test_x.py``) is that file: it is written there
# (the page's later blocks can import it) and test files among them are run with pytest
FILE_LINE = re.compile(r"^# ([\w./-]+\.py)\n")
# a block that needs what a test cannot have (a cluster, mpiexec) says why in a comment just above its fence:
# <!-- not run: needs mpiexec --> ; it is still compiled
NOT_RUN = re.compile(r"<!-- not run: [^>]+-->\s*$")
# pages whose blocks use the shipped plugins: they run with them installed (in build/plugin-site) but not autoloaded
NEEDS_PLUGINS = {"plugins.md"}


def _not_run(page: Path, line: int) -> bool:
    before = "\n".join(page.read_text().splitlines()[max(0, line - 3) : line - 1])
    return bool(NOT_RUN.search(before))


@pytest.mark.parametrize("page", PY_PAGES, ids=_id)
def test_python_blocks_run(page, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
    env.update(PYFRAME_DISABLE_PLUGIN_AUTOLOAD="1", OPENBLAS_NUM_THREADS="1")
    paths = [str(ROOT), str(tmp_path)]
    if page.name in NEEDS_PLUGINS:
        site = ROOT / "build" / "plugin-site"
        if not (site / ".installed").is_file():
            pytest.skip("needs the shipped plugins in build/plugin-site (make installs them)")
        paths.append(str(site))
    env["PYTHONPATH"] = os.pathsep.join(paths)
    parts, tests = [], []
    for line, code in blocks(page, "python"):
        where = f"{_id(page)}:{line}"
        compile(code, where, "exec")  # every block is at least valid Python
        file = FILE_LINE.match(code)
        if file:
            target = tmp_path / file[1]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(code)
            if target.name.startswith("test_"):
                tests.append(str(target))
        elif not _not_run(page, line):
            # each block keeps its page and line in tracebacks
            parts.append(f"exec(compile({code!r}, {where!r}, 'exec'))")
    script = tmp_path / "page.py"
    script.write_text("\n".join(parts) + "\n")
    run = [[sys.executable, str(script)]]
    if tests:
        run.append([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), *tests])
    for cmd in run:
        r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
        assert r.returncode == 0, f"a python block of {_id(page)} failed:\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"


@pytest.mark.parametrize("page", TOML_PAGES, ids=_id)
def test_toml_blocks_parse(page):
    for line, code in blocks(page, "toml"):
        try:
            tomllib.loads(code)
        except tomllib.TOMLDecodeError as e:
            pytest.fail(f"{_id(page)}:{line}: a toml block is not valid TOML: {e}")


def test_site_builds_without_warnings(tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.importorskip("mkdocs")  # skips: the docs extra is not installed
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    r = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert not re.search(r"^WARNING", r.stderr, re.M), r.stderr
    assert (tmp_path / "site" / "api" / "index.html").is_file()
