"""The exporters, by what the traced graph calls: functions (by identity), Tensor methods (by name) and
module classes. ``docs/onnx.md``'s op table is generated from ``ENTRIES`` (``op_table.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

__all__ = ["FUNCTIONS", "METHODS", "MODULES", "ENTRIES", "exporter", "module_exporter"]

FUNCTIONS: dict[Any, Callable] = {}
METHODS: dict[str, Callable] = {}
MODULES: dict[type, Callable] = {}


class Entry(NamedTuple):
    name: str
    functions: tuple[str, ...]
    methods: tuple[str, ...]
    modules: tuple[str, ...]
    onnx: str


ENTRIES: list[Entry] = []


def _public_name(fn: Any) -> str:
    import operator

    import pyframe
    import pyframe.nn.functional as F  # noqa: N812

    name = getattr(fn, "__name__", repr(fn))
    functional = (getattr(fn, "__module__", "") or "").startswith("pyframe.nn.functional")
    if functional and getattr(F, name, None) is fn:  # F.x even where pyframe.x is the same function
        return f"F.{name}"
    if getattr(pyframe, name, None) is fn:
        return f"pyframe.{name}"
    if getattr(F, name, None) is fn:
        return f"F.{name}"
    if getattr(operator, name, None) is fn:
        return f"operator.{name}"
    return f"{getattr(fn, '__module__', '')}.{name}"


def exporter(name: str, functions: tuple = (), methods: tuple = (), onnx: str = "") -> Callable:
    """Register ``fn(ctx, args, kwargs)`` for the given functions and Tensor method names. ``args``/``kwargs``
    are the call's, values in place of traced tensors; for a method, ``args[0]`` is the tensor."""

    from pyframe.tensor import Tensor

    methods = tuple(m for m in methods if hasattr(Tensor, m))  # the methods pyframe's Tensor has

    def register(fn: Callable) -> Callable:
        for f in functions:
            FUNCTIONS[f] = fn
        for m in methods:
            METHODS[m] = fn
        ENTRIES.append(Entry(name, tuple(sorted({_public_name(f) for f in functions})), tuple(methods), (), onnx))
        return fn

    return register


def module_exporter(*classes: type, onnx: str = "") -> Callable:
    """Register ``fn(ctx, module, path, args, kwargs)`` for the given module classes (exact types)."""

    def register(fn: Callable) -> Callable:
        for c in classes:
            MODULES[c] = fn
        ENTRIES.append(Entry(classes[0].__name__, (), (), tuple(f"nn.{c.__name__}" for c in classes), onnx))
        return fn

    return register
