"""The ``pyframe`` command (also ``python -m pyframe``)."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pyframe", description="pyframe command-line tools")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("show-config", help="compiler, OpenMP, threads and the GEMM path of the C core")
    sub.add_parser("version", help="print pyframe's version")
    args = parser.parse_args(argv)

    import pyframe

    if args.command == "show-config":
        pyframe.show_config()
    elif args.command == "version":
        print(pyframe.__version__)
    return 0


if __name__ == "__main__":
    sys.exit(main())
