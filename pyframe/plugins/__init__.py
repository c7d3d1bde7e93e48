"""pyframe's plugins: discovery, configuration, run-time control. See ``docs/plugins.md``.

``list()``, ``get(name)``, ``enable(name)``, ``disable(name)``, ``disabled(*names)``, ``register(obj, name=None)``,
``configure(name, **settings)``, ``reload_config()``; ``Setting`` for plugin authors, and ``pyframe.plugins.testing``
(``activated(plugin, name)``, ``PackagingTests``) for their tests.
"""

from __future__ import annotations

import builtins as _builtins
import contextlib as _contextlib
import functools as _functools
import warnings as _warnings
from typing import Any

from pyframe import _hooks, _submodules
from pyframe.plugins.manager import ENTRY_POINT_GROUP, PluginError, PluginHandle, PluginInfo, PluginWarning
from pyframe.plugins.manager import PluginManager as _PluginManager
from pyframe.plugins.settings import Declaration, NamePatterns, PluginConfigError, Setting, declare
from pyframe.plugins.tracing import Explanation, Trace, explain, trace

__all__ = [
    "Setting", "PluginInfo", "PluginHandle", "PluginError", "PluginConfigError", "PluginWarning", "ENTRY_POINT_GROUP",
    "BUILTIN_PLUGINS", "list", "get", "enable", "disable", "disabled", "register", "configure", "reload_config",
    "effective_config", "activated", "report_header", "summary", "format_summary", "trace", "Trace", "explain",
    "Explanation", "qualified_name", "NamePatterns", "declare", "Declaration", "record_change",
]  # fmt: skip

# the documented names: ``pyframe.plugins.PluginConfigError`` in tracebacks, not the defining submodule's
for _cls in (PluginError, PluginWarning, PluginConfigError, PluginInfo, PluginHandle, Setting, NamePatterns,
             Declaration, Trace, Explanation):  # fmt: skip
    _cls.__module__ = __name__


def _short(fn):
    """A configuration error raised by a public function shows one frame of pyframe in its traceback (this
    function's), not the manager's internals."""

    @_functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (PluginConfigError, PluginError) as e:
            raise e.with_traceback(None) from e.__cause__ if e.__cause__ is not None else None

    return wrapper


def qualified_name(module: Any, name: str | None = None) -> str:
    """The dotted path of ``module`` (and of its member ``name``) from the outermost module it is attached to
    now, e.g. ``"transformer.h.0.attn.c_attn.weight"``. What a hook sees depends on when it runs (see
    docs/plugin-authoring.md, "Qualified names"): inside a registration hook of a module that is not attached yet
    only ``name``; in ``pyframe_module_module_registration(module, name, submodule)`` ``qualified_name(module,
    name)`` is the submodule's path as far as the tree is built; from ``pyframe_model_ready(model)`` on (the
    outermost module's first call) the full name."""
    return _hooks.qualified_name(module, name)


def record_change(plugin: str, module: Any, name: str, action: str, *, kind: str = "parameter", old: Any = None,
                  new: Any = None) -> None:  # fmt: skip
    """For a plugin that changes a member of ``module`` in another way than by returning a replacement from a
    registration hook (e.g. adds a parametrization): records it, so that ``explain(model)`` and ``trace()`` show
    it. ``old``/``new``: tensors (described by dtype, shape and requires_grad) or dicts describing them."""
    _hooks.record_change(
        plugin,
        module,
        name,
        kind,
        action,
        old if isinstance(old, dict) or old is None else _hooks._describe_value(old),
        new if isinstance(new, dict) or new is None else _hooks._describe_value(new),
    )


# Built-in plugins: (name, object) pairs registered with source "built-in".
from pyframe.plugins import builtin_parametrize as _builtin_parametrize  # noqa: E402

BUILTIN_PLUGINS: _builtins.list[tuple[str, Any]] = [("parametrize", _builtin_parametrize)]

_manager = _PluginManager(BUILTIN_PLUGINS, _hooks.REGISTRIES)  # the process's one plugin manager


def list() -> _builtins.list[PluginInfo]:  # noqa: A001
    """Every known plugin, enabled or not, in the order their hooks run."""
    return _manager.list()


@_short
def get(name: str) -> PluginInfo:
    """The record of one plugin (``nan_detector`` and ``pyframe-nan-detector`` also name ``nan-detector``)."""
    return _manager.get(name)


@_short
def enable(name: str) -> None:
    """Turns a plugin on for this process (beats every config file and variable); imports it if needed."""
    _manager.set_enabled(name, True, "enabled by pyframe.plugins.enable()")


@_short
def disable(name: str) -> None:
    """Turns a plugin off for this process: ``pyframe_unconfigure`` is called and its hooks stop running."""
    _manager.set_enabled(name, False, "disabled by pyframe.plugins.disable()")


def disabled(*names: str) -> _contextlib.AbstractContextManager[None]:
    """``with pyframe.plugins.disabled("nan-detector"): ...`` turns plugins off inside the block only."""
    return _manager.disabled(*names)


def activated(
    plugin: Any, name: str | None = None, *, exclusive: bool = True, **settings: Any
) -> _contextlib.AbstractContextManager[Any]:
    """``with activated(my_plugin, "my-plugin", level=2): ...``: inside the block ``plugin`` (a plugin object such as
    a module, or the name of a known plugin) is active with ``settings`` on top of its configured ones: registered
    under ``name`` if pyframe does not know it, enabled if it is known but off. With ``exclusive=True`` every other
    plugin except the built-in ones is off meanwhile. Afterwards the previous state comes back exactly: registration,
    ``enable``/``disable`` calls and ``configure`` settings, also those changed inside the block (a plugin that ends
    off or unregistered gets ``pyframe_unconfigure``). Yields the plugin object; blocks nest. Raises ``PluginError``
    if the plugin fails to load, register or configure, ``PluginConfigError`` for an unknown name or setting."""
    return _manager.activated(plugin, name, exclusive=exclusive, **settings)


@_short
def register(obj: Any, name: str | None = None) -> PluginHandle:
    """Registers an object (a module, an instance; a class is instantiated) with ``@pyframe.hookimpl``
    functions. Returns a handle whose ``remove()`` unregisters it."""
    return _manager.add(obj, name)


@_short
def configure(name: str, **settings: Any) -> None:
    """Sets a plugin's settings at run time (highest precedence), validated, delivered via ``pyframe_configure``."""
    _manager.configure(name, **settings)


@_short
def reload_config() -> None:
    """Reads config files and environment variables again, rediscovers entry points and reconfigures plugins.
    Run-time calls (``enable``, ``disable``, ``configure``, ``register``) are kept."""
    _manager.load()


def effective_config() -> dict[str, Any]:
    """The effective configuration and where each value came from (what ``pyframe config`` prints)."""
    return _manager.effective_config()


def report_header() -> str:
    """One line naming every active plugin with its version and settings (built-in ones left out), as pytest
    prints its plugins: ``plugins: grad-clipper-0.1.0 (mode='norm', max_norm=0.05), nan-detector-0.1.0 (...)``.
    ``plugins: none`` when no installed plugin is active."""
    parts = []
    for p in _recorded_set():
        settings = ", ".join(f"{k}={v!r}" for k, v in p["settings"].items())
        version = f"-{p['version']}" if p["version"] else ""
        parts.append(f"{p['name']}{version}" + (f" ({settings})" if settings else ""))
    return "plugins: " + (", ".join(parts) if parts else "none")


def summary() -> dict[str, dict[str, Any]]:
    """What each active plugin reports it did since it was configured (its ``pyframe_summary`` hook), by plugin
    name, e.g. ``{"grad-clipper": {"gradients clipped": 120, "gradients seen": 3000}}``. Plugins without the hook
    are left out; one that raises in it is reported as ``{"error": "..."}`` (a report must not end a run)."""
    out: dict[str, dict[str, Any]] = {}
    _manager.ensure_loaded()
    for info in _manager.list():
        rec = _manager.record_of(info.name)
        if not (rec.enabled and rec.registered) or _manager._hookimpl(rec, "pyframe_summary") is None:
            continue
        try:
            got = _manager.summary_of(rec)
        except Exception as e:  # noqa: BLE001
            out[info.name] = {"error": f"{type(e).__name__}: {e}"}
            continue
        if got is not None:
            out[info.name] = dict(got)
    return out


def format_summary(summary_: dict[str, dict[str, Any]] | None = None) -> str:
    """``summary()`` as the lines ``pyframe run`` prints at exit: ``plugin summary:`` then one line per plugin."""
    summary_ = summary() if summary_ is None else summary_
    if not summary_:
        return "plugin summary: (no active plugin reports)"
    lines = ["plugin summary:"]
    for name, counts in summary_.items():
        items = ", ".join(f"{k} {v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{k} {v}"
                          for k, v in counts.items())  # fmt: skip
        lines.append(f"  {name}: {items or '(nothing)'}")
    return "\n".join(lines)


def _change_hint(change: dict[str, Any]) -> str:
    """The advice an error note gives about a plugin's change: how to turn the plugin off, and the setting that
    would avoid the change when the plugin declares one (a ``dtype`` setting for a dtype change)."""
    name = change["plugin"]
    hint = f"; disable it (pyframe run -p no:{name}, or PYFRAME_DISABLE_PLUGINS={name})"
    rec = _manager._records.get(name)
    declared = (rec.declared or {}) if rec is not None else {}
    old, new = change.get("old") or {}, change.get("new") or {}
    if "dtype" in declared and old.get("dtype") != new.get("dtype"):
        return hint + f" or set {name}.dtype = {old.get('dtype')!r} (pyframe.toml [{name}] dtype)"
    return hint + f" or change its settings (pyframe config lists {name}.*)"


_hooks.change_hint = _change_hint


def _invoked_as_cli() -> bool:
    """True in the ``pyframe`` command (``pyframe ...`` or ``python -m pyframe ...``), which reports a config
    error itself instead of failing at ``import pyframe``."""
    import os
    import sys

    argv = getattr(sys, "orig_argv", [])
    as_module = any(a == "-m" and b == "pyframe" for a, b in zip(argv, argv[1:], strict=False))
    script = os.path.basename(sys.argv[0]) if sys.argv else ""  # the console script pip generates
    return as_module or script == "pyframe"


def _load_at_import() -> None:
    """Called by ``import pyframe``: reads the config (errors are fatal) and loads the enabled plugins."""
    from pyframe import serialization

    global _load_handle
    if _load_handle is None:
        _load_handle = serialization.register_metadata_hook("plugins", on_load=_on_load)
    _manager.after_sync = _update_save_hook
    try:
        _manager.load()
    except (PluginConfigError, PluginError) as e:  # the error, not the manager's frames (pyframe run prints it)
        raise e.with_traceback(None) from None
    import os

    if os.environ.get("PYFRAME_REPORT", "").strip().lower() in ("1", "true", "yes", "on") and not _invoked_as_cli():
        _report_at_exit()


def _report_at_exit() -> None:
    """PYFRAME_REPORT=1: the ``plugins:`` header now and the plugins' summary at exit, on stderr."""
    import atexit
    import sys

    print(report_header(), file=sys.stderr)
    atexit.register(lambda: print(format_summary(), file=sys.stderr))


# Checkpoints record the active plugin set (built-in plugins left out) under metadata["plugins"] while at least
# one such plugin is active (a process without plugins writes the same files as before); every load compares the
# record with the plugins active now and warns on a difference.
_load_handle = None
_save_handle = None


def _update_save_hook() -> None:
    global _save_handle
    active = any(r.enabled and r.registered and r.source != "built-in" for r in _manager.records())
    if active and _save_handle is None:
        from pyframe import serialization

        _save_handle = serialization.register_metadata_hook("plugins", on_save=_on_save)
    elif not active and _save_handle is not None:
        _save_handle.remove()
        _save_handle = None


def _recorded_set() -> _builtins.list[dict[str, Any]]:
    # built-in plugins ship with pyframe (the header's "writer" names its version): not recorded
    return [p for p in _manager.active_set() if p["source"] != "built-in"]


def _on_save() -> Any:
    return {"plugins": _recorded_set()}


def _on_load(value: Any, source: str) -> None:
    saved_list = value.get("plugins") if isinstance(value, dict) else None
    if not isinstance(saved_list, _builtins.list):
        saved_list = []  # saved with no plugin active (or before plugins were recorded)
    saved = {p.get("name"): p for p in saved_list if isinstance(p, dict)}
    now = {p["name"]: p for p in _recorded_set()}
    diffs = []
    for name in sorted(set(saved) | set(now), key=str):
        a, b = saved.get(name), now.get(name)
        # a plugin that declared it leaves numerics alone (a logger) differs harmlessly; an older record has no flag
        if not any(x.get("changes_numerics", True) for x in (a, b) if x is not None):
            continue
        if a is None:
            diffs.append(f"'{name}' is active now but was not when it was saved")
        elif b is None:
            diffs.append(f"'{name}' {a.get('version')} was active when it was saved but is not now")
        elif a.get("version") != b["version"]:
            diffs.append(f"'{name}' was version {a.get('version')}, now {b['version']}")
        elif a.get("settings") != b["settings"]:
            diffs.append(f"'{name}' settings were {a.get('settings')}, now {b['settings']}")
    if diffs:
        _warnings.warn(
            f"{source}: the pyframe plugins active now differ from those active when it was saved: "
            + "; ".join(diffs)
            + " (these plugins change numerics)",
            PluginWarning,
            stacklevel=3,
        )


# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
