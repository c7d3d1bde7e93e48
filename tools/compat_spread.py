"""How stable each compared number of the compat programs (tests/compat/programs) is: ``python -m tools.compat_spread
[NAME ...]``.

A compared number must not move by a sizeable part of its tolerance when only the summation order changes, or the
comparison measures the machine rather than the framework (a long training run that amplifies rounding). Each
program runs as the test runs it (torch pinned to one thread, pyframe on one thread), then perturbed: torch on 2
threads, and pyframe with its portable GEMM kernel instead of the one this CPU picks. For every compared key the
table shows the largest difference from the pinned torch run, as a fraction of the tolerance the program declares;
a key above 0.1 is flagged. Needs torch; takes about a minute per program on a loaded 2-core machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

from tests.compat.test_compat import _TOLERANCE, PROGRAMS, as_pyframe, flatten, result, start

RUNS = {  # name -> (torch?, threads, extra environment)
    "torch, 1 thread (the oracle)": (True, 1, {}),
    "torch, 2 threads": (True, 2, {}),
    "pyframe": (False, 1, {}),
    "pyframe, portable GEMM": (False, 1, {"PYFRAME_GEMM": "portable"}),
}
FLAG = 0.1


def spread(program: Path) -> list[tuple[float, str, dict[str, float]]]:
    """(worst fraction of the tolerance, key, fraction per perturbed run) for each compared key, worst first."""
    source = program.read_text()
    m = _TOLERANCE.search(source)
    rtol, atol = (float(m.group(1)), float(m.group(2))) if m else (1e-4, 1e-5)
    outs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, (oracle, threads, env)) in enumerate(RUNS.items()):
            src = source if oracle else as_pyframe(source)
            proc = start(src, Path(tmp) / str(i), program.name, oracle=oracle, threads=threads, **env)
            outs[name] = flatten(result(proc, f"{program.name} ({name})"))
    reference = outs.pop(next(iter(RUNS)))
    rows = []
    for key, value in reference.items():
        if key.split(".")[-1].startswith("_") or isinstance(value, str | bool) or value is None:
            continue
        try:
            ref = np.asarray(value, dtype=float)
            allowed = atol + rtol * np.abs(ref)
            fractions = {
                n: float(np.max(np.abs(np.asarray(o[key], dtype=float) - ref) / allowed)) for n, o in outs.items()
            }
        except (TypeError, ValueError):  # ragged lists: compared element by element by the test, skipped here
            continue
        rows.append((max(fractions.values()), key, fractions))
    return sorted(rows, key=lambda r: -r[0])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="program names (default: all)")
    parser.add_argument("--keys", type=int, default=3, help="keys shown per program, worst first")
    args = parser.parse_args(argv)
    programs = [p for p in PROGRAMS if not args.names or p.stem in args.names]
    flagged = 0
    for program in programs:
        rows = spread(program)
        for worst, key, fractions in rows[: args.keys]:
            mark = "!!" if worst > FLAG else "  "
            flagged += worst > FLAG
            detail = ", ".join(f"{n}: {f:.2g}" for n, f in fractions.items())
            print(f"{mark} {program.stem:24s} {key:32s} {detail}", flush=True)
    print(f"{flagged} keys above {FLAG} of their tolerance" if flagged else f"every key within {FLAG} of its tolerance")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
