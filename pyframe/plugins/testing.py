"""Helpers for testing pyframe plugins, as pytest's ``pytester`` is for pytest plugins (public API, see
``docs/plugin-authoring.md``).

- ``activated(plugin, name=None, *, exclusive=True, **settings)``: the plugin active inside a block, whatever the
  machine's configuration says, and pyframe's plugin state exactly as before afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pyframe.plugins as _plugins
from pyframe.plugins.manager import BUILT_IN, PluginError

__all__ = ["activated"]


@contextlib.contextmanager
def activated(plugin: Any, name: str | None = None, *, exclusive: bool = True, **settings: Any) -> Iterator[Any]:
    """``with activated(my_plugin, "my-plugin", level=2): ...``: inside the block ``plugin`` (a plugin object such as
    a module, or the name of a known plugin) is active with ``settings`` on top of its configured ones: registered
    under ``name`` if pyframe does not know it, enabled if it is known but off. With ``exclusive=True`` every other
    plugin except the built-in ones is off meanwhile. Afterwards the previous state comes back exactly: registration,
    ``enable``/``disable`` calls and ``configure`` settings, also those changed inside the block (a plugin that ends
    off or unregistered gets ``pyframe_unconfigure``). Yields the plugin object; blocks nest. Raises ``PluginError``
    if the plugin fails to load, register or configure, ``PluginConfigError`` for an unknown name or setting."""
    manager = _plugins._manager
    rec = manager.record_of(plugin, name)
    saved = manager.runtime_calls()
    handle = None
    try:
        if rec is None:  # not known at all: registered for the block only
            handle = manager.add(plugin, name)
            rec = manager.record_of(handle.name)
        states = {}
        if exclusive:
            off = (False, "disabled inside pyframe.plugins.activated()")
            states = {r.name: off for r in manager.records() if r is not rec and r.source != BUILT_IN}
        states[rec.name] = (True, "activated by pyframe.plugins.activated()")
        manager.set_states(states)
        if not rec.registered:
            raise PluginError(f"pyframe.plugins.activated(): {manager.describe(rec)} {rec.error or 'is not active'}")
        if not isinstance(plugin, str) and rec.obj is not plugin:
            raise ValueError(f"{manager.describe(rec)} loads {rec.obj!r}, not {plugin!r}")
        if settings:
            manager.configure(rec.name, **settings)
        yield rec.obj
    finally:
        if handle is not None:
            handle.remove()  # unregisters it (pyframe_unconfigure)
        manager.restore_runtime_calls(saved, reconfigure=[rec.name] if rec is not None else [])
