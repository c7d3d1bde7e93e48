"""Subpackages as attributes of their parent, imported on first use.

After ``import torch``, torch's subpackages are attributes of their parents (``torch.fx.symbolic_trace``,
``torch.nn.attention.SDPBackend``, ``torch.fx.passes.shape_prop.ShapeProp``) without an import of their own.
pyframe imports a package's subpackages lazily instead: each package's module ``__getattr__`` asks
:func:`submodule` for a name it does not hold, so every submodule is reachable the way programs reach torch's,
whether or not anything imported it yet, at no import-time cost."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from types import ModuleType


def submodule(package: str, name: str) -> ModuleType | None:
    """``package.name`` imported if it is a module of ``package``, else ``None`` (dunder names never are:
    Python's own probes such as ``__path__`` or ``__wrapped__`` must keep raising AttributeError)."""
    if name.startswith("__") or not name.isidentifier():
        return None
    full = f"{package}.{name}"
    try:
        spec = importlib.util.find_spec(full)
    except (ImportError, ValueError):
        return None
    return None if spec is None else importlib.import_module(full)


def lazy(package: str, names: dict[str, str] | None = None) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package`` (``__getattr__ = lazy(__name__)``) that imports its submodules on
    first use and raises torch's AttributeError for any other missing name. ``names`` maps a name of the package
    to the module (above it) that defines it: ``names={"compile": "pyframe._compile"}`` makes ``package.compile``
    that module's ``compile``, imported on first use."""
    names = names or {}

    def __getattr__(name: str) -> object:
        if name in names:
            return getattr(importlib.import_module(names[name]), name)
        module = submodule(package, name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return module

    return __getattr__
