"""The ``pyframe`` command (also ``python -m pyframe``). See ``docs/cli.md``.

A configuration error (a bad key or value in ``pyframe.toml``, an unknown name in ``PYFRAME_PLUGINS``, a broken TOML
file, a bad ``PYFRAME_GEMM``) is printed as one message on stderr and the command exits with status 2: these
commands exist to diagnose exactly such problems, so they must not end in a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

EXIT_CONFIG_ERROR = 2

# why the line is worth a message rather than a traceback; looked up by name because the classes live in the
# package whose import may be what failed
_CONFIG_ERRORS = ("PluginConfigError", "PluginError")


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _version() -> str:
    """pyframe's version without importing pyframe (so ``--version`` works even when the config is broken)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pyframe-core")
    except PackageNotFoundError:  # run from a source tree that is not installed
        import pyframe

        return pyframe.__version__


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
    }


def _plugins(as_json: bool) -> None:
    import pyframe

    infos = pyframe.plugins.list()
    if as_json:
        print(json.dumps([_plugin_record(i) for i in infos], indent=2))
        return
    if not infos:
        print("no pyframe plugins installed (entry-point group 'pyframe')")
        return

    def hooks(i: Any) -> str:
        if i.error is not None:
            return "-"  # a plugin that failed runs no hook, whatever it defines
        names = ", ".join(h.removeprefix("pyframe_") for h in i.hooks)
        return names or ("(not imported)" if i.source != "built-in" else "-")

    rows = [
        [i.name, i.version or "-", i.distribution or "-", i.source, "yes" if i.enabled else "no", i.reason, hooks(i)]
        for i in infos
    ]
    print(_table(rows, ["name", "version", "distribution", "source", "enabled", "why", "hooks"]))


def _config(as_json: bool) -> None:
    import pyframe

    cfg = pyframe.plugins.effective_config()
    if as_json:
        print(json.dumps(cfg, indent=2))
        return
    files = cfg["files"]
    print("config files read: " + (", ".join(files) if files else "(none)"))
    rows = []
    for key, v in cfg["values"].items():
        rows.append([key, json.dumps(v["value"]), v["source"], v.get("help", "")])
        for layer in v.get("overridden", []):  # lower layers that also set this key
            rows.append(["", json.dumps(layer["value"]), f"{layer['source']} (overridden)", ""])
    print(_table(rows, ["key", "value", "from", "help"]))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyframe", description="pyframe command-line tools")
    parser.add_argument("--version", action="store_true", help="print pyframe's version and exit")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("show-config", help="compiler, OpenMP, threads and the GEMM path of the C core")
    sub.add_parser("version", help="print pyframe's version")
    p = sub.add_parser("plugins", help="every plugin: version, distribution, source, enabled or not and why, hooks")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p = sub.add_parser("config", help="the effective configuration, every layer that set each value, and help")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version or args.command == "version":
        print(_version())
        return 0
    if args.command is None:
        parser.error("a command is required: show-config, version, plugins or config")
    try:
        import pyframe

        if pyframe._startup_error is not None:
            raise pyframe._startup_error
        if args.command == "show-config":
            pyframe.show_config()
        elif args.command == "plugins":
            _plugins(args.json)
        elif args.command == "config":
            _config(args.json)
    except (ValueError, RuntimeError) as e:
        if type(e).__name__ not in _CONFIG_ERRORS and "PYFRAME_GEMM" not in str(e):
            raise
        print(f"pyframe: configuration error: {e}", file=sys.stderr)
        return EXIT_CONFIG_ERROR
    return 0


if __name__ == "__main__":
    sys.exit(main())
