"""mkdocs hook for the API reference pages (docs/api-*.md): member lists taken from the code, not copied by hand.

A line ``<!-- api: NAMESPACE | FAMILY -->`` becomes mkdocstrings directives rendering NAMESPACE's members that
FAMILY's ``__all__`` lists (``<!-- api: pyframe | pyframe.ops.creation -->``: ``pyframe.zeros``, ``pyframe.ones``,
...), so a name added to a family appears in the reference without editing the page. ``FAMILY`` ``rest`` means
NAMESPACE's ``__all__`` minus what the page's other lines for NAMESPACE already list, minus submodules, minus
the names after a third ``|`` (documented on a page of their own: ``<!-- api: pyframe | rest | Tensor -->``).

mkdocs.yml loads it with ``hooks: [tools/mkdocs_api.py]``.
"""

from __future__ import annotations
import __future__

import importlib
import inspect
import os
import re
import sys

os.environ.setdefault("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")  # document pyframe, not what plugins change

LINE = re.compile(r"^<!-- api: ([\w.]+) \| ([\w.]+)(?: \| ([\w, ]+))? -->$", re.M)


def public(namespace: str) -> list[str]:
    """A namespace's public names (its ``__all__``; without one, what its own source defines), without
    submodules."""
    module = importlib.import_module(namespace)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_") and _defined_in(v, namespace)]
    return [n for n in dict.fromkeys(names) if not inspect.ismodule(getattr(module, n, None))]


def _defined_in(value: object, namespace: str) -> bool:
    if inspect.isclass(value) or inspect.isroutine(value):
        return value.__module__ == namespace
    return not inspect.ismodule(value) and not isinstance(value, __future__._Feature)


def _path(namespace: str, name: str) -> str:
    """What mkdocstrings is asked for: ``namespace.name``, or, where a submodule of the same name hides the object
    from a reader of the source (``pyframe.tensor`` the function, ``pyframe/tensor.py`` the module), the path of
    the module that defines it."""
    if f"{namespace}.{name}" in sys.modules:
        return f"{getattr(importlib.import_module(namespace), name).__module__}.{name}"
    return f"{namespace}.{name}"


def _directive(namespace: str, names: list[str]) -> str:
    """One mkdocstrings directive per name (the namespace's own docstring is not repeated per family)."""
    options = "    options:\n      heading_level: 3\n      show_root_full_path: false\n"
    return "\n".join(f"::: {_path(namespace, n)}\n{options}" for n in names)


def on_page_markdown(markdown: str, page, config, files) -> str:
    lines = LINE.findall(markdown)
    if not lines:
        return markdown
    taken: dict[str, set[str]] = {}
    for namespace, family, _ in lines:
        if family != "rest":
            taken.setdefault(namespace, set()).update(public(family))

    def expand(m: re.Match) -> str:
        namespace, family = m[1], m[2]
        if family == "rest":
            skip = taken.get(namespace, set()) | {n.strip() for n in (m[3] or "").split(",")}
            names = [n for n in public(namespace) if n not in skip]
        else:
            have = set(public(namespace))
            names = [n for n in public(family) if n in have]
        return _directive(namespace, sorted(names, key=str.lower))

    return LINE.sub(expand, markdown)
