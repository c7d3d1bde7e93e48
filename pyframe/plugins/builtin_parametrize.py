"""The built-in plugin ``parametrize``: applies parametrizations named in config to matching modules.

``[[parametrize.rules]]`` tables (``[[tool.pyframe.parametrize.rules]]`` in pyproject.toml), each
``module = "Linear"`` (class name, or ``module.qualname``) and/or ``names = ["*.q_proj"]`` (patterns over the
modules' qualified names, see ``NamePatterns``), ``tensor = "weight"``, ``parametrization = "orthogonal"`` and
optionally ``options = {...}`` (keyword arguments). A parametrization name is looked up
in the built-in table (``orthogonal``, ``weight_norm``, ``spectral_norm``) and then in the entry-point group
``pyframe.parametrizations``; the entry point's object is either a function ``f(module, tensor_name,
**options)`` that registers the parametrization itself (like the shipped ones), or an ``nn.Module`` class,
instantiated with ``**options`` and registered with ``register_parametrization``.

When: a module is parametrized when it is registered as a submodule (its ``__init__`` has finished by
then), and a module that is never registered anywhere (a top-level model) on its first forward (a global
forward pre-hook installed only while rules exist, so without rules nothing runs on forward). A ``names`` rule
applies at registration as soon as the name known so far matches (``NamePatterns.match_suffix``: ``*.q_proj``
when ``q_proj`` is attached, ``encoder.*`` when ``encoder`` is), and a module that was not matched then is
looked at again, with its full name, on the outermost module's first forward. A tensor that
is already parametrized is left alone (so deepcopies and re-registrations are not parametrized twice); all
rules for one (module, tensor) pair apply together, in config order.
"""

from __future__ import annotations

import weakref
from typing import Any

import pluggy

from pyframe.plugins.settings import NamePatterns, PluginConfigError, Setting, did_you_mean

hookimpl = pluggy.HookimplMarker("pyframe")

GROUP = "pyframe.parametrizations"
_RULE_KEYS = {"module": str, "names": list, "tensor": str, "parametrization": str, "options": dict}
_OPTIONAL = ("module", "names", "options")  # but a rule names a module class, names, or both

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
        self.help = "parametrizations to apply: [{module and/or names, tensor, parametrization, options?}, ...]"
        self.default = []

    def __repr__(self) -> str:
        return "Setting(list[rule], [])"

    def allowed(self) -> str:
        return (
            "a list of tables {module = str and/or names = [str, ...], tensor = str, parametrization = str, "
            "options = table (optional)}; "
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
                if key in _OPTIONAL and key not in rule:
                    continue
                if key not in rule:
                    raise PluginConfigError(f"{at}: missing key {key!r}")
                if not isinstance(rule[key], typ):
                    raise PluginConfigError(f"{at}: {key!r} must be a {typ.__name__}, got {rule[key]!r}")
            if "module" not in rule and "names" not in rule:
                raise PluginConfigError(f"{at}: a rule needs 'module' (a class name), 'names' (patterns), or both")
            for pattern in rule.get("names", []):
                try:
                    NamePatterns.check(pattern)
                except ValueError as e:
                    raise PluginConfigError(f"{at}: 'names': {e}") from None
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
    _state["rules"] = [_compiled(r) for r in settings["rules"]]
    _seen.clear()
    if _state["rules"] and _state["handle"] is None:
        from pyframe.nn.modules.module import register_module_forward_pre_hook

        _state["handle"] = register_module_forward_pre_hook(_on_forward_pre)
    elif not _state["rules"]:
        _remove_handle()


def _compiled(rule: dict) -> dict:
    return {**rule, "patterns": NamePatterns(rule["names"]) if rule.get("names") else None}


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
        from pyframe._hooks import qualified_name

        apply_rules(submodule, prefix=qualified_name(module, name), final=False)


def _on_forward_pre(module: Any, args: tuple) -> None:
    if module in _seen or _state["busy"]:
        return None
    from pyframe._hooks import outermost

    for qname, m in outermost(module).named_modules():  # from the top: every name is final now
        if m not in _seen:
            apply_rules(m, recurse=False, prefix=qname)
    return None


def _matches(pattern: str, cls: type) -> bool:
    return pattern in (cls.__name__, cls.__qualname__, f"{cls.__module__}.{cls.__qualname__}")


def apply_rules(
    module: Any, rules: list | None = None, recurse: bool = True, prefix: str | None = None, final: bool = True
) -> None:
    """Applies ``rules`` (default: the configured ones) to ``module`` (and its submodules when ``recurse``), whose
    qualified name is ``prefix`` (default: as far as it is attached now). ``final``: the names are complete (the
    model's first forward); before that a ``names`` rule applies only where the known part of the name decides
    it, and the module is looked at again on the first forward."""
    from pyframe._hooks import qualified_name
    from pyframe.nn.utils import parametrize

    rules = _state["rules"] if rules is None else [_compiled(r) for r in rules]
    prefix = qualified_name(module) if prefix is None else prefix
    mods = list(module.named_modules(prefix=prefix)) if recurse else [(prefix, module)]
    _state["busy"] = True
    try:
        for qname, m in mods:
            cls = parametrize.type_before_parametrizations(m)
            todo: dict[str, list] = {}
            pending = False
            for rule in rules:
                if "module" in rule and not _matches(rule["module"], cls):
                    continue
                patterns = rule.get("patterns")
                if patterns is not None and not (patterns.match(qname) if final else patterns.match_suffix(qname)):
                    pending = pending or not final
                    continue
                todo.setdefault(rule["tensor"], []).append(rule)
            if not pending:
                _seen.add(m)
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
