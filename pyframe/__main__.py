"""The ``pyframe`` command (also ``python -m pyframe``, which behaves the same). See ``docs/cli.md``.

Every subcommand is one row of ``COMMANDS``: its name, the one-line summary ``pyframe --help`` lists, the description
atop ``pyframe NAME --help``, a function adding its arguments and one running it. A subcommand that lives in a module
of its own is one row naming that module (``Command("NAME", "summary", module="pyframe.x")``); the module defines
``DESCRIPTION``, ``add_arguments(parser)`` and ``run(args) -> int`` and is imported only when that subcommand runs.

A configuration error (a bad key or value in ``pyframe.toml``, an unknown name in ``PYFRAME_PLUGINS``, a broken TOML
file, a bad ``PYFRAME_GEMM``) is printed as one message on stderr and the command exits with status 2: these
commands exist to diagnose exactly such problems, so they must not end in a traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import importlib
import json
import os
import shutil
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

EXIT_CONFIG_ERROR = 2

# why the line is worth a message rather than a traceback; looked up by name because the classes live in the
# package whose import may be what failed
_CONFIG_ERRORS = ("PluginConfigError", "PluginError")


@dataclass(frozen=True)
class Command:
    """One subcommand. ``run`` returns the exit status (None means 0). ``needs_config``: pyframe's configuration
    must have been read without error first (a config error then exits with status 2 before ``run``)."""

    name: str
    summary: str
    description: str = ""
    run: Callable[[argparse.Namespace], int | None] | None = None
    arguments: Callable[[argparse.ArgumentParser], None] | None = None
    module: str | None = None  # defines DESCRIPTION, add_arguments(parser) and run(args); imported when selected
    needs_config: bool = True

    def resolved(self) -> Command:
        if self.module is None:
            return self
        m = importlib.import_module(self.module)
        return dataclasses.replace(
            self,
            description=getattr(m, "DESCRIPTION", self.summary),
            run=m.run,
            arguments=getattr(m, "add_arguments", None),
            module=None,
        )


# ---- tables that fit the terminal --------------------------------------------------------------------------------


def _terminal_width() -> int:
    """``COLUMNS`` if set, else the terminal's width, else 80 (output to a pipe or file), as pytest does."""
    return max(shutil.get_terminal_size((80, 24)).columns, 40)


def _table(
    rows: list[list[str]],
    header: list[str],
    wrap: tuple[str, ...] = (),
    optional: tuple[str, ...] = (),
    below: str | None = None,
    width: int | None = None,
) -> str:
    """Columns separated by two spaces, fitted to ``width`` (the terminal's): the columns named in ``wrap`` narrow,
    in that order, and their cells wrap onto more lines, so one long cell makes its own row taller, never every row
    wider. A wrapped column keeps words of up to 32 characters whole. If that is still too wide, the columns named
    in ``optional`` are left out (in that order), then longer words break. The column named ``below`` (a
    description) is not a column: it is printed under its row, indented, across the whole width."""
    width = _terminal_width() if width is None else width
    rows = [[str(c) for c in r] for r in rows]
    under = [""] * len(rows)
    if below is not None:
        j = header.index(below)
        under = [r.pop(j) for r in rows]
        header = header[:j] + header[j + 1 :]
    keep = list(range(len(header)))

    def fit(columns: list[int], floor_cap: int) -> tuple[list[int], bool]:
        widths = {i: max(len(r[i]) for r in [header, *rows]) for i in columns}
        narrow = [i for i in columns if header[i] in wrap]
        longest = {i: max(len(w) for r in rows for w in [*r[i].split(), ""]) for i in narrow}
        floor = {i: max(len(header[i]), min(floor_cap, longest[i])) for i in narrow}
        while sum(widths.values()) + 2 * (len(columns) - 1) > width:
            candidates = [i for i in narrow if widths[i] > floor[i]]
            if not candidates:
                return [widths[i] for i in columns], False
            widths[min(candidates, key=lambda i: wrap.index(header[i]))] -= 1
        return [widths[i] for i in columns], True

    widths, fits = fit(keep, 32)
    for name in optional:
        if fits:
            break
        keep = [i for i in keep if header[i] != name]
        widths, fits = fit(keep, 32)
    for cap in (24, 16, 12):  # long words break; past 12, the terminal wraps what is left
        if not fits:
            widths, fits = fit(keep, cap)

    def lines_of(row: list[str]) -> list[str]:
        cells = [
            (textwrap.wrap(row[i], w) or [""]) if header[i] in wrap and len(row[i]) > w else [row[i]]
            for i, w in zip(keep, widths, strict=True)
        ]
        return [
            "  ".join((c[k] if k < len(c) else "").ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
            for k in range(max(len(c) for c in cells))
        ]

    out = lines_of(header)
    out.append("  ".join("-" * w for w in widths))
    for row, text in zip(rows, under, strict=True):
        out.extend(lines_of(row))
        out.extend(textwrap.wrap(text, width, initial_indent=" " * 4, subsequent_indent=" " * 4))
    return "\n".join(out)


# ---- version ------------------------------------------------------------------------------------------------------


def _installed_plugins() -> list[tuple[str, str, str, str]]:
    """(name, version, distribution, where) of every entry point in group ``pyframe``, read from package metadata
    only: nothing is imported and no configuration is read, so this works when the configuration is broken."""
    from importlib.metadata import entry_points

    found: dict[str, tuple[str, str, str, str]] = {}
    for ep in entry_points(group="pyframe"):
        dist = getattr(ep, "dist", None)
        version = dist.version if dist is not None else "?"
        name = dist.metadata["Name"] if dist is not None else "?"
        where = str(dist.locate_file("")) if dist is not None else "?"
        found.setdefault(ep.name, (ep.name, version, name, where))  # the first on sys.path wins, as for imports
    return sorted(found.values())


def _version_text() -> str:
    """Like ``pytest --version --version``: the version, where pyframe is imported from, the interpreter, and the
    installed plugins with their versions and locations (whether they are enabled is ``pyframe plugins``)."""
    from pyframe._version import __version__

    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__init__.py")
    v = sys.version_info
    lines = [f"pyframe {__version__}, imported from {here} (Python {v.major}.{v.minor}.{v.micro}, {sys.executable})"]
    plugins = _installed_plugins()
    if not plugins:
        lines.append("installed plugins: none (entry-point group 'pyframe')")
    else:
        lines.append("installed plugins (entry-point group 'pyframe'):")
        lines += [f"  {name}-{version} ({dist}) at {where}" for name, version, dist, where in plugins]
    return "\n".join(lines)


def _cmd_version(args: argparse.Namespace) -> int:
    print(_version_text())
    return 0


# ---- plugins, config, show-config ---------------------------------------------------------------------------------


def _plugin_record(i: Any) -> dict[str, Any]:
    return {
        "name": i.name,
        "version": i.version,
        "source": i.source,
        "distribution": i.distribution,
        "enabled": i.enabled,
        "reason": i.reason,
        "hooks": list(i.hooks) if i.error is None else [],
        "error": i.error,
        "settings": dict(i.settings),
        "idle": i.idle,
    }


def _json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _cmd_plugins(args: argparse.Namespace) -> int:
    import pyframe

    infos = pyframe.plugins.list()
    if args.json:
        print(json.dumps([_plugin_record(i) for i in infos], indent=2))
        return 0
    if not infos:
        print("no pyframe plugins installed (entry-point group 'pyframe')")
        return 0

    def hooks(i: Any) -> str:
        if i.error is not None:
            return "-"  # a plugin that failed runs no hook, whatever it defines
        names = ", ".join(h.removeprefix("pyframe_") for h in i.hooks)
        return names or ("(not imported)" if i.source != "built-in" else "-")

    def why(i: Any) -> str:
        return f"{i.reason}; idle with its settings: its module hooks do not run" if i.idle else i.reason

    rows = [
        [i.name, i.version or "-", i.distribution or "-", i.source, "yes" if i.enabled else "no", why(i), hooks(i)]
        for i in infos
    ]
    header = ["name", "version", "distribution", "source", "enabled", "why", "hooks"]
    print(_table(rows, header, wrap=("hooks", "why", "distribution"), optional=("distribution", "source")))
    return 0


def _kind(entry: dict[str, Any]) -> str:
    """A setting's type with its bounds in one cell (``float > 0.0``); ``?`` when unknown. Choices are listed under
    the row, with the help: they can be long."""
    if entry.get("type") is None:
        return "?"
    limits = entry.get("limits")
    return entry["type"] if not limits or limits.startswith("one of ") else f"{entry['type']} {limits}"


def _cmd_config(args: argparse.Namespace) -> int:
    import pyframe

    cfg = pyframe.plugins.effective_config()
    if args.json:
        print(json.dumps(cfg, indent=2))
        return 0
    files = cfg["files"]
    print("config files read: " + (", ".join(files) if files else "(none)"))
    rows = []
    for key, v in cfg["values"].items():
        known = v.get("type") is not None
        about = v.get("help", "")
        if v.get("plugin_enabled") is False:
            about = f"(plugin {key.split('.')[0]} not enabled: never imported, so this value is not checked)"
        limits = v.get("limits") or ""
        if limits.startswith("one of "):
            about = f"{about} ({limits})" if about else limits
        group = [[key, json.dumps(v["value"]), _kind(v), json.dumps(v.get("default")) if known else "?", v["source"]]]
        for layer in v.get("overridden", []):  # lower layers that also set this key
            group.append(["", json.dumps(layer["value"]), "", "", f"{layer['source']} (overridden)"])
        for row in group:
            row.append("")
        group[-1][-1] = about  # printed under the key's last row
        rows += group
    header = ["key", "value", "type", "default", "from", "help"]
    print(_table(rows, header, wrap=("from", "value", "type", "default"), below="help"))
    return 0


def _cmd_show_config(args: argparse.Namespace) -> int:
    import pyframe

    pyframe.show_config()
    return 0


COMMANDS: list[Command] = [
    Command(
        "plugins",
        "every plugin: version, distribution, source, enabled or not and why, hooks",
        "List every plugin pyframe knows: the built-in ones, those installed (entry-point group 'pyframe') and those "
        "named in PYFRAME_PLUGINS. For each: its version and distribution, where it came from, whether it is enabled "
        "and which file, variable or call decided that, and the hooks it implements (a disabled plugin is never "
        "imported, so its hooks show as '(not imported)'). The table fits the terminal (COLUMNS).",
        _cmd_plugins,
        _json_argument,
    ),
    Command(
        "config",
        "the effective configuration: values, types, defaults, limits, and where each value came from",
        "Show the effective configuration: the config files read, every top-level key and every plugin setting with "
        "its value, type and limits, default, the file, variable or call that set it (and the lower layers it "
        "overrides), and its help. The settings a disabled plugin's tables set are listed too, unchecked (the "
        "plugin was never imported, so what it accepts is unknown).",
        _cmd_config,
        _json_argument,
    ),
    Command(
        "show-config",
        "compiler, OpenMP, threads and the GEMM path of the C core",
        "Show how the C core was built and what it uses here: compiler, OpenMP, thread count, the GEMM micro-kernels "
        "this CPU supports and the one in use (PYFRAME_GEMM chooses).",
        _cmd_show_config,
    ),
    Command(
        "version",
        "pyframe's version, where it is imported from, and the installed plugins (same as --version)",
        "Print pyframe's version, where it is imported from, the Python running it, and every installed plugin "
        "(entry-point group 'pyframe') with its version and location. Reads no configuration, so it works when "
        "the configuration is broken.",
        _cmd_version,
        needs_config=False,
    ),
    Command(
        "run",
        "run a script as python would, with its plugins shown and controlled",
        "Run a script (or -m module) as python would, with the plugins' header, summary, -p/-o, --trace, --durations",
        module="pyframe.plugins.run",
    ),
]


# ---- the parser and main ------------------------------------------------------------------------------------------

_EPILOG = """\
examples:
  pyframe plugins                    which plugins are loaded, and why
  PYFRAME_DISABLE_PLUGINS=nan-detector pyframe plugins
  pyframe config --json              the effective configuration as JSON
  pyframe COMMAND --help             what a command prints and its options

Documentation: docs/cli.md (configuration: docs/config.md, plugins: docs/plugins.md)."""


def _parser(selected: Command | None = None) -> argparse.ArgumentParser:
    """The parser; only the selected subcommand's module (if it has one) is imported, for its arguments."""
    parser = argparse.ArgumentParser(
        prog="pyframe",
        description="pyframe's command-line tools: inspect the plugins, the configuration and the C core.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="store_true", help="print the version, where pyframe is imported from, the plugins"
    )
    sub = parser.add_subparsers(dest="command", title="commands", metavar="COMMAND")
    for cmd in COMMANDS:
        if selected is not None and cmd.name == selected.name:
            cmd = selected
        p = sub.add_parser(cmd.name, help=cmd.summary, description=cmd.description or cmd.summary)
        if cmd.arguments is not None:
            cmd.arguments(p)
    return parser


def _command_word(argv: list[str]) -> str | None:
    """The subcommand as typed: the first argument that is not an option (the global options take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def _unknown_command(parser: argparse.ArgumentParser, word: str) -> None:
    names = [c.name for c in COMMANDS]
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    if not close:  # a prefix or a singular/plural slip: "plugin", "conf"
        close = [n for n in names if n.startswith(word) or word.startswith(n)][:1]
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    parser.error(f"unknown command '{word}'{hint}; commands: {', '.join(names)}")


def _cwd_importable() -> None:
    """The console script as ``python -m pyframe``: that puts the current directory first on ``sys.path`` (so
    ``PYFRAME_PLUGINS=localplug`` imports ./localplug.py); the script pip generates puts its own folder there. When
    the plugins failed to load for want of it, they are loaded again with it."""
    import pyframe

    cwd = os.getcwd()
    if any(os.path.abspath(p or os.curdir) == cwd for p in sys.path):
        return
    sys.path.insert(0, cwd)
    error = pyframe._startup_error
    if error is not None and type(error).__name__ in _CONFIG_ERRORS:
        try:
            pyframe.plugins.reload_config()
        except (ValueError, RuntimeError) as e:
            pyframe._startup_error = e
        else:
            pyframe._startup_error = None


def main(argv: list[str] | None = None) -> int:
    if argv is None:  # the command itself (console script or python -m), not a call from Python
        argv = sys.argv[1:]
        _cwd_importable()
    word = _command_word(argv)
    by_name = {c.name: c for c in COMMANDS}
    if word is not None and word not in by_name:
        _unknown_command(_parser(), word)
    selected = by_name[word].resolved() if word is not None else None
    parser = _parser(selected)
    args = parser.parse_args(argv)
    if args.version and selected is None:
        print(_version_text())
        return 0
    if selected is None:  # bare `pyframe`: what it can do, as `git` and `pip` print
        parser.print_help()
        return 0
    try:
        if selected.needs_config:
            import pyframe

            if pyframe._startup_error is not None:
                raise pyframe._startup_error
        status = selected.run(args)
    except BrokenPipeError:  # `pyframe plugins | head`: the reader left; no traceback, as `cat` does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, RuntimeError) as e:
        if type(e).__name__ not in _CONFIG_ERRORS and "PYFRAME_GEMM" not in str(e):
            raise
        print(f"pyframe: configuration error: {e}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    return 0 if status is None else status


if __name__ == "__main__":
    sys.exit(main())
