"""The built-in plugin ``parametrize``: applies parametrizations named in config to matching modules.

``[[parametrize.rules]]`` tables (``[[tool.pyframe.parametrize.rules]]`` in pyproject.toml), each
``module = "Linear"`` (class name, or ``module.qualname``), ``tensor = "weight"``, ``parametrization =
"orthogonal"`` and optionally ``options = {...}`` (keyword arguments). A parametrization name is looked up
in the built-in table (``orthogonal``, ``weight_norm``, ``spectral_norm``) and then in the entry-point group
``pyframe.parametrizations``; the entry point's object is either a function ``f(module, tensor_name,
**options)`` that registers the parametrization itself (like the shipped ones), or an ``nn.Module`` class,
instantiated with ``**options`` and registered with ``register_parametrization``.

When: a module is parametrized when it is registered as a submodule (its ``__init__`` has finished by
then), and a module that is never registered anywhere (a top-level model) on its first forward (a global
forward pre-hook installed only while rules exist, so without rules nothing runs on forward). A tensor that
is already parametrized is left alone (so deepcopies and re-registrations are not parametrized twice); all
rules for one (module, tensor) pair apply together, in config order.
"""

from __future__ import annotations

import weakref
from typing import Any

import pluggy

from pyframe.plugins.settings import PluginConfigError, Setting, did_you_mean

hookimpl = pluggy.HookimplMarker("pyframe")

GROUP = "pyframe.parametrizations"
_RULE_KEYS = {"module": str, "tensor": str, "parametrization": str, "options": dict}

_state: dict[str, Any] = {"rules": [], "handle": None, "busy": False}
_seen: weakref.WeakSet = weakref.WeakSet()


def _builtin_table() -> dict[str, Any]:
    from pyframe.nn.utils import parametrizations

    return {
        "orthogonal": parametrizations.orthogonal,
        "weight_norm": parametrizations.weight_norm,
        "spectral_norm": parametrizations.spectral_norm,
    }


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=GROUP)}


def available() -> list[str]:
    """Every parametrization name a rule may use: built-in ones, then entry points."""
    return sorted(set(_builtin_table()) | set(_entry_points()))


def get_parametrization(name: str) -> Any:
    """The object registered under ``name`` (built-in table first, then the ``pyframe.parametrizations``
    entry points). KeyError naming the known ones when there is none."""
    table = _builtin_table()
    if name in table:
        return table[name]
    eps = _entry_points()
    if name in eps:
        return eps[name].load()
    raise KeyError(f"unknown parametrization {name!r}{did_you_mean(name, available())}; known: {available()}")


class RulesSetting(Setting):
    """A list of rule tables (Setting's own types are scalars and string lists)."""

    __slots__ = ()

    def __init__(self) -> None:
        self.type = list
        self.choices = None
        self.help = "parametrizations to apply: [{module, tensor, parametrization, options?}, ...]"
        self.default = []

    def __repr__(self) -> str:
        return "Setting(list[rule], [])"

    def allowed(self) -> str:
        return (
            "a list of tables {module = str, tensor = str, parametrization = str, options = table (optional)}; "
            f"parametrizations: {', '.join(available())}"
        )

    def validate(self, value: Any, *, where: str) -> Any:
        if not isinstance(value, (list, tuple)):
            raise PluginConfigError(f"{where}: expected {self.allowed()}, got {value!r}")
        out = []
        for i, rule in enumerate(value):
            at = f"{where}: rule {i}"
            if not isinstance(rule, dict):
                raise PluginConfigError(f"{at}: expected a table, got {rule!r}")
            for key in rule:
                if key not in _RULE_KEYS:
                    raise PluginConfigError(
                        f"{at}: unknown key {key!r}{did_you_mean(key, _RULE_KEYS)}; allowed: {', '.join(_RULE_KEYS)}"
                    )
            for key, typ in _RULE_KEYS.items():
                if key == "options" and key not in rule:
                    continue
                if key not in rule:
                    raise PluginConfigError(f"{at}: missing key {key!r}")
                if not isinstance(rule[key], typ):
                    raise PluginConfigError(f"{at}: {key!r} must be a {typ.__name__}, got {rule[key]!r}")
            try:
                get_parametrization(rule["parametrization"])
            except KeyError as e:
                raise PluginConfigError(f"{at}: {e.args[0]}") from None
            except Exception as e:  # noqa: BLE001 - an entry point that fails to import is a config error too
                raise PluginConfigError(f"{at}: parametrization {rule['parametrization']!r} failed to load: {e}") from e
            out.append({"options": {}, **rule})
        return out


@hookimpl
def pyframe_declare_settings() -> dict:
    return {"rules": RulesSetting()}


@hookimpl
def pyframe_configure(settings: Any) -> None:
    _state["rules"] = list(settings["rules"])
    _seen.clear()
    if _state["rules"] and _state["handle"] is None:
        from pyframe.nn.modules.module import register_module_forward_pre_hook

        _state["handle"] = register_module_forward_pre_hook(_on_forward_pre)
    elif not _state["rules"]:
        _remove_handle()


@hookimpl
def pyframe_unconfigure() -> None:
    _state["rules"] = []
    _seen.clear()
    _remove_handle()


def _remove_handle() -> None:
    if _state["handle"] is not None:
        _state["handle"].remove()
        _state["handle"] = None


@hookimpl
def pyframe_module_module_registration(module: Any, name: str, submodule: Any) -> None:
    if _state["rules"] and submodule is not None and not _state["busy"]:
        apply_rules(submodule)


def _on_forward_pre(module: Any, args: tuple) -> None:
    if module in _seen or _state["busy"]:
        return None
    for m in module.modules():
        if m not in _seen:
            apply_rules(m, recurse=False)
    return None


def _matches(pattern: str, cls: type) -> bool:
    return pattern in (cls.__name__, cls.__qualname__, f"{cls.__module__}.{cls.__qualname__}")


def apply_rules(module: Any, rules: list | None = None, recurse: bool = True) -> None:
    """Applies ``rules`` (default: the configured ones) to ``module`` (and its submodules when ``recurse``)."""
    from pyframe.nn.utils import parametrize

    rules = _state["rules"] if rules is None else rules
    mods = list(module.modules()) if recurse else [module]
    _state["busy"] = True
    try:
        for m in mods:
            _seen.add(m)
            cls = parametrize.type_before_parametrizations(m)
            todo: dict[str, list] = {}
            for rule in rules:
                if _matches(rule["module"], cls):
                    todo.setdefault(rule["tensor"], []).append(rule)
            for tensor, rs in todo.items():
                if parametrize.is_parametrized(m, tensor):
                    continue
                if m._parameters.get(tensor) is None and m._buffers.get(tensor) is None:
                    continue
                for rule in rs:
                    _apply_one(m, tensor, rule)
    finally:
        _state["busy"] = False


def _apply_one(module: Any, tensor: str, rule: dict) -> None:
    import inspect

    from pyframe.nn.modules.module import Module
    from pyframe.nn.utils import parametrize

    obj = get_parametrization(rule["parametrization"])
    options = dict(rule.get("options") or {})
    if inspect.isclass(obj) and issubclass(obj, Module):
        parametrize.register_parametrization(module, tensor, obj(**options))
    else:
        obj(module, tensor, **options)
