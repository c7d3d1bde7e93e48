"""The ``pyframe`` command (also ``python -m pyframe``)."""

from __future__ import annotations

import argparse
import json
import sys


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in [header, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _plugins(as_json: bool) -> None:
    import pyframe

    infos = pyframe.plugins.list()
    if as_json:
        records = [
            {
                "name": i.name,
                "version": i.version,
                "source": i.source,
                "distribution": i.distribution,
                "enabled": i.enabled,
                "reason": i.reason,
                "hooks": list(i.hooks),
                "error": i.error,
                "settings": dict(i.settings),
            }
            for i in infos
        ]
        print(json.dumps(records, indent=2))
        return
    if not infos:
        print("no pyframe plugins installed (entry-point group 'pyframe')")
        return
    rows = [
        [
            i.name,
            i.version or "-",
            i.source,
            "yes" if i.enabled else "no",
            i.reason,
            ", ".join(h.removeprefix("pyframe_") for h in i.hooks)
            or ("-" if i.source != "entry point" else "(not imported)"),
        ]
        for i in infos
    ]
    print(_table(rows, ["name", "version", "source", "enabled", "why", "hooks"]))


def _config(as_json: bool) -> None:
    import pyframe

    cfg = pyframe.plugins.effective_config()
    if as_json:
        print(json.dumps(cfg, indent=2))
        return
    files = cfg["files"]
    print("config files read: " + (", ".join(files) if files else "(none)"))
    rows = [[key, json.dumps(v["value"]), v["source"]] for key, v in cfg["values"].items()]
    print(_table(rows, ["key", "value", "from"]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pyframe", description="pyframe command-line tools")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("show-config", help="compiler, OpenMP, threads and the GEMM path of the C core")
    sub.add_parser("version", help="print pyframe's version")
    p = sub.add_parser("plugins", help="every plugin: version, source, enabled or not and why, hooks")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p = sub.add_parser("config", help="the effective plugin configuration and where each value came from")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)

    import pyframe

    if args.command == "show-config":
        pyframe.show_config()
    elif args.command == "version":
        print(pyframe.__version__)
    elif args.command == "plugins":
        _plugins(args.json)
    elif args.command == "config":
        _config(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
