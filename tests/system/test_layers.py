"""The layer rules of docs/architecture.md, checked from the source: no import circle among pyframe's
modules (imports inside functions count: a lazy import that breaks a circle is still a circle), no
include circle among the C core's files, and cffi's ``lib``/``ffi`` used only where the doc says."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "pyframe"

# where cffi's lib/ffi may be used: the ops, the functional layers and linalg compute in the C core; the rest
# each have a reason docs/architecture.md gives
LIB_USERS = ("pyframe/ops/", "pyframe/nn/functional/", "pyframe/linalg/")
LIB_ALSO = (
    "pyframe/_backend.py",  # loads the extension, maps errors, allocates
    "pyframe/tensor.py",  # storages and descriptors
    "pyframe/serialization/format.py",  # storage bytes to and from files
)


def _modules() -> dict[str, Path]:
    out = {}
    for p in PKG.rglob("*.py"):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        out[".".join(parts)] = p
    return out


def _resolve(name: str, mods: dict) -> str | None:
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(sub) for sub in ast.walk(node))
    return skip


def import_graph() -> dict[str, set[str]]:
    """Module -> the pyframe modules it imports anywhere in its source (an import of a name from a package
    is an edge to the package's ``__init__``; of a submodule, to the submodule)."""
    mods = _modules()
    graph = {}
    for mod, path in mods.items():
        tree = ast.parse(path.read_text())
        skip = _type_checking_nodes(tree)
        edges = set()
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
                    base = ".".join(pkg[: len(pkg) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            else:
                continue
            for t in targets:
                if t.startswith("pyframe") and not t.startswith("pyframe._core"):  # _core: the compiled extension
                    r = _resolve(t, mods)
                    if r and r != mod:
                        edges.add(r)
        graph[mod] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def _describe(graph: dict[str, set[str]], comp: list[str]) -> str:
    inside = set(comp)
    return "; ".join(f"{m} -> {', '.join(sorted(graph[m] & inside))}" for m in comp)


def test_circles_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle_among_pyframe_modules():
    graph = import_graph()
    assert len(graph) > 100 and "pyframe.ops.elementwise" in graph["pyframe.ops.reduce"]
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(_describe(graph, c) for c in found)


def test_no_include_circle_among_c_files():
    files = [*ROOT.glob("core_c/src/*.[ch]"), *ROOT.glob("core_c/include/*.h")]
    names = {p.name for p in files}
    graph = {p.name: set(re.findall(r'^\s*#\s*include\s+"([^"]+)"', p.read_text(), re.M)) & names for p in files}
    assert "core.h" in graph and graph["core.h"], "core.h should include the public header"
    found = circles(graph)
    assert not found, "include circles:\n" + "\n".join(_describe(graph, c) for c in found)


_CFFI_USE = re.compile(r"from pyframe\._backend import [^\n]*\b(lib|ffi)\b|_backend\.(lib|ffi)\b|from pyframe\._core")


def test_cffi_lib_is_used_only_where_the_architecture_doc_says():
    users = set()
    for p in PKG.rglob("*.py"):
        text = p.read_text()
        if _CFFI_USE.search(text):
            users.add(p.relative_to(ROOT).as_posix())
    stray = sorted(u for u in users if not u.startswith(LIB_USERS + LIB_ALSO))
    assert not stray, f"modules calling the C core directly outside the documented layers: {stray}"
    doc = (ROOT / "docs" / "architecture.md").read_text()
    undocumented = [p for p in LIB_ALSO if f"`{p.removeprefix('pyframe/')}`" not in doc]
    assert not undocumented, f"docs/architecture.md does not name these lib users: {undocumented}"


# what `pip install pyframe-core` brings (pyproject's dependencies): a module-level import of anything else would
# make `import pyframe` fail where only these are installed (an optional extra is imported inside the function
# that needs it). A test venv has much more (torch pulls typing_extensions in), so only the source can tell.
DEPENDENCIES = {"numpy", "pluggy", "cffi", "_cffi_backend"}


def _module_level_imports(tree: ast.AST) -> list[tuple[int, str]]:
    out = []
    guarded = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                guarded.add(id(inner))
        optional = ("ImportError", "ModuleNotFoundError")  # `try: import x except ImportError:` is optional
        if isinstance(node, ast.Try) and any(
            isinstance(h.type, ast.Name) and h.type.id in optional for h in node.handlers
        ):
            for inner in ast.walk(node):
                guarded.add(id(inner))
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.lineno, node.module))
    return out


def test_import_pyframe_needs_only_the_declared_dependencies():
    import sys

    allowed = set(sys.stdlib_module_names) | DEPENDENCIES | {"pyframe", "__future__"}
    bad = []
    for path in sorted(_modules().values()):
        tree = ast.parse(path.read_text(), str(path))
        for line, module in _module_level_imports(tree):
            if module.partition(".")[0] not in allowed:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert not bad, "module-level imports of undeclared packages:\n" + "\n".join(bad)
