"""``Setting``: one typed, validated setting a plugin declares in ``pyframe_declare_settings``."""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["Setting", "PluginConfigError", "did_you_mean", "NamePatterns", "Declaration", "declare"]


class Declaration(dict):
    """What ``pyframe_declare_settings`` may return instead of a plain dict: the settings, plus whether the plugin
    changes numerics (``changes_numerics``: a bool, or a function of the validated settings returning one) and
    whether its hooks take part (``active``, the same). Build it with ``pyframe.plugins.declare(changes_numerics=
    False, key=Setting(...), ...)``. A plain dict counts as ``changes_numerics=True``: a checkpoint loaded under
    different settings of such a plugin warns; and as ``active=True``."""

    changes_numerics: Any = True
    active: Any = True

    def is_active(self, settings: Any) -> bool:
        """Whether the plugin's module hooks and ``pyframe_model_ready`` run with these validated ``settings``
        (``active``, called if it is a function)."""
        flag = self.active
        return bool(flag(settings)) if callable(flag) else bool(flag)

    def numerics(self, settings: Any) -> bool:
        """Whether the plugin changes numerics with these validated ``settings`` (``changes_numerics``, called if it is
        a function).
        """
        flag = self.changes_numerics
        return bool(flag(settings)) if callable(flag) else bool(flag)


def declare(*, changes_numerics: Any = True, active: Any = True, **settings: Any) -> Declaration:
    """``return pyframe.plugins.declare(changes_numerics=False, level=Setting(int, 1))`` in
    ``pyframe_declare_settings``: the settings and the numerics flag (see ``Declaration``).

    ``active`` (a bool, or a function of the validated settings) says whether the plugin's module hooks and
    ``pyframe_model_ready`` take part: a plugin that does nothing until configured (``active=lambda s:
    bool(s["targets"])``) is then free when installed and not configured, since pyframe skips the hooked path of a
    call no hook wants. Its other hooks (``pyframe_configure``, ``pyframe_summary``, ...) run as usual."""
    for key, flag in (("changes_numerics", changes_numerics), ("active", active)):
        if not (isinstance(flag, bool) or callable(flag)):
            raise TypeError(f"{key} must be a bool or a function of the settings, got {flag!r}")
    d = Declaration(settings)
    d.changes_numerics, d.active = changes_numerics, active
    return d


class NamePatterns:
    """Patterns over qualified names (``"transformer.h.0.attn.c_attn"``, ``"encoder.layers.1.weight"``), and the
    ``Setting`` type of a list of them: ``Setting(NamePatterns, ["*.q_proj", "encoder.*"])``; the plugin receives
    the list of strings and builds ``NamePatterns(settings["targets"])`` to match.

    A pattern matches a whole name, as ``fnmatch`` does: ``*`` is any run of characters, dots included
    (``encoder.*`` matches every name below ``encoder``), ``?`` one character, ``[abc]`` one of a set.

    ``match(name)`` tests a full qualified name. ``match_suffix(path)`` tests the path known while the tree is
    still being built (``"attn.c_attn"`` when ``c_attn`` is attached to an ``attn`` that has no parent yet): true
    when the pattern matches ``path`` itself or ``path`` under some parent, e.g. ``*.c_attn`` matches the suffix
    ``c_attn``, ``encoder.*`` does not (it needs the name's start)."""

    __slots__ = ("patterns", "_compiled")

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        if isinstance(patterns, str):
            patterns = [patterns]
        self.patterns = list(patterns)
        self._compiled = [re.compile(fnmatch.translate(p)) for p in self.patterns]

    def __repr__(self) -> str:
        return f"NamePatterns({self.patterns!r})"

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def match(self, name: str) -> bool:
        """Whether a pattern matches the whole qualified ``name``."""
        return any(c.match(name) for c in self._compiled)

    def match_suffix(self, path: str) -> bool:
        """Whether a pattern matches ``path`` itself or ``path`` under some parent (see the class docstring)."""
        under = "\x00." + path  # a parent no pattern can name literally: only a leading * covers it
        return any(c.match(path) or c.match(under) for c in self._compiled)

    def select(self, names: Iterable[str]) -> list[str]:
        """The names this matches, in order."""
        return [n for n in names if self.match(n)]

    @staticmethod
    def check(pattern: Any) -> str:
        """Raises ValueError saying what is wrong with one pattern; returns it."""
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"a pattern is a non-empty string such as '*.q_proj', got {pattern!r}")
        if any(c.isspace() for c in pattern) or ".." in pattern or pattern.startswith(".") or pattern.endswith("."):
            raise ValueError(
                f"pattern {pattern!r} is not a qualified-name pattern: dotted names, no spaces, no empty part "
                "(e.g. '*.q_proj', 'encoder.*', 'h.[01].attn.*')"
            )
        if pattern.count("[") != pattern.count("]"):
            raise ValueError(f"pattern {pattern!r} has an unclosed '['")
        return pattern


_LIST_STR = list[str]
_TYPES = {bool: "bool", int: "int", float: "float", str: "str", _LIST_STR: "list[str]", NamePatterns: "name patterns"}


class PluginConfigError(ValueError):
    """A configuration error: an unknown key, a bad value, an unknown plugin name. Always fatal."""


def did_you_mean(word: str, candidates) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _type_name(t: Any) -> str:
    return _TYPES.get(t, getattr(t, "__name__", repr(t)))


_BOUNDS = (("ge", ">=", lambda v, b: v >= b), ("gt", ">", lambda v, b: v > b), ("le", "<=", lambda v, b: v <= b),
           ("lt", "<", lambda v, b: v < b))  # fmt: skip


class Setting:
    """A plugin setting: ``Setting(type, default, *, choices=None, ge=None, gt=None, le=None, lt=None,
    validator=None, help="")``.

    ``type`` is one of ``bool``, ``int``, ``float``, ``str``, ``list[str]`` (``list`` means ``list[str]``) or
    ``NamePatterns`` (a list of qualified-name patterns, delivered as a list of strings).
    ``choices``, when given, lists the allowed values (for ``list[str]``: the allowed items). ``ge``, ``gt``,
    ``le``, ``lt`` bound an ``int`` or ``float`` setting (>=, >, <=, <). ``validator(value)`` is called last with
    the converted value and rejects it by raising ``ValueError`` (or ``TypeError``) with a message saying what is
    allowed. Every rejection is a ``PluginConfigError`` naming where the value came from (file and key, variable
    or call) and what is allowed. An ``int`` is accepted for a ``float`` setting; a ``bool`` is never a number."""

    __slots__ = ("type", "default", "choices", "help", "ge", "gt", "le", "lt", "validator")

    def __init__(
        self,
        type: Any,  # noqa: A002
        default: Any,
        *,
        choices=None,
        ge: float | None = None,
        gt: float | None = None,
        le: float | None = None,
        lt: float | None = None,
        validator: Callable[[Any], Any] | None = None,
        help: str = "",  # noqa: A002
    ) -> None:
        if type is list or type == _LIST_STR:
            type = _LIST_STR  # noqa: A001  (one object, so ``is`` comparisons below hold)
        if type not in _TYPES:
            raise TypeError(f"Setting type must be one of bool, int, float, str, list[str], NamePatterns; got {type!r}")
        self.type = type
        self.choices = tuple(choices) if choices is not None else None
        self.help = str(help)
        self.ge, self.gt, self.le, self.lt = ge, gt, le, lt
        for key, _, _ in _BOUNDS:
            bound = getattr(self, key)
            if bound is None:
                continue
            if type not in (int, float):
                raise TypeError(f"Setting: {key}= bounds an int or float setting, not a {_type_name(type)} one")
            if isinstance(bound, bool) or not isinstance(bound, (int, float)) or bound != bound:
                raise TypeError(f"Setting: {key} must be a number, got {bound!r}")
        if validator is not None and not callable(validator):
            raise TypeError(f"Setting: validator must be callable, got {validator!r}")
        self.validator = validator
        self.default = self.validate(default, where="Setting default")

    def __repr__(self) -> str:
        extra = f", choices={list(self.choices)!r}" if self.choices is not None else ""
        extra += "".join(f", {k}={getattr(self, k)!r}" for k, _, _ in _BOUNDS if getattr(self, k) is not None)
        return f"Setting({_type_name(self.type)}, {self.default!r}{extra})"

    def allowed(self) -> str:
        """Words describing the allowed values, used in error messages and ``pyframe config``."""
        if self.choices is not None:
            alts = ", ".join(repr(c) for c in self.choices)
            return f"a list of {alts}" if self.type is _LIST_STR else f"one of {alts}"
        words = {
            bool: "true or false",
            int: "an integer",
            float: "a number",
            str: "a string",
            NamePatterns: "a list of qualified-name patterns such as '*.q_proj' or 'encoder.*'",
        }.get(self.type, "a list of strings")
        bounds = [f"{op} {getattr(self, k)!r}" for k, op, _ in _BOUNDS if getattr(self, k) is not None]
        return f"{words} {' and '.join(bounds)}" if bounds else words

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
        elif t is NamePatterns:
            if isinstance(value, NamePatterns):
                value = list(value.patterns)
            if isinstance(value, str):
                value = [value]
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise bad()
            for v in value:
                try:
                    NamePatterns.check(v)
                except ValueError as e:
                    raise PluginConfigError(f"{where}: {e}") from None
            value = list(value)
        else:
            if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
                raise bad()
            value = list(value)
        if self.choices is not None:
            items = value if t is _LIST_STR else [value]
            for item in items:
                if item not in self.choices:
                    raise bad(did_you_mean(item, self.choices))
        for key, _, ok in _BOUNDS:
            bound = getattr(self, key)
            if bound is not None and not (value == value and ok(value, bound)):  # NaN is never in range
                raise bad()
        if self.validator is not None:
            try:
                self.validator(value)
            except (ValueError, TypeError) as e:
                raise PluginConfigError(f"{where}: {e} (got {value!r})") from None
        return value
