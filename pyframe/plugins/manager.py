"""The plugin manager: one pluggy ``PluginManager`` subclass holding pyframe's record per plugin and their order.

It discovers entry-point plugins (group ``pyframe``) from their metadata without importing them, decides which
are enabled (and records why), imports only the enabled ones, tolerates a broken plugin (a warning, or an error
under ``strict_plugins = true``), validates each plugin's settings against its ``pyframe_declare_settings()`` and
delivers them through ``pyframe_configure(settings)``. Whenever its plugin set or order changes it hands each global
module hook registry (``pyframe/_hooks.py``) the plugins' implementations in calling order; functions passed to
``pyframe.nn.register_module_*`` never enter pluggy, the registries keep them.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import inspect
import re
import types
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy

from pyframe import hookspecs
from pyframe._version import __version__
from pyframe.plugins import config as _config
from pyframe.plugins import tree as _tree
from pyframe.plugins.settings import _BOUNDS, Declaration, PluginConfigError, Setting, _type_name, did_you_mean
from pyframe.utils.hooks import RemovableHandle

__all__ = ["PluginInfo", "PluginHandle", "PluginError", "PluginWarning", "PluginManager", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "pyframe"
DISTRIBUTION = "pyframe-core"  # pyframe's distribution name ("pyframe" on PyPI is an unrelated package)
BUILT_IN, ENTRY_POINT, RUNTIME, MODULE = "built-in", "entry point", "runtime", "module"


class PluginError(RuntimeError):
    """A plugin failed to import or to set up while ``strict_plugins = true``."""


class PluginWarning(UserWarning):
    """A plugin failed to import or to set up; pyframe went on without it."""


@dataclass(frozen=True)
class PluginInfo:
    """What ``pyframe.plugins.list()`` / ``get()`` return about one plugin."""

    name: str
    version: str | None
    source: str  # "built-in" | "entry point" | "runtime"
    enabled: bool
    reason: str  # why it is enabled or not: which file, variable or call decided it
    hooks: tuple[str, ...]  # the hooks it implements (empty while it has never been imported)
    distribution: str | None
    error: str | None = None  # why it failed to import or set up, if it did
    settings: Mapping[str, Any] = field(default_factory=dict)  # its validated settings when enabled
    idle: bool = False  # enabled, but its settings make it inactive (``declare(active=...)``): no module hook runs


@dataclass
class _Record:
    name: str
    source: str
    distribution: str | None = None
    version: str | None = None
    entry_point: Any = None
    obj: Any = None
    loaded: bool = False
    registered: bool = False
    enabled: bool = False
    reason: str = ""
    error: str | None = None
    declared: dict[str, Setting] | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    setting_origins: dict[str, str] = field(default_factory=dict)
    setting_overridden: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # lower layers, for reports


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", str(name)).lower()


class PluginHandle(RemovableHandle):
    """Returned by ``pyframe.plugins.register``: ``remove()`` unregisters the plugin (also a context manager)."""

    __slots__ = ("name", "plugin", "_manager")

    def __init__(self, manager: PluginManager, name: str, obj: Any) -> None:
        super().__init__({})
        self.name, self.plugin, self._manager = name, obj, manager

    def remove(self) -> None:
        """Unregisters this plugin (what ``pyframe.plugins.register`` added)."""
        self._manager.remove(self.name, self.plugin)

    def __repr__(self) -> str:
        return f"<PluginHandle {self.name!r}>"


class PluginManager(pluggy.PluginManager):
    """``pyframe.plugins._manager`` is the process's one, feeding the global registries of ``pyframe._hooks``; a
    manager built with no ``registries`` feeds none. pluggy's ``register`` and ``unregister`` take plugin objects as
    in pluggy; ``add``/``remove`` are the run-time plugins of ``pyframe.plugins.register``."""

    def __init__(self, builtins: list[tuple[str, Any]] | None = None, registries: tuple = ()) -> None:
        super().__init__(hookspecs.PROJECT)
        self.add_hookspecs(hookspecs)
        self.registries = registries  # objects with ``specname`` and ``set_plugins(impls)``, see pyframe/_hooks.py
        self.builtins: list[tuple[str, Any]] = list(builtins or [])
        self._records: dict[str, _Record] = {}
        self._layers: list[_config.Layer] = []
        self._runtime_state: dict[str, tuple[bool, str]] = {}  # name -> (enabled, reason) from enable()/disable()
        self._runtime_settings: dict[str, dict[str, Any]] = {}
        self._order: list[str] = []
        self.loaded = False
        self.after_sync: Any = None  # called after every change of the plugin set
        self.command_line: _config.Layer | None = None  # pyframe run's -p / -o, see config.command_line_layer
        self._summary_base: dict[str, dict[str, Any]] = {}  # counters from before a disabled() block

    # ---- pluggy's registration (also reached through set_blocked): the registries follow every change ------

    def register(self, plugin: object, name: str | None = None) -> str | None:
        result = super().register(plugin, name)
        self._publish()
        return result

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        try:
            return super().unregister(plugin, name)
        finally:
            self._publish()

    def _publish(self) -> None:
        """Hands every module hook registry its plugin implementations in calling order: tryfirst, plain, trylast,
        each in plugin order (``order``, then by name). pluggy's wrappers cannot take part in a chain."""
        rank = {name: i for i, name in enumerate(self._order)}
        idle = {name for name, rec in self._records.items() if self.idle(rec)}

        def key(impl: Any) -> tuple:
            bucket = 0 if impl.tryfirst else 2 if impl.trylast else 1
            return bucket, rank.get(impl.plugin_name, len(rank)), impl.plugin_name

        for registry in self.registries:
            impls = getattr(self.hook, registry.specname).get_hookimpls()
            impls = sorted((i for i in impls if not (i.hookwrapper or i.wrapper or i.plugin_name in idle)), key=key)
            registry.set_plugins(
                [(i.function, i.argnames, self.describe_plugin(i.plugin), i.plugin_name) for i in impls]
            )
        if self.registries:
            ready = self.hook.pyframe_model_ready.get_hookimpls()
            impls = sorted((i for i in ready if i.plugin_name not in idle), key=key)
            _tree.set_ready_hooks([(i.function, i.argnames, self.describe_plugin(i.plugin)) for i in impls])

    # ---- configuration --------------------------------------------------------------------------------

    def _effective(self, key: str) -> tuple[Any, str, int]:
        for layer in reversed(self._layers):
            if key in layer.values:
                return layer.values[key], layer.origins[key], layer.rank
        return _config.DEFAULTS[key], "default", _config.RANK_DEFAULT

    def value(self, key: str) -> Any:
        return self._effective(key)[0]

    def resolve(self, name: str) -> str | None:
        """The plugin called ``name``; also accepts ``nan_detector`` or ``pyframe-nan-detector``."""
        if name in self._records:
            return name
        n = _norm(name)
        for rec in self._records.values():
            cands = {_norm(rec.name)}
            if rec.source == MODULE:  # module pyframe_output_scaler also answers to output-scaler
                cands.add(_norm(rec.name).removeprefix("pyframe-"))
            if rec.distribution and rec.source != BUILT_IN:  # "core" must not name a built-in plugin
                d = _norm(rec.distribution)
                cands |= {d, d.removeprefix("pyframe-")}
            if n in cands:
                return rec.name
        return None

    def _unknown(self, name: str) -> str:
        known = sorted(self._records)
        return f"unknown plugin {name!r}{did_you_mean(name, known)}; known plugins: {', '.join(known) or '(none)'}"

    # ---- discovery ------------------------------------------------------------------------------------

    def _discover(self) -> None:
        for name, obj in self.builtins:
            if name not in self._records:
                self._records[name] = _Record(name, BUILT_IN, DISTRIBUTION, __version__, obj=obj, loaded=True)
        found: dict[str, Any] = {}
        eps = sorted(_entry_points(), key=lambda e: (e.name, e.value))
        for ep in eps:
            if ep.name in found or (ep.name in self._records and self._records[ep.name].source != ENTRY_POINT):
                other = found.get(ep.name)
                where = other.dist.name if other is not None and other.dist else DISTRIBUTION
                _config.warn_user(
                    f"pyframe plugin name {ep.name!r} of distribution {_dist_name(ep)} is already used by {where}; "
                    "ignoring the second one",
                    PluginWarning,
                )
                continue
            found[ep.name] = ep
        for name in [n for n, r in self._records.items() if r.source == ENTRY_POINT and n not in found]:
            rec = self._records.pop(name)
            if rec.registered:
                self._unregister(rec)
        for name, ep in found.items():
            rec = self._records.get(name)
            if rec is None:
                rec = self._records[name] = _Record(name, ENTRY_POINT)
            rec.entry_point = ep
            rec.distribution = ep.dist.name if ep.dist else None
            rec.version = ep.dist.version if ep.dist else None

    # ---- the decision: enabled or not, and why ------------------------------------------------------------

    def _decide(self, rec: _Record) -> tuple[bool, str]:
        if rec.name in self._runtime_state:
            return self._runtime_state[rec.name]
        if rec.source == RUNTIME:
            return True, "registered at run time (pyframe.plugins.register())"
        cands: list[tuple[int, int, bool, str]] = []  # rank, tie-break, enabled, reason
        if rec.source == BUILT_IN:
            cands.append((0, 0, True, "built-in"))
        else:
            plugins, p_origin, p_rank = self._effective("plugins")
            autoload, a_origin, a_rank = self._effective("autoload")
            if plugins is not None:
                listed = any(self.resolve(n) == rec.name for n in plugins)
                what = "listed" if listed else "not listed"
                cands.append((p_rank, 1, listed, f"{what} in plugins: {p_origin}"))
            elif not autoload:
                cands.append((a_rank, 0, False, f"autoload is off: {a_origin}"))
            else:
                why = "autoload is on by default" if a_origin == "default" else f"autoload is on: {a_origin}"
                cands.append((a_rank, 0, True, f"installed; {why}"))
        for layer in self._layers:
            names = layer.values.get("disable_plugins") or []
            if any(self.resolve(n) == rec.name for n in names):
                cands.append((layer.rank, 2, False, f"in disable_plugins: {layer.origins['disable_plugins']}"))
            if any(self.resolve(n) == rec.name for n in layer.enable):
                cands.append((layer.rank, 3, True, f"enabled: {layer.source} (-p {rec.name})"))
        _, _, enabled, reason = max(cands, key=lambda c: (c[0], c[1]))
        return enabled, reason

    def _resolved_order(self) -> list[str]:
        first: list[str] = []
        for n in self.value("order"):
            r = self.resolve(n)
            if r is not None and r not in first:
                first.append(r)
        return first + sorted(n for n in self._records if n not in first)

    # ---- loading, registering, configuring -----------------------------------------------------------

    def describe(self, rec: _Record) -> str:
        if rec.source == BUILT_IN:
            return f"plugin '{rec.name}' (built-in, pyframe {rec.version})"
        if rec.source == RUNTIME:
            return f"plugin '{rec.name}' (registered at run time)"
        if rec.source == MODULE:
            return f"plugin '{rec.name}' (module named in plugins, not installed)"
        return f"plugin '{rec.name}' (distribution {rec.distribution} {rec.version})"

    def describe_plugin(self, plugin: Any) -> str:
        """``plugin 'x' (distribution pyframe-x 0.1.0)`` for a plugin object or name; used in error notes."""
        if isinstance(plugin, str):
            rec = self._records.get(plugin)
        else:
            rec = next((r for r in self._records.values() if r.obj is plugin and r.loaded), None)
            if rec is None:
                name = self.get_name(plugin) if plugin is not None else None
                rec = self._records.get(name) if name else None
                if rec is None:
                    return f"plugin {name or plugin!r}"
        return self.describe(rec) if rec is not None else f"plugin {plugin!r}"

    def _fail(self, rec: _Record, what: str, exc: BaseException) -> None:
        rec.error = f"{what}: {type(exc).__name__}: {exc}{_where(exc)}"
        rec.enabled, rec.reason = False, f"failed ({rec.error})"
        if rec.registered:
            with contextlib.suppress(Exception):
                self._unregister(rec, unconfigure=False)
        msg = f"pyframe {self.describe(rec)} {rec.error}"
        if self.value("strict_plugins"):
            raise PluginError(f"{msg} (strict_plugins = true: {self._effective('strict_plugins')[1]})") from exc
        location = _plugin_location(rec, exc)
        _config.warn_user(
            f"{msg}; the other plugins were loaded. Disable it with PYFRAME_DISABLE_PLUGINS={rec.name}, "
            "or set strict_plugins = true to make this an error",
            PluginWarning,
            path=location[0] if location else None,
            lineno=location[1] if location else None,
            caller_first=True,
        )

    def _hookimpl(self, rec: _Record, hookname: str):
        caller = getattr(self.hook, hookname, None)
        if caller is None:
            return None
        return next((i for i in caller.get_hookimpls() if i.plugin is rec.obj), None)

    def _call(self, rec: _Record, hookname: str, **kwargs: Any) -> Any:
        impl = self._hookimpl(rec, hookname)
        if impl is None:
            return None
        return impl.function(*[kwargs[a] for a in impl.argnames])

    def _load_and_register(self, rec: _Record) -> bool:
        """Imports (entry points only), registers and reads the declared settings. False on failure (warned)."""
        if not rec.loaded:
            try:
                obj = rec.entry_point.load()
                if getattr(getattr(obj, "__spec__", None), "_initializing", False):
                    raise ImportError(
                        f"module {obj.__name__!r} is still being imported: it imports pyframe at its top and was "
                        "imported before pyframe, so its hooks are not defined yet. Import pyframe first, or have "
                        "the plugin import pyframe inside its functions (pluggy.HookimplMarker('pyframe') gives "
                        "the hookimpl marker without importing pyframe)"
                    )
                if inspect.isclass(obj):
                    obj = obj()
            except Exception as e:
                self._fail(rec, "failed to import", e)
                return False
            rec.obj, rec.loaded = obj, True
        if not rec.registered:
            try:
                if self.is_registered(rec.obj):
                    raise ValueError("the same object is already registered as another plugin")
                self._check_hooks(rec.obj)
                self.register(rec.obj, name=rec.name)
                rec.registered = True
            except Exception as e:
                self._fail(rec, "failed to register", e)
                return False
        if rec.declared is None:
            try:
                declared = self._call(rec, "pyframe_declare_settings") or {}
                if not isinstance(declared, dict) or not all(
                    isinstance(k, str) and isinstance(v, Setting) for k, v in declared.items()
                ):
                    raise TypeError("pyframe_declare_settings must return {str: pyframe.plugins.Setting}")
            except Exception as e:
                self._fail(rec, "raised in pyframe_declare_settings", e)
                return False
            rec.declared = declared
        return True

    def _compute_settings(self, rec: _Record) -> None:
        declared = rec.declared or {}
        values = {k: s.default for k, s in declared.items()}
        origins = dict.fromkeys(declared, "default")
        overridden: dict[str, list[dict[str, Any]]] = {}

        def put(key: str, value: Any, where: str, origin: str) -> None:
            if key not in declared:
                allowed = ", ".join(declared) or "(this plugin declares no settings)"
                raise PluginConfigError(
                    f"{where}: unknown setting of {self.describe(rec)}{did_you_mean(key, declared)}; "
                    f"allowed keys: {allowed}"
                )
            value = declared[key].validate(value, where=where)
            if origins[key] != "default":
                overridden.setdefault(key, []).insert(0, {"value": values[key], "source": origins[key]})
            values[key], origins[key] = value, origin

        for layer in self._layers:
            for tname, table in layer.tables.items():
                if self.resolve(tname) != rec.name:
                    continue
                for key, value in table.items():
                    spelled = f"{layer.table_prefix}{tname}.{key}"
                    if layer.path is None:  # pyframe run -o plugin.key=value
                        where, origin = f"{layer.source}: -o {spelled}", f"{layer.source} (-o {spelled})"
                    else:
                        where, origin = f"{layer.path}: key '{spelled}'", f"{layer.path} ({spelled})"
                    put(key, value, where, origin)
        for key, value in self._runtime_settings.get(rec.name, {}).items():
            put(key, value, f"pyframe.plugins.configure({rec.name!r}, {key}=...)", "pyframe.plugins.configure()")
        rec.settings, rec.setting_origins, rec.setting_overridden = values, origins, overridden

    def _configure(self, rec: _Record) -> None:
        was_idle = self.idle(rec)
        self._compute_settings(rec)  # a config error propagates: always fatal
        try:
            self._call(rec, "pyframe_configure", settings=types.MappingProxyType(dict(rec.settings)))
        except Exception as e:
            self._fail(rec, "raised in pyframe_configure", e)
        if self.idle(rec) != was_idle:  # declare(active=...) turned with the settings: its hooks join or leave
            self._publish()

    def _unregister(self, rec: _Record, unconfigure: bool = True) -> None:
        if not rec.registered:
            return
        try:
            if unconfigure:
                self._call(rec, "pyframe_unconfigure")
        finally:
            with contextlib.suppress(ValueError):
                self.unregister(rec.obj, name=rec.name)
            rec.registered = False

    # ---- the whole cycle -------------------------------------------------------------------------------

    def load(self) -> None:
        """Reads the configuration, discovers plugins and brings every plugin to its decided state."""
        self._summary_base.clear()
        layers = _config.read_layers()
        if self.command_line is not None:
            layers.append(self.command_line)
        self._layers = layers
        for name in [n for n, r in self._records.items() if r.source == MODULE]:  # named again below, or gone
            self._unregister(self._records.pop(name))
        self._discover()
        cli = self.command_line
        named = [(n, self._effective("plugins")[1]) for n in self.value("plugins") or []]
        named += [(n, f"{cli.source} (-p {n})") for n in (cli.enable if cli is not None else [])]
        for n, origin in named:
            if self.resolve(n) is None and _importable(n):  # as pytest's -p: a module named outright
                self._records[n] = _Record(n, MODULE, entry_point=_ModuleEntryPoint(n))
            if self.resolve(n) is None:
                raise PluginConfigError(f"{origin}: {self._unknown(n)}")
        for layer in self._layers:  # every layer's disable_plugins applies, so each is checked with its origin
            for n in layer.values.get("disable_plugins") or []:
                if self.resolve(n) is None:
                    raise PluginConfigError(f"{layer.origins['disable_plugins']}: {self._unknown(n)}")
        order_layer = next((la for la in reversed(self._layers) if "order" in la.values), None)
        for n in self.value("order"):
            if self.resolve(n) is None:
                path = order_layer.path if order_layer is not None else None
                _config.warn_user(f"{self._effective('order')[1]}: {self._unknown(n)}", PluginWarning, path=path)
        for layer in self._layers:
            for tname in layer.tables:
                if self.resolve(tname) is None and layer.path is None:
                    raise PluginConfigError(f"{layer.source}: -o {tname}.*: {self._unknown(tname)}")
                if self.resolve(tname) is None:
                    _config.warn_user(
                        f"{layer.path}: table [{layer.table_prefix}{tname}]: {self._unknown(tname)}; its settings "
                        "are not used",
                        PluginWarning,
                        path=layer.path,
                        table=f"{layer.table_prefix}{tname}",
                    )
        self.loaded = True
        self.sync(reconfigure=True)

    def sync(self, reconfigure: bool = False) -> None:
        """Brings every plugin to its decided state (after a run-time call) and applies the order."""
        order = self._resolved_order()
        for name in order:
            rec = self._records[name]
            enabled, reason = self._decide(rec)
            if not enabled:
                rec.enabled, rec.reason = False, reason
                self._unregister(rec)
                continue
            was = rec.registered
            if rec.error is not None and not reconfigure and rec.name not in self._runtime_state:
                continue  # failed before; retried on reload_config() or enable()
            rec.error = None
            rec.enabled, rec.reason = True, reason
            if not self._load_and_register(rec):
                continue
            if reconfigure or not was:
                self._configure(rec)
        self._order = order
        self._publish()
        if self.after_sync is not None:
            self.after_sync()

    def ensure_loaded(self) -> None:
        if not self.loaded:
            self.load()

    # ---- run-time calls ----------------------------------------------------------------------------------

    def _require(self, name: str) -> _Record:
        self.ensure_loaded()
        resolved = self.resolve(name)
        if resolved is None:
            raise PluginConfigError(self._unknown(name))
        return self._records[resolved]

    def set_enabled(self, name: str, enabled: bool, reason: str) -> None:
        self.set_states({name: (enabled, reason)})

    def set_states(self, states: Mapping[str, tuple[bool, str]]) -> None:
        """Run-time decisions ``{name: (enabled, reason)}`` (they beat every file and variable), then one sync;
        enabling a plugin that failed tries it again."""
        for name, (enabled, reason) in states.items():
            rec = self._require(name)
            self._runtime_state[rec.name] = (enabled, reason)
            if enabled:
                rec.error = None
        self.sync()

    @contextlib.contextmanager
    def disabled(self, *names: str) -> Iterator[None]:
        recs = [self._require(n) for n in names]
        saved = {r.name: self._runtime_state.get(r.name) for r in recs}
        for r in recs:
            self._pause_summary(r)
            self._runtime_state[r.name] = (False, "disabled inside pyframe.plugins.disabled()")
        self.sync()
        try:
            yield
        finally:
            for name, state in saved.items():
                if state is None:
                    self._runtime_state.pop(name, None)
                else:
                    self._runtime_state[name] = state
            self.sync()

    @contextlib.contextmanager
    def activated(
        self, plugin: Any, name: str | None = None, *, exclusive: bool = True, **settings: Any
    ) -> Iterator[Any]:
        """``pyframe.plugins.activated``: ``plugin`` active inside the block, the previous state exactly after."""
        rec = self.record_of(plugin, name)
        saved = self.runtime_calls()
        handle = None
        try:
            if rec is None:  # not known at all: registered for the block only
                handle = self.add(plugin, name)
                rec = self.record_of(handle.name)
            states = {}
            if exclusive:
                off = (False, "disabled inside pyframe.plugins.activated()")
                states = {r.name: off for r in self.records() if r is not rec and r.source != BUILT_IN}
            states[rec.name] = (True, "activated by pyframe.plugins.activated()")
            self.set_states(states)
            if not rec.registered:
                raise PluginError(f"pyframe.plugins.activated(): {self.describe(rec)} {rec.error or 'is not active'}")
            if not isinstance(plugin, str) and rec.obj is not plugin:
                raise ValueError(f"{self.describe(rec)} loads {rec.obj!r}, not {plugin!r}")
            if settings:
                self.configure(rec.name, **settings)
            yield rec.obj
        finally:
            if handle is not None:
                handle.remove()  # unregisters it (pyframe_unconfigure)
            self.restore_runtime_calls(saved, reconfigure=[rec.name] if rec is not None else [])

    def _pause_summary(self, rec: _Record) -> None:
        """Keeps what a plugin's ``pyframe_summary`` counted so far: a ``disabled()`` block unconfigures it and its
        re-configuration at the block's end restarts its counters, which must not lose the run's counts."""
        if not rec.registered or self._hookimpl(rec, "pyframe_summary") is None:
            return
        try:
            now = self._call(rec, "pyframe_summary") or {}
        except Exception:  # noqa: BLE001 - reported by summary() itself
            return
        self._summary_base[rec.name] = add_counts(self._summary_base.get(rec.name, {}), dict(now))

    def summary_of(self, rec: _Record) -> dict[str, Any] | None:
        """The plugin's ``pyframe_summary`` plus what it counted before ``disabled()`` blocks."""
        got = self._call(rec, "pyframe_summary")
        base = self._summary_base.get(rec.name)
        if got is None:
            return dict(base) if base else None
        return add_counts(base or {}, dict(got))

    def record_of(self, plugin: Any, name: str | None = None) -> _Record | None:
        """The record of ``plugin``: the name of a known plugin, or an object (found by identity, else by ``name``
        or its ``__name__``); None for an object pyframe does not know. A ``name`` naming another plugin, or a
        different object known under that name, is a ValueError."""
        self.ensure_loaded()
        if isinstance(plugin, str):
            rec = self._require(plugin)
            if name is not None and self.resolve(name) != rec.name:
                raise ValueError(f"activated({plugin!r}, {name!r}): the two names are different plugins")
            return rec
        rec = next((r for r in self._records.values() if r.loaded and r.obj is plugin), None)
        if rec is not None:
            if name is not None and self.resolve(name) != rec.name:
                raise ValueError(f"{plugin!r} is already known as plugin {rec.name!r}, not {name!r}")
            return rec
        default = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        resolved = self.resolve(default) if isinstance(default, str) else None
        rec = self._records[resolved] if resolved is not None else None
        if rec is not None and rec.loaded and rec.obj is not plugin:
            raise ValueError(f"a different object is already known as {self.describe(rec)}")
        return rec

    def runtime_calls(self) -> tuple[dict, dict]:
        """A copy of what run-time ``enable``/``disable``/``configure`` calls decided, for ``restore_runtime_calls``."""
        return dict(self._runtime_state), {k: dict(v) for k, v in self._runtime_settings.items()}

    def restore_runtime_calls(self, saved: tuple[dict, dict], reconfigure: Iterable[str] = ()) -> None:
        """Puts back what ``runtime_calls()`` returned; plugins whose run-time settings differ (and those named in
        ``reconfigure``) that are still on get their previous settings through ``pyframe_configure`` again."""
        state, settings = saved
        changed = {n for n in {*settings, *self._runtime_settings} if settings.get(n) != self._runtime_settings.get(n)}
        self._runtime_state, self._runtime_settings = dict(state), {k: dict(v) for k, v in settings.items()}
        self.sync()
        for n in changed.union(reconfigure):
            rec = self._records.get(n)
            if rec is not None and rec.registered:
                self._configure(rec)

    def _check_hooks(self, obj: Any) -> None:
        """Refuse what cannot be a plugin: a value such as ``42``, an object implementing no hook, and a
        ``pyframe_*`` function (marked ``@hookimpl`` or not) that matches no hookspec, i.e. a misspelt
        hook name that would otherwise never be called."""
        if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes, list, tuple, dict, set)):
            raise TypeError(
                f"a plugin is a module, class or object with @pyframe.hookimpl functions, got {type(obj).__name__} "
                f"{obj!r}"
            )
        known = [n for n, c in vars(self.hook).items() if c.has_spec()]
        names = []
        for attr in dir(obj):
            try:
                value = getattr(obj, attr)
            except Exception:  # a property that raises is not a hook
                continue
            marked = self.parse_hookimpl_opts(obj, attr) is not None
            if marked or (attr.startswith("pyframe_") and callable(value)):
                names.append(attr)
        unknown = [n for n in names if n not in known]
        if unknown:
            where = [_code_location(getattr(obj, u, None)) for u in unknown]
            err = ValueError(
                f"{obj!r} implements unknown hook(s) "
                + ", ".join(
                    f"{u!r}{did_you_mean(u, known)}" + (f" (at {w[0]}:{w[1]})" if w else "")
                    for u, w in zip(unknown, where, strict=True)
                )
                + "; hooks are named as in pyframe.hookspecs"
            )
            err._pyframe_location = next((w for w in where if w), None)  # type: ignore[attr-defined]
            raise err
        if not names:
            raise TypeError(f"{obj!r} implements no pyframe hook; mark its hook functions with @pyframe.hookimpl")

    def add(self, obj: Any, name: str | None = None) -> PluginHandle:
        """A run-time plugin (``pyframe.plugins.register``)."""
        self.ensure_loaded()
        if inspect.isclass(obj):
            obj = obj()
        self._check_hooks(obj)
        if name is None:
            name = getattr(obj, "__name__", None) or type(obj).__name__
        if not isinstance(name, str) or not name:
            raise TypeError(f"plugin name must be a non-empty str, got {name!r}")
        if name in self._records:
            raise ValueError(f"a plugin named {name!r} is already known ({self.describe(self._records[name])})")
        if self.is_registered(obj):
            raise ValueError(f"{obj!r} is already registered as plugin {self.get_name(obj)!r}")
        rec = self._records[name] = _Record(
            name, RUNTIME, version=getattr(obj, "__version__", None), obj=obj, loaded=True
        )
        try:
            self.sync()
        except BaseException:
            self._unregister(rec)
            self._records.pop(name, None)
            raise
        return PluginHandle(self, name, obj)

    def remove(self, name: str, obj: Any = None) -> None:
        """Forgets the run-time plugin ``name`` (only if it is ``obj``, when given)."""
        rec = self._records.get(name)
        if rec is None or (obj is not None and rec.obj is not obj):
            return
        self._unregister(rec)
        del self._records[name]
        self._runtime_state.pop(name, None)
        self._runtime_settings.pop(name, None)
        self.sync()

    def configure(self, name: str, **settings: Any) -> None:
        rec = self._require(name)
        self._summary_base.pop(rec.name, None)  # new settings: the counters restart
        if rec.declared is not None:  # validate now, so a bad call fails at the call
            for key, value in settings.items():
                if key not in rec.declared:
                    raise PluginConfigError(
                        f"pyframe.plugins.configure({rec.name!r}, {key}=...): unknown setting of "
                        f"{self.describe(rec)}{did_you_mean(key, rec.declared)}; "
                        f"allowed keys: {', '.join(rec.declared) or '(none)'}"
                    )
                rec.declared[key].validate(value, where=f"pyframe.plugins.configure({rec.name!r}, {key}=...)")
        self._runtime_settings.setdefault(rec.name, {}).update(settings)
        if rec.registered:
            self._configure(rec)

    def reset(self) -> None:
        """Forgets run-time calls and run-time plugins, then reloads (for tests)."""
        for name in [n for n, r in self._records.items() if r.source == RUNTIME]:
            self._unregister(self._records.pop(name))
        self._runtime_state.clear()
        self._runtime_settings.clear()
        self.load()

    # ---- reports -----------------------------------------------------------------------------------------

    def info(self, rec: _Record) -> PluginInfo:
        hooks: tuple[str, ...] = ()
        if rec.loaded and rec.obj is not None:
            if rec.registered:
                hooks = tuple(sorted(c.name for c in self.get_hookcallers(rec.obj) or []))
            else:
                hooks = tuple(
                    sorted(n for n in dir(rec.obj) if n.startswith("pyframe_") and callable(getattr(rec.obj, n, None)))
                )
        return PluginInfo(
            name=rec.name,
            version=rec.version,
            source=rec.source,
            enabled=rec.enabled,
            reason=rec.reason,
            hooks=hooks,
            distribution=rec.distribution,
            error=rec.error,
            settings=types.MappingProxyType(dict(rec.settings)) if rec.enabled else types.MappingProxyType({}),
            idle=rec.enabled and self.idle(rec),
        )

    def records(self) -> list[_Record]:
        return list(self._records.values())

    def list(self) -> list[PluginInfo]:
        self.ensure_loaded()
        return [self.info(self._records[n]) for n in self._resolved_order() if n in self._records]

    def get(self, name: str) -> PluginInfo:
        return self.info(self._require(name))

    def effective_config(self) -> dict[str, Any]:
        """``{"files": [...], "values": {key: {"value", "source", "help", "overridden", "type", "default",
        "limits"}}}``; plugin settings as ``plugin.key``, with ``"plugin_enabled"``. ``overridden`` lists the lower
        layers that also set the key; ``disable_plugins`` merges every layer (all of them apply), so its value is
        their union and its source names each. A plugin that is disabled (or failed) was never imported, so its
        declared settings are unknown: the keys its tables set are listed with ``type``, ``default`` and ``limits``
        None, unvalidated."""
        self.ensure_loaded()
        values: dict[str, dict[str, Any]] = {}
        for key in _config.DEFAULTS:
            value, origin, _ = self._effective(key)
            setters = [layer for layer in self._layers if key in layer.values and layer.rank > _config.RANK_DEFAULT]
            entry = {"value": value, "source": origin, "help": _config.TOP_LEVEL[key].help, "overridden": []}
            entry.update(_described(_config.TOP_LEVEL[key], default=_config.DEFAULTS[key]))
            if key == "disable_plugins" and len(setters) > 1:
                merged = [n for layer in setters for n in layer.values[key]]
                entry["value"] = list(dict.fromkeys(merged))
                entry["source"] = "; ".join(layer.origins[key] for layer in setters)
            else:
                entry["overridden"] = [
                    {"value": layer.values[key], "source": layer.origins[key]} for layer in reversed(setters[:-1])
                ]
            values[key] = entry
        for name in self._resolved_order():
            rec = self._records[name]
            if rec.enabled and rec.error is None:
                declared = rec.declared or {}
                for key, value in rec.settings.items():
                    values[f"{name}.{key}"] = {
                        "value": value,
                        "source": rec.setting_origins.get(key, "default"),
                        "help": getattr(declared.get(key), "help", ""),
                        "overridden": list(rec.setting_overridden.get(key, [])),
                        **_described(declared.get(key)),
                        "plugin_enabled": True,
                    }
                continue
            for layer in self._layers:  # lowest rank first: a later layer overrides
                for tname, table in layer.tables.items():
                    if self.resolve(tname) != name:
                        continue
                    for key, value in table.items():
                        spelled = f"{layer.table_prefix}{tname}.{key}"
                        entry = values.get(f"{name}.{key}")
                        below = (
                            [{"value": entry["value"], "source": entry["source"]}, *entry["overridden"]]
                            if entry
                            else []
                        )
                        values[f"{name}.{key}"] = {
                            "value": value,
                            "source": f"{layer.path} ({spelled})" if layer.path else f"{layer.source} (-o {spelled})",
                            "help": "",
                            "overridden": below,
                            **_described(None),
                            "plugin_enabled": False,
                        }
        files = [str(layer.path) for layer in self._layers if layer.path is not None]
        return {"files": files, "values": values}

    def idle(self, rec: _Record) -> bool:
        """Whether the plugin is registered but declared itself inactive under its current settings
        (``declare(active=...)``); its module hooks are then left out of the registries."""
        declared = rec.declared
        if not rec.registered or not isinstance(declared, Declaration):
            return False
        try:
            return not declared.is_active(types.MappingProxyType(dict(rec.settings)))
        except Exception:  # noqa: BLE001 - a broken flag function: the plugin stays active
            return False

    def changes_numerics(self, rec: _Record) -> bool:
        """Whether the plugin declared that it changes numerics under its current settings (True when it did not
        say: a plain dict from ``pyframe_declare_settings``)."""
        declared = rec.declared
        if not isinstance(declared, Declaration):
            return True
        try:
            return declared.numerics(types.MappingProxyType(dict(rec.settings)))
        except Exception:  # noqa: BLE001 - a broken flag function: assume it does
            return True

    def active_set(self) -> list[dict[str, Any]]:
        return [
            {
                "name": i.name,
                "version": i.version,
                "source": i.source,
                "settings": dict(i.settings),
                "changes_numerics": self.changes_numerics(self._records[i.name]),
            }
            for i in self.list()
            if i.enabled
        ]


def _described(setting: Setting | None, **override: Any) -> dict[str, Any]:
    """A setting's type, default and limits (choices, bounds) for reports; None where it is not known."""
    if setting is None:
        return {"type": None, "default": None, "limits": None}
    choices = getattr(setting, "choices", None)
    if choices is not None:
        limits = "one of " + ", ".join(repr(c) for c in choices)
    else:
        bounds = [(op, getattr(setting, k, None)) for k, op, _ in _BOUNDS]
        limits = " and ".join(f"{op} {bound!r}" for op, bound in bounds if bound is not None)
    kind = "list" if setting.type is list else _type_name(setting.type)
    return {"type": kind, "default": setting.default, "limits": limits or None, **override}


def add_counts(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two ``pyframe_summary`` results added key by key (numbers add; anything else: the newer value)."""
    out = dict(a)
    for k, v in b.items():
        old = out.get(k)
        num = (int, float)
        both = isinstance(v, num) and isinstance(old, num) and not isinstance(v, bool) and not isinstance(old, bool)
        out[k] = old + v if both else v
    return out


def _where(exc: BaseException) -> str:
    """`` (at file:line)`` of the innermost frame that raised ``exc`` outside the import machinery, or ""."""
    if isinstance(exc, SyntaxError) and exc.filename:
        return ""  # its message already names the file and line
    import traceback

    if getattr(exc, "_pyframe_location", None) is not None:
        return ""  # its message already names the file and line
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith("<frozen") and not f.filename.startswith(_PACKAGE)
    ]
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


_PACKAGE = str(__import__("pathlib").Path(__file__).resolve().parents[1])  # pyframe/


def _code_location(fn: Any) -> tuple[str, int] | None:
    code = getattr(inspect.unwrap(fn), "__code__", None) if callable(fn) else None
    return (code.co_filename, code.co_firstlineno) if code is not None else None


def _plugin_location(rec: _Record, exc: BaseException) -> tuple[Any, int] | None:
    """Where a warning about a failed plugin points: the line of the plugin that raised (outside pyframe), the
    misspelt hook, or the plugin's file; None when none is known."""
    import traceback
    from pathlib import Path

    loc = getattr(exc, "_pyframe_location", None)
    if loc is not None:
        return Path(loc[0]), loc[1]
    if isinstance(exc, SyntaxError) and exc.filename:
        return Path(exc.filename), exc.lineno or 1
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith("<") and not f.filename.startswith(_PACKAGE)
    ]
    if frames:
        return Path(frames[-1].filename), frames[-1].lineno or 1
    obj = rec.obj
    path = getattr(obj, "__file__", None) if obj is not None else None
    if path is None and obj is not None:
        with contextlib.suppress(TypeError, OSError):
            path = inspect.getsourcefile(obj if inspect.ismodule(obj) or inspect.isclass(obj) else type(obj))
    if path is None and rec.entry_point is not None:
        import importlib.util

        with contextlib.suppress(Exception):
            spec = importlib.util.find_spec(str(rec.entry_point.value).split(":")[0])
            path = spec.origin if spec is not None else None
    return (Path(path), 1) if path else None


def _importable(name: str) -> bool:
    """True when ``name`` is a module that can be imported (a dotted name, found without importing it)."""
    import importlib.util

    if not re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", name):
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class _ModuleEntryPoint:
    """Stands in for an entry point when ``plugins`` / ``PYFRAME_PLUGINS`` names an importable module outright."""

    dist = None

    def __init__(self, module: str) -> None:
        self.name = self.value = module

    def load(self) -> Any:
        import importlib

        return importlib.import_module(self.value)


def _entry_points() -> list:
    """The installed entry points of group ``pyframe`` (a function, so tests can narrow it)."""
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _dist_name(ep: Any) -> str:
    return f"{ep.dist.name} {ep.dist.version}" if getattr(ep, "dist", None) else "(unknown distribution)"
