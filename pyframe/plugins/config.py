"""Reading pyframe's configuration: files, environment variables, run-time calls, later wins.

defaults < ``[tool.pyframe]`` in the nearest ``pyproject.toml`` < the nearest ``pyframe.toml`` < environment
(``PYFRAME_DISABLE_PLUGIN_AUTOLOAD``, ``PYFRAME_PLUGINS``, ``PYFRAME_DISABLE_PLUGINS``) < run-time calls.
``PYFRAME_CONFIG=path`` names the one file to read instead of searching.
"""

from __future__ import annotations

import os
import re
import sys
import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyframe.plugins.settings import PluginConfigError, Setting, did_you_mean

__all__ = [
    "Layer",
    "TOP_LEVEL",
    "DEFAULTS",
    "read_layers",
    "find_upward",
    "ENV_VARS",
    "warn_user",
    "command_line_layer",
]

# the top-level keys and their types; a table (dict) at top level is a plugin's own settings
TOP_LEVEL: dict[str, Setting] = {
    "autoload": Setting(bool, True, help="load plugins found through the 'pyframe' entry-point group"),
    "plugins": Setting(list[str], [], help="load only these entry-point plugins"),
    "disable_plugins": Setting(list[str], [], help="never load these plugins (built-in ones included)"),
    "order": Setting(list[str], [], help="these plugins run first, in this order; the rest by name"),
    "strict_plugins": Setting(bool, False, help="a plugin failing to import or set up is an error"),
}
DEFAULTS: dict[str, Any] = {
    "autoload": True,
    "plugins": None,
    "disable_plugins": [],
    "order": [],
    "strict_plugins": False,
}
ENV_VARS = ("PYFRAME_CONFIG", "PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "PYFRAME_PLUGINS", "PYFRAME_DISABLE_PLUGINS")

RANK_DEFAULT, RANK_PYPROJECT, RANK_PYFRAME_TOML, RANK_ENV, RANK_COMMAND_LINE, RANK_RUNTIME = range(6)
COMMAND_LINE = "command line"


@dataclass
class Layer:
    """One source of configuration: its description, its rank (higher wins), its keys and plugin tables."""

    source: str  # e.g. "pyframe.toml (/path/pyframe.toml)", "environment"
    rank: int
    values: dict[str, Any] = field(default_factory=dict)  # top-level key -> validated value
    origins: dict[str, str] = field(default_factory=dict)  # top-level key -> where exactly (file + key, variable)
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)  # plugin name -> raw table
    table_prefix: str = ""  # how a plugin table is spelled in this source ("tool.pyframe." in pyproject)
    path: Path | None = None
    enable: list[str] = field(default_factory=list)  # plugins turned on by name (``pyframe run -p NAME``)


def find_upward(name: str, start: Path) -> Path | None:
    """The nearest file called ``name`` in ``start`` or one of its parents."""
    start = start.resolve()
    for d in (start, *start.parents):
        p = d / name
        if p.is_file():
            return p
    return None


def _read_toml(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise PluginConfigError(f"{path}: not valid TOML: {e}") from None
    except UnicodeDecodeError as e:
        line = e.object[: e.start].count(b"\n") + 1
        raise PluginConfigError(
            f"{path}: not valid TOML: byte 0x{e.object[e.start]:02x} at line {line} is not UTF-8 "
            "(a TOML file must be UTF-8; re-save it as UTF-8)"
        ) from None
    except OSError as e:
        raise PluginConfigError(f"{path}: cannot read the configuration file: {e}") from None


def _layer_from_table(table: Any, path: Path, prefix: str, rank: int, label: str) -> Layer:
    layer = Layer(source=f"{label} ({path})", rank=rank, table_prefix=prefix, path=path)
    if not isinstance(table, dict):
        raise PluginConfigError(f"{path}: '{prefix.rstrip('.')}' must be a table")
    for key, value in table.items():
        where = f"{path}: key '{prefix}{key}'"
        if isinstance(value, dict):
            layer.tables[key] = value
        elif key in TOP_LEVEL:
            layer.values[key] = TOP_LEVEL[key].validate(value, where=where)
            layer.origins[key] = f"{path} ({prefix}{key})"
        else:
            raise PluginConfigError(
                f"{where} is unknown{did_you_mean(key, TOP_LEVEL)}; allowed keys: {', '.join(TOP_LEVEL)}, "
                f"or a [{prefix}<plugin-name>] table of that plugin's settings"
            )
    return layer


def _file_layer(path: Path, rank: int | None = None, label: str | None = None) -> Layer | None:
    data = _read_toml(path)
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        if not isinstance(tool, dict) or "pyframe" not in tool:
            return None
        return _layer_from_table(
            tool["pyframe"], path, "tool.pyframe.", RANK_PYPROJECT if rank is None else rank, label or "pyproject.toml"
        )
    return _layer_from_table(data, path, "", RANK_PYFRAME_TOML if rank is None else rank, label or path.name)


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def _names(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


def _env_layer(environ) -> Layer:
    layer = Layer(source="environment", rank=RANK_ENV)
    v = environ.get("PYFRAME_DISABLE_PLUGIN_AUTOLOAD")
    if v is not None:
        low = v.strip().lower()
        if low in _TRUE:
            layer.values["autoload"] = False
            layer.origins["autoload"] = f"PYFRAME_DISABLE_PLUGIN_AUTOLOAD={v}"
        elif low not in _FALSE:
            raise PluginConfigError(
                f"environment variable PYFRAME_DISABLE_PLUGIN_AUTOLOAD={v!r}: expected one of "
                f"{', '.join(repr(x) for x in _TRUE)} (disable) or {', '.join(repr(x) for x in _FALSE)} (no effect)"
            )
    for var, key in (("PYFRAME_PLUGINS", "plugins"), ("PYFRAME_DISABLE_PLUGINS", "disable_plugins")):
        v = environ.get(var)
        if v is not None:
            layer.values[key] = _names(v)
            layer.origins[key] = f"{var}={v}"
    return layer


def read_layers(cwd: Path | None = None, environ=None) -> list[Layer]:
    """Every configuration layer from lowest to highest precedence (run-time calls are added by the manager)."""
    environ = os.environ if environ is None else environ
    cwd = Path.cwd() if cwd is None else Path(cwd)
    layers = [
        Layer(source="default", rank=RANK_DEFAULT, values=dict(DEFAULTS), origins=dict.fromkeys(DEFAULTS, "default"))
    ]
    named = environ.get("PYFRAME_CONFIG")
    if named:
        path = Path(named)
        if not path.is_file():
            raise PluginConfigError(f"PYFRAME_CONFIG={named}: no such file")
        layer = _file_layer(path.resolve(), rank=RANK_PYFRAME_TOML, label=f"PYFRAME_CONFIG={named}")
        if layer is not None:
            layers.append(layer)
    else:
        for name in ("pyproject.toml", "pyframe.toml"):
            path = find_upward(name, cwd)
            if path is not None:
                layer = _file_layer(path)
                if layer is not None:
                    layers.append(layer)
    layers.append(_env_layer(environ))
    global _last_config_file
    _last_config_file = next((la.path for la in reversed(layers) if la.path is not None), None)
    return layers


def _option_value(text: str) -> Any:
    """A ``-o key=value`` value: a TOML value (``0.5``, ``true``, ``["a", "b"]``, ``"x"``), else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def command_line_layer(enable=(), disable=(), options=()) -> Layer:
    """The layer of ``pyframe run``'s ``-p NAME`` (``enable``), ``-p no:NAME`` (``disable``) and ``-o KEY=VALUE``
    (``options``: top-level keys, or ``plugin.key`` for a plugin's setting). Between the environment and run-time
    calls; its values' provenance is "command line". A malformed option or a bad top-level value raises
    ``PluginConfigError``; plugin settings are validated by the manager like those of a file."""
    layer = Layer(source=COMMAND_LINE, rank=RANK_COMMAND_LINE, enable=list(enable))
    if disable:
        layer.values["disable_plugins"] = list(disable)
        layer.origins["disable_plugins"] = COMMAND_LINE + " (" + " ".join(f"-p no:{n}" for n in disable) + ")"
    for option in options:
        key, eq, text = option.partition("=")
        key = key.strip()
        if not eq or not key:
            raise PluginConfigError(
                f"command line: -o {option!r}: expected KEY=VALUE, e.g. -o grad-clipper.max_value=0.5 or "
                "-o strict_plugins=true"
            )
        value = _option_value(text)
        plugin, dot, setting = key.rpartition(".")
        if not dot:
            where = f"command line: -o {option}"
            if key not in TOP_LEVEL:
                raise PluginConfigError(
                    f"{where}: key '{key}' is unknown{did_you_mean(key, TOP_LEVEL)}; allowed keys: "
                    f"{', '.join(TOP_LEVEL)}, or PLUGIN.SETTING"
                )
            layer.values[key] = TOP_LEVEL[key].validate(value, where=where)
            layer.origins[key] = f"{COMMAND_LINE} (-o {option})"
        else:
            layer.tables.setdefault(plugin, {})[setting] = value
    return layer


_PACKAGE = str(Path(__file__).resolve().parents[1])  # pyframe/


def _line_of(path: Path, table: str) -> int:
    """The line of ``[table]`` in a TOML file (1 when it cannot be found)."""
    pattern = re.compile(rf"^[ \t]*\[[ \t]*{re.escape(table)}[ \t]*\]", re.M)
    try:
        text = path.read_text()
    except OSError:
        return 1
    m = pattern.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else 1


def warn_user(
    message: str,
    category: type[Warning],
    *,
    path: Path | None = None,
    table: str | None = None,
    lineno: int | None = None,
    caller_first: bool = False,
) -> None:
    """Warns at the user's file: the line of ``[table]`` (or ``lineno``) in ``path`` (a config file, a plugin's
    file) when given, else the first frame of the call stack outside pyframe, runpy and the import machinery (the
    user's ``import pyframe`` or call); with no such frame (``pyframe run``, ``python -c``) at the config file read,
    or ``pyframe`` itself, never at ``sys:1``."""
    if path is None or caller_first:
        frame = sys._getframe(1)
        while frame is not None and _not_users(frame.f_code.co_filename):
            frame = frame.f_back
        if frame is not None:  # explicit: warn()'s stacklevel skips import frames its own way (that gave sys:1)
            g = frame.f_globals
            warnings.warn_explicit(message, category, filename=frame.f_code.co_filename, lineno=frame.f_lineno,
                                   module=g.get("__name__"), registry=g.setdefault("__warningregistry__", {}),
                                   module_globals=g)  # fmt: skip
            return
        path = path or _last_config_file
        if path is None:
            warnings.warn_explicit(message, category, filename=_PACKAGE, lineno=1, module="pyframe.config")
            return
    if lineno is None:
        lineno = _line_of(path, table) if table else 1
    warnings.warn_explicit(message, category, filename=str(path), lineno=lineno, module="pyframe.config")


_RUNPY = str(Path(__import__("runpy").__file__).resolve())
_last_config_file: Path | None = None  # the last configuration file read_layers read


def _not_users(filename: str) -> bool:
    return filename.startswith((_PACKAGE, "<frozen")) or filename == _RUNPY
