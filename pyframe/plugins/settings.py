"""``Setting``: one typed, validated setting a plugin declares in ``pyframe_declare_settings``."""

from __future__ import annotations

import difflib
from typing import Any

__all__ = ["Setting", "PluginConfigError", "did_you_mean"]

_LIST_STR = list[str]
_TYPES = {bool: "bool", int: "int", float: "float", str: "str", _LIST_STR: "list[str]"}


class PluginConfigError(ValueError):
    """A configuration error: an unknown key, a bad value, an unknown plugin name. Always fatal."""


def did_you_mean(word: str, candidates) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _type_name(t: Any) -> str:
    return _TYPES.get(t, getattr(t, "__name__", repr(t)))


class Setting:
    """A plugin setting: ``Setting(type, default, *, choices=None, help="")``.

    ``type`` is one of ``bool``, ``int``, ``float``, ``str`` or ``list[str]`` (``list`` means ``list[str]``).
    ``choices``, when given, lists the allowed values (for ``list[str]``: the allowed items). An ``int`` is
    accepted for a ``float`` setting; a ``bool`` is never accepted as a number."""

    __slots__ = ("type", "default", "choices", "help")

    def __init__(self, type: Any, default: Any, *, choices=None, help: str = "") -> None:  # noqa: A002
        if type is list or type == _LIST_STR:
            type = _LIST_STR  # noqa: A001  (one object, so ``is`` comparisons below hold)
        if type not in _TYPES:
            raise TypeError(f"Setting type must be one of bool, int, float, str, list[str]; got {type!r}")
        self.type = type
        self.choices = tuple(choices) if choices is not None else None
        self.help = str(help)
        self.default = self.validate(default, where="Setting default")

    def __repr__(self) -> str:
        extra = f", choices={list(self.choices)!r}" if self.choices is not None else ""
        return f"Setting({_type_name(self.type)}, {self.default!r}{extra})"

    def allowed(self) -> str:
        """Words describing the allowed values, used in error messages and ``pyframe config``."""
        if self.choices is not None:
            alts = ", ".join(repr(c) for c in self.choices)
            return f"a list of {alts}" if self.type is _LIST_STR else f"one of {alts}"
        return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(
            self.type, "a list of strings"
        )

    def validate(self, value: Any, *, where: str) -> Any:
        """Returns the value converted to this setting's type, or raises PluginConfigError naming ``where``."""

        def bad(extra: str = "") -> PluginConfigError:
            return PluginConfigError(f"{where}: expected {self.allowed()}, got {value!r}{extra}")

        t = self.type
        if t is bool:
            if not isinstance(value, bool):
                raise bad()
        elif t is int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad()
        elif t is float:
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise bad()
            value = float(value)
        elif t is str:
            if not isinstance(value, str):
                raise bad()
        else:
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise bad()
            value = list(value)
        if self.choices is not None:
            items = value if t is _LIST_STR else [value]
            for item in items:
                if item not in self.choices:
                    raise bad(did_you_mean(item, self.choices))
        return value
