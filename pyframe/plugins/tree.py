"""``pyframe_model_ready``: the point where a model's tree, and so every qualified name in it, is known.

A model is built bottom-up: a ``Linear`` registers its ``weight`` before it is attached to its block, the block
before it is attached to the model. Only when the outermost module is called for the first time is the tree
final. While some plugin implements ``pyframe_model_ready(model)``, a global forward pre-hook (a function hook,
so it runs after the plugins' own pre-hooks of that call, but before the outermost module's forward) calls it
once per outermost module; modules seen once are skipped with one set lookup. With no implementation the hook is
not installed and nothing runs on forward.
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any

from pyframe import _hooks

__all__ = ["set_ready_hooks"]

_impls: list[tuple[Any, tuple, str]] = []
_handle: Any = None
_seen: weakref.WeakSet = weakref.WeakSet()


def set_ready_hooks(impls: list[tuple[Any, tuple, str]]) -> None:
    """The plugins' ``pyframe_model_ready`` implementations ``(function, argnames, plugin description)``."""
    global _handle
    _impls[:] = impls
    if impls and _handle is None:
        _handle = _hooks.forward_pre.add(_on_forward_pre, False)
    elif not impls and _handle is not None:
        _handle.remove()
        _handle = None
        _seen.clear()


def _on_forward_pre(module: Any, args: tuple) -> None:
    try:
        if module in _seen:
            return None
    except TypeError:
        return None
    if _hooks._up(module) is not None:  # not outermost: its model fires (or fired) the hook
        return None
    for m in module.modules():
        with contextlib.suppress(TypeError):
            _seen.add(m)
    for fn, argnames, label in list(_impls):
        try:
            fn(*[module for _ in argnames])
        except Exception as e:
            e.add_note(f"raised in pyframe_model_ready of {label}")
            raise
    return None
