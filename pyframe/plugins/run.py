"""``pyframe run``: runs a script (or ``-m module``) as ``python`` would, and adds what pytest's runner adds.

``pyframe run [-p NAME | -p no:NAME]... [-o KEY=VALUE]... [--trace[=FILE]] [--durations[=N]] SCRIPT [ARGS...]``
(or ``-m MODULE [ARGS...]``; also ``python -m pyframe run ...``). The script sees the ``sys.argv``, ``__main__``
and ``sys.path[0]`` that ``python SCRIPT ARGS`` gives it, and the command exits with its exit status (``sys.exit``'s
code; 1 with the usual traceback for an uncaught exception). Around it, on stderr: the ``plugins:`` header line
first, and at exit the plugins' summary, the trace (``--trace``) and the per-plugin durations (``--durations``).

A bad command line (an unknown plugin in ``-p``, an ``-o`` without ``=``, an unknown key, a value of the wrong
type) and a broken configuration are one line on stderr and exit status 2; the script does not run.
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
from dataclasses import dataclass, field
from typing import Any

__all__ = ["main", "parse"]

EXIT_USAGE = 2
USAGE = (
    "usage: pyframe run [-p NAME | -p no:NAME]... [-o KEY=VALUE]... [--trace[=FILE]] [--durations[=N]]\n"
    "                   (SCRIPT | -m MODULE) [ARGS...]"
)
HELP = f"""{USAGE}

Run a script (or -m module) as python would, with the plugins' header, summary, -p/-o, --trace, --durations:
the same sys.argv, __main__ and exit status; the plugins' header line first and their summary at exit, on stderr.

options:
  -p NAME          enable plugin NAME for this run (also an importable module, as pytest's -p)
  -p no:NAME       disable plugin NAME for this run
  -o KEY=VALUE     a setting for this run: PLUGIN.SETTING=VALUE (e.g. grad-clipper.max_value=0.5) or a
                   top-level key (e.g. strict_plugins=true); VALUE is read as TOML, else as a string;
                   validated like the config files, shown by `pyframe config` as from "command line"
  --trace[=FILE]   record what each plugin changed (pyframe.plugins.trace()); print it at exit, or write
                   it to FILE as JSON
  --durations[=N]  print the time spent in each plugin's hooks at exit, slowest first (N: only the N
                   slowest; 0 or none: all)
  -m MODULE        run library module MODULE as a script
  -h, --help       show this help
"""


DESCRIPTION = HELP.split("\n\n", 2)[1]


def add_arguments(parser: Any) -> None:
    """``pyframe run``'s parser (see pyframe/__main__.py): every argument after ``run`` is handed to ``parse`` as
    it is, since the script's own options follow the script and must not be read as ``run``'s."""
    import argparse

    parser.prefix_chars = "\0"  # no argument is an option for argparse here, -h included (parse() handles it)
    parser.add_argument("argv", nargs=argparse.REMAINDER, help="[options] SCRIPT|-m MODULE [ARGS...]")


def run(args: Any) -> int:
    """The ``pyframe run`` command (``Command(module=...)`` protocol of pyframe/__main__.py)."""
    return main(args.argv)


class UsageError(ValueError):
    """A malformed ``pyframe run`` command line."""


@dataclass
class Options:
    enable: list[str] = field(default_factory=list)
    disable: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    trace: bool = False
    trace_file: str | None = None
    durations: int | None = None  # None: off; 0: all
    script: str | None = None
    module: str | None = None
    args: list[str] = field(default_factory=list)


def parse(argv: list[str]) -> Options:
    """``pyframe run``'s arguments: options first, then the script (or ``-m MODULE``); everything after the
    script belongs to it."""
    o = Options()
    i = 0

    def value(flag: str) -> str:
        nonlocal i
        a = argv[i]
        if len(a) > len(flag):  # -pNAME, -oKEY=VALUE, -mMODULE
            return a[len(flag) :]
        if i + 1 >= len(argv):
            raise UsageError(f"{flag} expects a value")
        i += 1
        return argv[i]

    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            raise SystemExit(print(HELP) or 0)
        if a.startswith("-p"):
            name = value("-p").strip()
            if name.startswith("no:"):
                if not name[3:]:
                    raise UsageError("-p no: expects a plugin name (-p no:NAME)")
                o.disable.append(name[3:])
            elif not name:
                raise UsageError("-p expects a plugin name")
            else:
                o.enable.append(name)
        elif a.startswith("-o"):
            o.options.append(value("-o"))
        elif a == "--trace" or a.startswith("--trace="):
            o.trace = True
            if a.startswith("--trace="):
                o.trace_file = a.split("=", 1)[1] or None
        elif a == "--durations" or a.startswith("--durations="):
            text = a.split("=", 1)[1] if "=" in a else "0"
            try:
                o.durations = int(text)
            except ValueError:
                raise UsageError(f"--durations={text}: expected a number of entries (0: all)") from None
            if o.durations < 0:
                raise UsageError(f"--durations={text}: expected 0 or more")
        elif a.startswith("-m"):
            o.module = value("-m")
            o.args = argv[i + 1 :]
            return o
        elif a == "--":
            if i + 1 >= len(argv):
                raise UsageError("a script to run is required after --")
            o.script, o.args = argv[i + 1], argv[i + 2 :]
            return o
        elif a.startswith("-") and a != "-":
            raise UsageError(f"unknown option {a!r} (options come before the script; see pyframe run --help)")
        else:
            o.script, o.args = a, argv[i + 1 :]
            return o
        i += 1
    raise UsageError("a script (or -m MODULE) to run is required")


def _setup(opts: Options) -> Any:
    """Applies ``-p``/``-o`` (reloading the configuration with the command-line layer); returns the plugins
    package. Raises the configuration error that stops the run."""
    import pyframe

    if pyframe._startup_error is not None:
        raise pyframe._startup_error
    from pyframe import plugins
    from pyframe.plugins import config

    manager = plugins._manager
    manager.command_line = config.command_line_layer(opts.enable, opts.disable, opts.options)
    manager.load()
    for table, values in manager.command_line.tables.items():  # keys of a plugin that is off: checked too
        rec = manager._require(table)
        if rec.declared is not None:
            for key in values:
                if key not in rec.declared:
                    raise plugins.PluginConfigError(
                        f"command line: -o {table}.{key}: unknown setting of {manager.describe(rec)}"
                        f"{plugins.settings.did_you_mean(key, rec.declared)}; allowed keys: "
                        f"{', '.join(rec.declared) or '(none)'}"
                    )
    return plugins


def _exit_code(e: SystemExit) -> int:
    """What ``python`` exits with for ``sys.exit(code)`` (a non-integer code is printed and gives 1)."""
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def _user_traceback(exc: BaseException) -> Any:
    """``exc``'s traceback without this runner's and runpy's frames: the script's own, as python prints it."""
    tb = exc.__traceback__
    skip = (os.path.abspath(__file__), os.path.abspath(runpy.__file__))
    while tb is not None and (
        os.path.abspath(tb.tb_frame.f_code.co_filename) in skip or tb.tb_frame.f_code.co_filename.startswith("<frozen")
    ):
        tb = tb.tb_next
    return tb


def _run_target(opts: Options) -> None:
    if opts.module is not None:
        sys.argv = [opts.module, *opts.args]  # runpy sets argv[0] to the module's file
        sys.path[0] = os.getcwd()  # python -m puts the current directory first
        runpy.run_module(opts.module, run_name="__main__", alter_sys=True)
    else:
        script = opts.script
        path = os.path.abspath(script)
        sys.argv = [script, *opts.args]
        sys.path[0] = os.path.dirname(path)  # python script.py puts the script's folder first
        if not os.path.isfile(path):  # a folder or zip file with a __main__.py
            runpy.run_path(script, run_name="__main__")
            sys.argv[0] = script
            return
        _exec_main(path)


def _exec_main(path: str) -> None:
    """Runs the file at ``path`` as python runs a script: a fresh ``__main__`` module whose ``__file__`` is the
    absolute path (so tracebacks read the same), ``sys.argv`` left as given (runpy would rewrite ``argv[0]``)."""
    import builtins
    import importlib.machinery
    import types

    with open(path, "rb") as f:
        source = f.read()
    code = compile(source, path, "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=path,
        __builtins__=builtins,
        __cached__=None,
        __spec__=None,
        __loader__=importlib.machinery.SourceFileLoader("__main__", path),
    )
    sys.modules["__main__"] = main  # as python's: the script's classes pickle as __main__.X
    exec(code, main.__dict__)


def _missing_target(opts: Options) -> str | None:
    """python's own message for a script or module that is not there, or None."""
    if opts.module is not None:
        import importlib.util

        saved = sys.path[0]
        sys.path[0] = os.getcwd()
        try:
            found = importlib.util.find_spec(opts.module) is not None
        except (ImportError, ValueError):
            found = False
        finally:
            sys.path[0] = saved
        return None if found else f"No module named {opts.module}"
    if not os.path.exists(opts.script):
        return f"can't open file {os.path.abspath(opts.script)!r}: [Errno 2] No such file or directory"
    return None


def main(argv: list[str]) -> int:
    """``pyframe run ARGS``: returns the exit status."""
    try:
        opts = parse(argv)
    except UsageError as e:
        print(f"pyframe run: error: {e}\n{USAGE}", file=sys.stderr)
        return EXIT_USAGE
    try:
        plugins = _setup(opts)
    except (ValueError, RuntimeError) as e:
        if type(e).__name__ not in ("PluginConfigError", "PluginError") and "PYFRAME_GEMM" not in str(e):
            raise
        print(f"pyframe run: configuration error: {e}", file=sys.stderr)
        return EXIT_USAGE
    missing = _missing_target(opts)
    if missing is not None:
        print(f"pyframe run: {missing}", file=sys.stderr)
        return 1 if opts.module is not None else 2
    print(plugins.report_header(), file=sys.stderr)
    sys.stderr.flush()
    tracer = plugins.trace() if (opts.trace or opts.durations is not None) else None
    if tracer is not None:
        tracer.__enter__()
    code = 0
    try:
        _run_target(opts)
    except SystemExit as e:
        code = _exit_code(e)
    except KeyboardInterrupt as e:
        tb = _user_traceback(e)
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        code = 130
    except BaseException as e:  # noqa: BLE001 - printed as python prints an uncaught exception
        tb = _user_traceback(e)
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        code = 1
    finally:
        if tracer is not None:
            tracer.stop()
        _report(plugins, opts, tracer)
    return code


def _report(plugins: Any, opts: Options, tracer: Any) -> None:
    """At exit, on stderr: the plugins' summary, then the trace and the durations when asked for."""
    out = sys.stderr
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    print(plugins.format_summary(), file=out)
    if tracer is None:
        return
    if opts.trace:
        if opts.trace_file:
            tracer.write(opts.trace_file)
            print(f"plugin trace written to {opts.trace_file}", file=out)
        else:
            print(tracer.report(), file=out)
    if opts.durations is not None:
        print(tracer.durations_table(opts.durations), file=out)
