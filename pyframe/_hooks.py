"""The global module hook registries, one per module hookspec of ``pyframe/hookspecs.py``.

A registry chains two kinds of implementations: the plugins' ``@pyframe.hookimpl`` functions, which the plugin
manager (``pyframe/plugins/manager.py``) hands over in plugin order whenever its plugin set changes, then the
functions passed to ``pyframe.nn.register_module_*``, kept here in registration order. pluggy calls implementations
newest first and cannot chain results, so the registries never call a pluggy hook: each keeps an ordered snapshot
of its implementations and a cached "any implementation?" flag that the hot paths test first.

This module sits below ``pyframe.nn`` and imports nothing of it: ``Module`` reads the snapshots, passes its own
conversion of a replacement into :meth:`RegistrationRegistry.run_chain`, and keeps its fast-path flag in sync
through :func:`add_listener`.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Iterable
from typing import Any

from pyframe import hookspecs
from pyframe.utils.hooks import RemovableHandle

__all__ = [
    "BLOCK", "Registry", "REGISTRIES", "parameter_registration", "buffer_registration", "module_registration",
    "forward_pre", "forward", "full_backward_pre", "full_backward", "add_listener", "any_call_hooks",
    "register_module_parameter_registration_hook", "register_module_buffer_registration_hook",
    "register_module_module_registration_hook", "register_module_forward_pre_hook", "register_module_forward_hook",
    "register_module_full_backward_pre_hook", "register_module_backward_hook", "register_module_full_backward_hook",
    "link", "qualified_name", "outermost", "record_change", "changes_of", "set_tracer", "explain_error",
]  # fmt: skip


class _Block:
    """``pyframe.nn.BLOCK``: what a registration hook returns to block a registration."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "pyframe.nn.BLOCK"

    def __reduce__(self):
        return "BLOCK"


BLOCK = _Block()
_listeners: list = []
_tracer: Any = None  # the active pyframe.plugins.trace() recorder, or None (then nothing is wrapped)
change_hint: Any = None  # (change) -> the advice an error note gives; set by pyframe.plugins


def add_listener(fn: Callable[[], None]) -> None:
    """``fn()`` is called after every change of any registry (``Module`` keeps its global-hooks flag so)."""
    _listeners.append(fn)
    fn()


def _describe_function(fn: Callable) -> str:
    qualname = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    module = getattr(fn, "__module__", None) or type(fn).__module__
    return f"hook function {qualname} (module {module})"


class _Source:
    """Who an implementation belongs to, for error notes: a function, or a plugin's (``plugin`` describes it,
    ``name`` is the plugin's name)."""

    __slots__ = ("fn", "plugin", "name")

    def __init__(self, fn: Callable, plugin: str | None, name: str | None = None):
        self.fn, self.plugin, self.name = fn, plugin, name

    def describe(self) -> str:
        fn = _describe_function(self.fn)
        return fn if self.plugin is None else f"{self.plugin} ({fn})"


def _note(exc: BaseException, src: _Source, what: str) -> None:
    """Name the hook once: a re-entering hook (one that registers or calls a module) passes the
    same exception up through every one of its frames, and a note per frame buried the message."""
    note = f"raised in the {what} of {src.describe()}"
    if note not in getattr(exc, "__notes__", ()):
        exc.add_note(note)


class _Handle(RemovableHandle):
    """Removes a function hook from its registry; removing twice is harmless."""

    __slots__ = ("_registry",)

    def __init__(self, registry: Registry, entry: tuple):
        super().__init__(registry.functions, entry)
        self._registry = registry

    def remove(self) -> None:
        if self.id in self._registry.functions:
            super().remove()
            self._registry.refresh()


# ---- the registries ---------------------------------------------------------------------------------------


class Registry:
    """One hookspec's implementations in calling order. ``entries`` is the ordered snapshot of ``(call, mode,
    source)``: ``call`` takes the spec's arguments positionally (``mode`` None: a plugin's) or is a function hook
    called the torch way (``mode``: its options); ``bool(registry)`` is the cached "any implementation?" flag."""

    def __init__(self, specname: str, what: str):
        code = getattr(hookspecs, specname).__code__
        self.specname, self.what = specname, what
        self.argnames: tuple = code.co_varnames[: code.co_argcount]
        self.plugins: tuple = ()  # (call, None, source) in plugin order, from the plugin manager
        self.functions: dict = {}  # handle id -> (hook, mode), in registration order
        self.refresh()

    def __bool__(self) -> bool:
        return self.active

    def set_plugins(self, impls: Iterable[tuple]) -> None:
        """The plugins' implementations, as ``(function, argnames, plugin description[, plugin name])`` in calling
        order."""
        self.plugins = tuple(
            (self._positional(fn, tuple(names)), None, _Source(fn, label, rest[0] if rest else None))
            for fn, names, label, *rest in impls
        )
        self.refresh()

    def refresh(self) -> None:
        functions = tuple((hook, mode, _Source(hook, None)) for hook, mode in self.functions.values())
        plugins = self.plugins
        if _tracer is not None:  # while a trace is on, the plugins' implementations run inside its wrappers
            plugins = tuple((_tracer.wrap(self, call, src), mode, src) for call, mode, src in plugins)
        self.entries = plugins + functions
        self.active = bool(self.entries)
        self._shape()
        for fn in _listeners:
            fn()

    def _shape(self) -> None:
        """Recomputes what the caller reads, in the shape it reads it (subclasses)."""

    def _positional(self, fn: Callable, names: tuple) -> Callable:
        if names == self.argnames:
            return fn
        idx = [self.argnames.index(n) for n in names]
        return lambda *a: fn(*[a[i] for i in idx])

    def add(self, hook: Callable, mode: Any = None) -> RemovableHandle:
        """Appends a function hook (``mode``: how it is called, see the subclass); its handle removes it."""
        if not callable(hook):
            raise TypeError(f"{self.what} must be callable, got {type(hook).__name__}")
        handle = _Handle(self, (hook, mode))
        self.refresh()
        return handle

    def note(self, exc: BaseException, index: int) -> None:
        """Adds the error note naming the ``index``-th implementation of the snapshot that raised."""
        if 0 <= index < len(self.entries):
            _note(exc, self.entries[index][2], self.what)


class RegistrationRegistry(Registry):
    """Parameter, buffer or submodule registration: ``run_chain`` folds the hooks over the value."""

    def __init__(self, specname: str, kind: str, expected: str):
        super().__init__(specname, f"{kind} registration hook")
        self.kind, self.expected = kind, expected

    def run_chain(self, module: Any, name: str, value: Any, accept: Callable[[Any], Any]) -> Any:
        """None keeps, a value replaces (the next hook sees it), BLOCK ends the chain. ``accept(out)`` is the
        caller's conversion of a replacement: the value to register, or None when ``out`` is the wrong kind."""
        for call, _mode, src in self.entries:
            grad_before = getattr(value, "requires_grad", None)
            try:
                out = call(module, name, value)
            except Exception as e:
                _note(e, src, self.what)
                raise
            if out is None:
                if src.name is not None and grad_before is not None and value.requires_grad != grad_before:
                    old = _describe_value(value)
                    old["requires_grad"] = grad_before
                    record_change(src.name, module, name, self.kind, "requires_grad set", old, _describe_value(value))
                continue
            if out is BLOCK:
                if src.name is not None:
                    record_change(src.name, module, name, self.kind, "blocked", _describe_value(value), None)
                return BLOCK
            new = accept(out)
            if new is None:
                raise TypeError(
                    f"{src.describe()} returned {_typename(out)} for {self.kind} '{name}' of "
                    f"{type(module).__name__}; a {self.kind} registration hook must return None (keep), "
                    f"{self.expected}, or pyframe.nn.BLOCK"
                )
            if src.name is not None:
                record_change(
                    src.name, module, name, self.kind, "replaced", _describe_value(value), _describe_value(new)
                )
            value = new
        return value


def _typename(obj: Any) -> str:
    cls = type(obj)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


parameter_registration = RegistrationRegistry(
    "pyframe_module_parameter_registration", "parameter", "a pyframe.nn.Parameter or pyframe.Tensor"
)
buffer_registration = RegistrationRegistry("pyframe_module_buffer_registration", "buffer", "a pyframe.Tensor")
module_registration = RegistrationRegistry("pyframe_module_module_registration", "module", "a pyframe.nn.Module")


class ForwardPreRegistry(Registry):
    """``snapshot``: ``(hook, with_kwargs)`` pairs; ``hook(module, args)`` returns None or new args,
    ``hook(module, args, kwargs)`` None or ``(args, kwargs)`` (a plugin's may also return new args alone)."""

    def _shape(self) -> None:
        self.snapshot = tuple(
            (_plugin_pre(call), True) if mode is None else (call, mode) for call, mode, _ in self.entries
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
    """``snapshot``: ``(("global", index), hook, with_kwargs, always_call)``; ``hook(module, args, output)`` (or
    ``(module, args, kwargs, output)``) returns None or a new output."""

    def _shape(self) -> None:
        self.snapshot = tuple(
            (("global", i), call, True, False) if mode is None else (("global", i), call, *mode)
            for i, (call, mode, _) in enumerate(self.entries)
        )


class BackwardRegistry(Registry):
    """Full backward pre (``(module, grad_output)``) or post (``(module, grad_input, grad_output)``) hooks;
    ``snapshot``'s callables add the error note themselves."""

    def _shape(self) -> None:
        self.snapshot = tuple(_noted(call, src, self.what) for call, _mode, src in self.entries)


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

REGISTRIES = (
    parameter_registration, buffer_registration, module_registration, forward_pre, forward, full_backward_pre,
    full_backward,
)  # fmt: skip


def any_call_hooks() -> bool:
    return bool(forward_pre or forward or full_backward_pre or full_backward)


# ---- the eight register_module_* functions (pyframe.nn and pyframe.nn.modules.module export them) ----------


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, param)`` for every parameter registered in any Module (``param`` may
    be None). Returns None to keep it, a tensor to register instead (a plain tensor becomes a
    Parameter keeping its ``requires_grad``), or ``pyframe.nn.BLOCK`` to register None. Hooks
    chain in registration order after plugins' implementations."""
    return parameter_registration.add(hook)


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, buffer)`` for every buffer registered in any Module (``buffer`` may be
    None). None keeps, a tensor replaces, ``pyframe.nn.BLOCK`` registers None."""
    return buffer_registration.add(hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, name, submodule)`` for every submodule registered in any Module. None keeps,
    a Module replaces, ``pyframe.nn.BLOCK`` registers None (containers then skip it)."""
    return module_registration.add(hook)


def register_module_forward_pre_hook(hook: Callable, *, with_kwargs: bool = False) -> RemovableHandle:
    """``hook(module, args)`` before every Module's forward (before the module's own pre-hooks);
    returns None or new args. With ``with_kwargs`` (a pyframe extension; torch's global
    pre-hook has none): ``hook(module, args, kwargs)`` returns None or ``(args, kwargs)``."""
    return forward_pre.add(hook, bool(with_kwargs))


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:  # fmt: skip
    """``hook(module, args, output)`` (or ``(module, args, kwargs, output)``) after every Module's
    forward (before the module's own forward hooks); returns None or a new output.
    ``always_call``: also run when forward raises. Same as torch."""
    return forward.add(hook, (bool(with_kwargs), bool(always_call)))


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, grad_output)`` before every Module's backward; returns None or a new
    grad_output tuple of the same length."""
    return full_backward_pre.add(hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """``hook(module, grad_input, grad_output)`` after every Module's backward; returns None or a
    new grad_input tuple of the same length. Entries are None where no gradient flows."""
    return full_backward.add(hook)


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """The full backward hook under seed 003's name (PyTorch's deprecated non-full semantics are
    not reproduced): same as :func:`register_module_full_backward_hook`."""
    return full_backward.add(hook)


# ---- qualified names: which parent each module was attached to, under which name --------------------------
# child module -> (weak reference to its parent, the name it was attached under); kept by ``Module`` on every
# submodule commit, so that a module's dotted path is known without the hooks' help (see ``qualified_name``)
_parents: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _set_parent(child: Any, parent: Any, name: str) -> bool:
    try:
        entry = _parents.get(child)
        if entry is not None and entry[0]() is parent and entry[1] == name:
            return False
        _parents[child] = (weakref.ref(parent), name)
    except TypeError:  # a module that cannot be weakly referenced gets no name
        return False
    return True


def link(parent: Any, name: str, child: Any) -> None:
    """``Module`` calls this when ``child`` is committed as ``parent.<name>``. Submodules ``child`` holds without
    having been attached through a commit (a deep copy's) are linked too."""
    if child is not None and _set_parent(child, parent, name):
        _link_below(child)


def _link_below(module: Any) -> None:
    for n, c in module.__dict__.get("_modules", {}).items():
        if c is not None and _set_parent(c, module, n):
            _link_below(c)


def _up(module: Any):
    """(parent, name) of ``module`` while the link still holds (the parent still has it under that name)."""
    try:
        entry = _parents.get(module)
    except TypeError:
        return None
    if entry is None:
        return None
    parent = entry[0]()
    if parent is None or parent.__dict__.get("_modules", {}).get(entry[1]) is not module:
        return None
    return parent, entry[1]


def qualified_name(module: Any, name: str | None = None) -> str:
    """The dotted path of ``module`` (and of its member ``name`` when given) from the outermost module it is
    attached to now: ``"transformer.h.0.attn.c_attn.weight"``. While the tree is still being built the path is
    as long as what is attached so far (``"weight"`` inside a registration hook of a fresh ``Linear``,
    ``"attn.c_attn"`` when ``c_attn`` is attached to an ``attn`` that has no parent yet)."""
    parts = [] if name is None else [name]
    seen: set[int] = set()
    cur = module
    while id(cur) not in seen:
        seen.add(id(cur))
        up = _up(cur)
        if up is None:
            break
        cur, n = up
        parts.append(n)
    return ".".join(reversed(parts))


def outermost(module: Any) -> Any:
    """The outermost module ``module`` is attached to now (``module`` itself when it has no parent)."""
    seen: set[int] = set()
    cur = module
    while id(cur) not in seen:
        seen.add(id(cur))
        up = _up(cur)
        if up is None:
            break
        cur = up[0]
    return cur


# ---- what plugins changed at registration (read by pyframe.plugins.explain, the trace and error notes) -------
# module -> {member name: [change, ...]}; a change is a dict: plugin, kind, name, action, old, new
_changes: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _describe_value(value: Any) -> dict | None:
    if value is None:
        return None
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "shape"):
        return {"dtype": dtype.name, "shape": list(value.shape), "requires_grad": bool(value.requires_grad)}
    return {"type": type(value).__name__}


def record_change(plugin: str, module: Any, name: str, kind: str, action: str, old: Any, new: Any) -> None:
    """Records that ``plugin`` changed member ``name`` (a ``kind``: parameter, buffer, module) of ``module``:
    ``action`` says how ("replaced", "blocked", ...), ``old``/``new`` describe the value before and after."""
    change = {"plugin": plugin, "kind": kind, "name": name, "action": action, "old": old, "new": new}
    with contextlib.suppress(TypeError):
        _changes.setdefault(module, {}).setdefault(name, []).append(change)
    if _tracer is not None:
        _tracer.registration(module, change)


def changes_of(module: Any) -> dict:
    """``{member name: [change, ...]}`` of what plugins changed in ``module``'s registrations."""
    try:
        return _changes.get(module) or {}
    except TypeError:
        return {}


def set_tracer(tracer: Any) -> None:
    """Turns the trace on (a recorder with ``wrap`` and ``registration``) or off (None): every registry rebuilds
    its snapshot, so with the trace off nothing stands between a module and its plugins."""
    global _tracer
    _tracer = tracer
    for registry in REGISTRIES:
        registry.refresh()


def explain_error(module: Any, exc: BaseException) -> None:
    """``Module.__call__`` calls this when its forward raised while some plugin changed a registration: when
    ``exc``'s message names a dtype or shape a plugin gave one of ``module``'s tensors, a note names that plugin."""
    if getattr(exc, "_pyframe_explained", False):
        return
    text = str(exc)
    for name, changes in changes_of(module).items():
        for change in reversed(changes):
            old, new = change["old"], change["new"]
            if not (isinstance(old, dict) and isinstance(new, dict) and "dtype" in new):
                continue
            if new["dtype"] != old["dtype"] and new["dtype"] in text:
                what = f"converted from {old['dtype']} to {new['dtype']}"
            elif new["shape"] != old["shape"] and (str(tuple(new["shape"])) in text or str(new["shape"]) in text):
                what = f"reshaped from {old['shape']} to {new['shape']}"
            else:
                continue
            hint = change_hint(change) if change_hint is not None else ""
            exc.add_note(
                f"{qualified_name(module, name)} was {what} by plugin {change['plugin']} when it was registered{hint}"
            )
            with contextlib.suppress(AttributeError):
                exc._pyframe_explained = True
            return
