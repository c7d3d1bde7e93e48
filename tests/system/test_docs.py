"""The documentation: every ```python block runs, every ```toml block parses, the site builds with no warning and
works from disk, the API reference lists every public name, and the public definitions have docstrings.

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


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site, built once for the tests below (mkdocs build --strict, as `make docs`)."""
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.importorskip("mkdocs")  # skips: the docs extra is not installed
    out = tmp_path_factory.mktemp("site")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
    env.update(NO_MKDOCS_2_WARNING="1", PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]))
    r = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert not re.search(r"^WARNING", r.stderr, re.M), r.stderr
    return out


def test_site_builds_without_warnings(site):
    assert (site / "index.html").is_file() and (site / "api.html").is_file()


def test_site_works_opened_from_disk(site):
    """build/site/index.html opened from disk: links name pages (not folders), search needs no server or network."""
    for page in [site / "index.html", site / "api-tensor.html"]:
        html = page.read_text()
        hrefs = re.findall(r'<a [^>]*href="([^"#?]*)"', html)
        local = [h for h in hrefs if h and not re.match(r"[a-z]+:", h)]
        assert local, page
        assert all(h.endswith((".html", ".png", ".svg")) for h in local), [h for h in local if not h.endswith(".html")]
        scripts = re.findall(r'<script src="([^"]+)"', html)
        assert not [s for s in scripts if re.match(r"https?:", s)], scripts  # nothing from a CDN
        assert any(s.endswith("javascripts/iframe-worker.js") for s in scripts), scripts
    index = (site / "search" / "search_index.js").read_text()  # what the search box loads under file://
    assert index.startswith("var __index = ") and '"location":"api-pyframe.html#pyframe.linspace"' in index


def test_reference_lists_every_public_name(site):
    """Every public name of every namespace of the compatibility table (and its __all__) is in the API reference:
    under its own path, or, for a name re-exported from elsewhere (``nn.init.Tensor``), the object it names is.
    The build itself checks it too (tools/mkdocs_api.py), so ``make docs`` fails on a missing name."""
    os.environ.setdefault("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")
    from tools import mkdocs_api

    wanted = mkdocs_api.wanted_names(DOCS / "compatibility.md")
    assert {"pyframe", "pyframe.Tensor", "pyframe.nn", "pyframe.optim", "pyframe.distributions"} <= set(wanted)
    missing = mkdocs_api.missing_names(site, DOCS / "compatibility.md")
    assert not missing, f"{len(missing)} public names are not in the API reference: {missing}"


# the share of public definitions with a docstring (tools/docstring_coverage.py) must not fall below this
MIN_COVERAGE = 95


def test_docstring_coverage():
    """At least MIN_COVERAGE percent of the public definitions have a docstring (``python
    tools/docstring_coverage.py --missing`` says which do not)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    r = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "docstring_coverage.py"), "--min", str(MIN_COVERAGE)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr


# what a fence may be: python blocks run (test_python_blocks_run), toml blocks parse; the others are shown only,
# so a block is never skipped by accident: one without a language fails here
SHOWN_ONLY = {"sh", "bash", "text", "json", "c", "console"}


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_every_block_names_its_language(page):
    text = page.read_text()
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        assert m[1] in {"python", "toml"} | SHOWN_ONLY, (
            f"{_id(page)}:{line}: a code block needs a language (```python runs; ```text, ```sh ... are shown only)"
        )
