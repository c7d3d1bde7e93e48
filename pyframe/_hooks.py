"""The eight global module hook registries, on one pluggy plugin manager.

A function passed to ``pyframe.nn.register_module_*`` is wrapped into a small plugin object and
registered into :data:`plugin_manager`, so it lands in the same pluggy hook as a plugin's
``@pyframe.hookimpl``. pluggy calls implementations newest first and cannot chain results, so
the registries never call the pluggy hook: each keeps its own ordered snapshot of the
implementations (plugins first, in :func:`set_plugin_order`'s order, then functions in
registration order), recomputed whenever the plugin manager changes, plus a cached truthiness
flag that the hot paths test before touching anything else.

``Module`` reads them through two objects: :data:`registration_chain` (``run(kind, module,
name, value)``) and :data:`call_hooks` (snapshots for ``Module.__call__``), see
``pyframe/nn/modules/module.py``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

import pluggy

from pyframe import hookspecs
from pyframe.nn.parameter import Parameter
from pyframe.tensor import Tensor
from pyframe.utils.hooks import RemovableHandle

__all__ = [
    "BLOCK", "plugin_manager", "set_plugin_order", "set_plugin_describer", "describe_plugin", "Registry",
    "parameter_registration", "buffer_registration", "module_registration", "forward_pre", "forward",
    "full_backward_pre", "full_backward", "registration_chain", "call_hooks", "add_listener",
]  # fmt: skip


class _Block:
    """``pyframe.nn.BLOCK``: what a registration hook returns to block a registration."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "pyframe.nn.BLOCK"

    def __reduce__(self):
        return "BLOCK"


BLOCK = _Block()


# ---- the plugin manager ---------------------------------------------------------------------------


class _PluginManager(pluggy.PluginManager):
    """pluggy's manager; every register/unregister (also through ``set_blocked`` and
    ``load_setuptools_entrypoints``) refreshes the registries' snapshots."""

    def register(self, plugin: object, name: str | None = None) -> str | None:
        result = super().register(plugin, name)
        _refresh()
        return result

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        try:
            return super().unregister(plugin, name)
        finally:
            _refresh()


plugin_manager = _PluginManager(hookspecs.PROJECT)
plugin_manager.add_hookspecs(hookspecs)

_plugin_order: tuple = ()
_describer: Callable[[object], str] | None = None
_listeners: list = []


def set_plugin_order(names: Iterable[str]) -> None:
    """Plugins named here run first, in this order; the rest follow by name. Functions passed
    to ``register_module_*`` always run after every plugin, in registration order."""
    global _plugin_order
    _plugin_order = tuple(names)
    _refresh()


def set_plugin_describer(fn: Callable[[object], str] | None) -> None:
    """``fn(plugin_obj) -> str`` names a plugin in error notes (e.g. with its distribution and
    version); None restores the default (the registered name)."""
    global _describer
    _describer = fn


def describe_plugin(plugin: object) -> str:
    if _describer is not None:
        try:
            return _describer(plugin)
        except Exception:  # noqa: BLE001 - a broken describer must not hide the hook's error
            pass
    return repr(plugin_manager.get_name(plugin) or plugin)


def add_listener(fn: Callable[[], None]) -> None:
    """``fn()`` is called after every change of any registry (``Module`` keeps its global-hooks flag so)."""
    _listeners.append(fn)
    fn()


# ---- function hooks as plugins ---------------------------------------------------------------------

_seq = itertools.count()


class _FunctionPlugin:
    """The plugin object a function passed to ``register_module_*`` becomes. ``entry`` is what
    the registry's snapshot holds for it (the function itself and its calling mode)."""

    def __init__(self, specname: str, wrapper: Callable, hook: Callable, mode: Any):
        self.seq = next(_seq)
        self.hook = hook
        self.mode = mode
        setattr(self, specname, hookspecs.hookimpl(wrapper))


class _Handle(RemovableHandle):
    """Unregisters a function hook's plugin; removing twice is harmless."""

    __slots__ = ("_plugin",)

    def __init__(self, plugin: _FunctionPlugin):
        super().__init__({})
        self._plugin = plugin

    def remove(self) -> None:
        plugin, self._plugin = self._plugin, None
        if plugin is not None and plugin_manager.is_registered(plugin):
            plugin_manager.unregister(plugin)


def _describe_function(fn: Callable) -> str:
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    module = getattr(fn, "__module__", None) or type(fn).__module__
    return f"hook function {qualname} (module {module})"


class _Source:
    """Who an implementation belongs to, for error notes."""

    __slots__ = ("fn", "plugin")

    def __init__(self, fn: Callable, plugin: object | None):
        self.fn, self.plugin = fn, plugin

    def describe(self) -> str:
        if self.plugin is None:
            return _describe_function(self.fn)
        return f"plugin {describe_plugin(self.plugin)} ({_describe_function(self.fn)})"


def _note(exc: BaseException, src: _Source, what: str) -> None:
    """Name the hook once: a re-entering hook (one that registers or calls a module) passes the
    same exception up through every one of its frames, and a note per frame buried the message."""
    note = f"raised in the {what} of {src.describe()}"
    if note not in getattr(exc, "__notes__", ()):
        exc.add_note(note)


# ---- the registries -----------------------------------------------------------------------------------


class Registry:
    """One hook kind bound to its hookspec: an ordered snapshot ``entries`` of ``(call, mode,
    source)``, where ``call`` takes the spec's arguments positionally (``mode`` None) or is a
    function hook called the torch way (``mode`` its options), and ``bool(registry)`` is the
    cached "any implementation?" flag."""

    def __init__(self, specname: str, what: str):
        self.specname = specname
        self.what = what
        self.caller = getattr(plugin_manager.hook, specname)
        self.argnames: tuple = self.caller.spec.argnames
        self.entries: tuple = ()
        self.active = False

    def __bool__(self) -> bool:
        return self.active

    def refresh(self) -> None:
        plugins, functions = [], []
        for impl in self.caller.get_hookimpls():
            if isinstance(impl.plugin, _FunctionPlugin):
                functions.append(impl.plugin)
            elif not (impl.hookwrapper or impl.wrapper):  # wrappers cannot take part in a chain
                plugins.append(impl)
        order = {name: i for i, name in enumerate(_plugin_order)}

        def key(impl):
            bucket = 0 if impl.tryfirst else 2 if impl.trylast else 1
            return (bucket, order.get(impl.plugin_name, len(order)), impl.plugin_name)

        entries = [
            (self._positional(impl), None, _Source(impl.function, impl.plugin)) for impl in sorted(plugins, key=key)
        ]
        entries += [(p.hook, p.mode, _Source(p.hook, None)) for p in sorted(functions, key=lambda p: p.seq)]
        self.entries = tuple(entries)
        self.active = bool(entries)

    def _positional(self, impl) -> Callable:
        fn, names = impl.function, tuple(impl.argnames)
        if names == self.argnames:
            return fn
        idx = [self.argnames.index(n) for n in names]
        return lambda *a: fn(*[a[i] for i in idx])

    def _add(self, wrapper: Callable, hook: Callable, mode: Any) -> RemovableHandle:
        if not callable(hook):
            raise TypeError(f"{self.what} must be callable, got {type(hook).__name__}")
        plugin = _FunctionPlugin(self.specname, wrapper, hook, mode)
        plugin_manager.register(plugin, name=f"{self.specname}:{plugin.seq}:{getattr(hook, '__qualname__', '?')}")
        return _Handle(plugin)


class RegistrationRegistry(Registry):
    """Parameter, buffer or submodule registration: ``run_chain`` folds the hooks over the value."""

    def __init__(self, specname: str, kind: str):
        super().__init__(specname, f"{kind} registration hook")
        self.kind = kind

    def register(self, hook: Callable) -> RemovableHandle:
        def wrapper(module, name, value):
            return hook(module, name, value)

        return self._add(_rename(wrapper, self.argnames), hook, True)

    def run_chain(self, module: Any, name: str, value: Any) -> Any:
        """None keeps, a value replaces (the next hook sees it), BLOCK ends the chain."""
        for call, _mode, src in self.entries:
            try:
                out = call(module, name, value)
            except Exception as e:
                _note(e, src, self.what)
                raise
            if out is None:
                continue
            if out is BLOCK:
                return BLOCK
            value = self._check(out, src, module, name)
        return value

    def _check(self, out: Any, src: _Source, module: Any, name: str) -> Any:
        kind = self.kind
        if kind == "parameter":
            if isinstance(out, Parameter):
                return out
            if isinstance(out, Tensor):
                return Parameter(out.detach(), out.requires_grad)
            expected = "a pyframe.nn.Parameter or pyframe.Tensor"
        elif kind == "buffer":
            if isinstance(out, Tensor):
                return out
            expected = "a pyframe.Tensor"
        else:
            from pyframe.nn.modules.module import Module

            if isinstance(out, Module):
                return out
            expected = "a pyframe.nn.Module"
        raise TypeError(
            f"{src.describe()} returned {_typename(out)} for {kind} '{name}' of {type(module).__name__}; "
            f"a {kind} registration hook must return None (keep), {expected}, or pyframe.nn.BLOCK"
        )


def _typename(obj: Any) -> str:
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _rename(fn: Callable, argnames: tuple) -> Callable:
    """``fn`` with its positional parameters named ``argnames`` (pluggy matches by name)."""
    code = fn.__code__
    fn.__code__ = code.replace(co_varnames=tuple(argnames) + code.co_varnames[len(argnames) :])
    return fn


parameter_registration = RegistrationRegistry("pyframe_module_parameter_registration", "parameter")
buffer_registration = RegistrationRegistry("pyframe_module_buffer_registration", "buffer")
module_registration = RegistrationRegistry("pyframe_module_module_registration", "module")


class ForwardPreRegistry(Registry):
    """Entries' ``mode``: None (a plugin: ``(module, args, kwargs)`` returns new args or
    ``(args, kwargs)``), False (``hook(module, args)``, as torch) or True (``hook(module, args,
    kwargs)`` returns ``(args, kwargs)``)."""

    def register(self, hook: Callable, with_kwargs: bool = False) -> RemovableHandle:
        if with_kwargs:

            def wrapper(module, args, kwargs):
                return hook(module, args, kwargs)
        else:

            def wrapper(module, args):
                return hook(module, args)

        return self._add(wrapper, hook, bool(with_kwargs))

    def refresh(self) -> None:
        super().refresh()
        self.snapshot = tuple(
            (_plugin_pre(call), True) if mode is None else (call, mode) for call, mode, _src in self.entries
        )


def _plugin_pre(call: Callable) -> Callable:
    def pre(module, args, kwargs):
        out = call(module, args, kwargs)
        if out is None:
            return None
        if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], tuple) and isinstance(out[1], dict):
            return out
        return (out if isinstance(out, tuple) else (out,)), kwargs

    pre.__wrapped__ = call
    return pre


class ForwardRegistry(Registry):
    """Entries' ``mode``: None (a plugin: ``(module, args, kwargs, output)``) or
    ``(with_kwargs, always_call)`` of a function hook."""

    def register(self, hook: Callable, with_kwargs: bool = False, always_call: bool = False) -> RemovableHandle:
        if with_kwargs:

            def wrapper(module, args, kwargs, output):
                return hook(module, args, kwargs, output)
        else:

            def wrapper(module, args, output):
                return hook(module, args, output)

        return self._add(wrapper, hook, (bool(with_kwargs), bool(always_call)))

    def refresh(self) -> None:
        super().refresh()
        self.snapshot = tuple(
            (("global", i), call, True, False) if mode is None else (("global", i), call, *mode)
            for i, (call, mode, _src) in enumerate(self.entries)
        )


class BackwardRegistry(Registry):
    """Full backward pre (``(module, grad_output)``) or post (``(module, grad_input,
    grad_output)``) hooks; the snapshot's callables add the error note themselves."""

    def register(self, hook: Callable) -> RemovableHandle:
        if len(self.argnames) == 2:

            def wrapper(module, grad_output):
                return hook(module, grad_output)
        else:

            def wrapper(module, grad_input, grad_output):
                return hook(module, grad_input, grad_output)

        return self._add(wrapper, hook, False)

    def refresh(self) -> None:
        super().refresh()
        self.noted = tuple(_noted(call, src, self.what) for call, _mode, src in self.entries)


def _noted(call: Callable, src: _Source, what: str) -> Callable:
    def hook(*args):
        try:
            return call(*args)
        except Exception as e:
            _note(e, src, what)
            raise

    return hook


forward_pre = ForwardPreRegistry("pyframe_module_forward_pre", "forward pre-hook")
forward = ForwardRegistry("pyframe_module_forward", "forward hook")
full_backward_pre = BackwardRegistry("pyframe_module_full_backward_pre", "full backward pre-hook")
full_backward = BackwardRegistry("pyframe_module_full_backward", "full backward hook")

_registries = (
    parameter_registration, buffer_registration, module_registration, forward_pre, forward, full_backward_pre,
    full_backward,
)  # fmt: skip


def _refresh() -> None:
    for r in _registries:
        r.refresh()
    for fn in _listeners:
        fn()


def any_call_hooks() -> bool:
    return bool(forward_pre or forward or full_backward_pre or full_backward)


# ---- what Module reads ---------------------------------------------------------------------------------


class _RegistrationChain:
    """``Module._register``'s chain: ``run(kind, module, name, value)``."""

    _by_kind = {"parameter": parameter_registration, "buffer": buffer_registration, "module": module_registration}

    def run(self, kind: str, module: Any, name: str, value: Any) -> Any:
        registry = self._by_kind[kind]
        if not registry.active:
            return value
        return registry.run_chain(module, name, value)


class _CallHooks:
    """``Module.__call__``'s global hooks, in the shapes ``module.CallHooks`` documents."""

    def forward_pre(self, module: Any) -> tuple:
        return forward_pre.snapshot

    def forward(self, module: Any) -> tuple:
        return forward.snapshot

    def backward_pre(self, module: Any) -> tuple:
        return full_backward_pre.noted

    def backward(self, module: Any) -> tuple:
        return full_backward.noted

    def note(self, exc: BaseException, kind: str, index: int) -> None:
        """Adds the error note for the ``index``-th global hook of ``kind`` ("forward_pre" or
        "forward") of the snapshot that raised."""
        registry = forward_pre if kind == "forward_pre" else forward
        if 0 <= index < len(registry.entries):
            _note(exc, registry.entries[index][2], registry.what)


registration_chain = _RegistrationChain()
call_hooks = _CallHooks()
_refresh()
