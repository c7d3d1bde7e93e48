"""Docstring coverage of pyframe's public definitions, per namespace: `python tools/docstring_coverage.py`.

The public definitions are what a user reaches by a public name: every function, class and property in the
``__all__`` of the namespaces below (the ones of docs/compatibility.md's table, plus plugins, hook specifications
and serialization), every public method and property of those classes (their own, not inherited from outside
pyframe), and every public attribute of ``pyframe.Tensor``. Each object counts once, in the first namespace that
reaches it. Constants (``pi``, ``float32``) are not definitions. A method without a docstring of its own that
overrides a documented method of a base class counts as documented: its contract is the base's, and the API
reference shows the base's docstring there (like ``inspect.getdoc``).

``--missing`` lists what has no docstring; ``--min P`` exits 1 below P percent in total.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

os.environ.setdefault("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")

NAMESPACES = [
    "pyframe", "pyframe.Tensor", "pyframe.nn", "pyframe.nn.functional", "pyframe.nn.init", "pyframe.nn.utils",
    "pyframe.nn.utils.parametrize", "pyframe.nn.utils.parametrizations", "pyframe.nn.utils.prune",
    "pyframe.autograd", "pyframe.linalg", "pyframe.optim", "pyframe.optim.lr_scheduler", "pyframe.utils.data",
    "pyframe.distributions", "pyframe.distributed", "pyframe.nn.parallel", "pyframe.cuda", "pyframe.accelerator",
    "pyframe.fx", "pyframe.onnx", "pyframe.special", "pyframe.signal.windows", "pyframe.backends",
    "pyframe.plugins", "pyframe.plugins.testing", "pyframe.hookspecs", "pyframe.serialization",
]  # fmt: skip


# a namespace added to docs/compatibility.md's table (tools/compat_table.py) is measured too
_TABLE = Path(__file__).resolve().parent.parent / "docs" / "compatibility.md"
if _TABLE.is_file():
    NAMESPACES += [
        ns for ns in re.findall(r"^\| `(pyframe[\w.]*)` \|", _TABLE.read_text(), re.M) if ns not in NAMESPACES
    ]


def resolve(path: str) -> Any:
    """``pyframe.nn`` -> the module; ``pyframe.Tensor`` -> the class."""
    try:
        return importlib.import_module(path)
    except ImportError:
        parent, _, name = path.rpartition(".")
        return getattr(importlib.import_module(parent), name)


def _ours(obj: Any) -> bool:
    target = obj.fget if isinstance(obj, property) else obj
    return (inspect.isfunction(target) or inspect.isclass(target) or inspect.isbuiltin(target)) and str(
        getattr(target, "__module__", "")
    ).startswith("pyframe")


def _doc(obj: Any) -> str | None:
    if inspect.isclass(obj):
        return obj.__dict__.get("__doc__")
    return obj.__doc__


def _inherited_doc(cls: type, name: str) -> str | None:
    for base in cls.__mro__[1:]:
        if name in vars(base):
            value = vars(base)[name]
            value = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            doc = _doc(value)
            if doc:
                return doc
    return None


def names(namespace: str) -> list[str]:
    obj = resolve(namespace)
    if inspect.isclass(obj):
        return sorted(n for n in vars(obj) if not n.startswith("_"))
    return list(dict.fromkeys(getattr(obj, "__all__", [n for n in vars(obj) if not n.startswith("_")])))


def definitions(namespace: str) -> Iterator[tuple[str, Any, bool]]:
    """(qualified name, object, has a docstring) of each public definition reached from a namespace."""
    ns = resolve(namespace)
    for name in names(namespace):
        value = inspect.getattr_static(ns, name) if inspect.isclass(ns) else getattr(ns, name, None)
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if not _ours(value):
            continue
        documented = bool(_doc(value)) or (inspect.isclass(ns) and bool(_inherited_doc(ns, name)))
        yield f"{namespace}.{name}", value, documented
        if inspect.isclass(value) and not inspect.isclass(ns):
            for member, raw in vars(value).items():
                if member.startswith("_"):
                    continue
                raw = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
                if not _ours(raw) or inspect.isclass(raw):
                    continue
                documented = bool(_doc(raw)) or bool(_inherited_doc(value, member))
                yield f"{namespace}.{name}.{member}", raw, documented


def coverage() -> dict[str, list[tuple[str, bool]]]:
    """namespace -> [(qualified name, documented)], each object counted once."""
    seen: set[int] = set()
    out: dict[str, list[tuple[str, bool]]] = {namespace: [] for namespace in NAMESPACES}
    # Tensor's methods count under pyframe.Tensor, not under the pyframe that exports the class
    for namespace in sorted(NAMESPACES, key=lambda ns: ns != "pyframe.Tensor"):
        rows = out[namespace]
        for qualname, obj, documented in definitions(namespace):
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            rows.append((qualname, documented))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--missing", action="store_true", help="list the definitions without a docstring")
    parser.add_argument("--min", type=float, default=0.0, help="exit 1 when the total is below this percentage")
    args = parser.parse_args(argv)
    cov = coverage()
    total = documented = 0
    for namespace, rows in cov.items():
        n, d = len(rows), sum(doc for _, doc in rows)
        total, documented = total + n, documented + d
        print(f"{namespace:34} {d:4d}/{n:<4d} {100 * d / n if n else 100:5.1f}%")
        if args.missing:
            for qualname, doc in rows:
                if not doc:
                    print(f"    {qualname}")
    pct = 100 * documented / total
    print(f"{'total':34} {documented:4d}/{total:<4d} {pct:5.1f}%")
    return 0 if pct >= args.min else 1


if __name__ == "__main__":
    sys.exit(main())
