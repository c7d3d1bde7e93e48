"""float32 matmul: pyframe beside NumPy and torch (when installed), ratios in one table.

Small products (M, N, K in 16..128, the projections of a transformer at small batch) and
vector operands are timed per call in worker processes, one library per process, the
libraries alternating over several rounds at 1 and at 2 threads; each figure is the median
of the rounds' best times (other processes share the machine: the load is printed).
Large products are GFLOP/s in this process. Targets: small shapes at least torch's speed;
at least 0.9x NumPy's GFLOP/s for n >= 512 and 0.75x at n = 256.

    python benchmarks/bench_matmul.py [--rounds 5] [--threads 1 2] [--small-only | --large-only]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

SMALL = [(16, 16, 16), (32, 32, 32), (40, 50, 40), (64, 64, 64), (128, 128, 128)]
# (name, shape of a, shape of b): vector operands
VECTORS = [("dot 2000", (2000,), (2000,)), ("mv 128x2000 @ 2000", (128, 2000), (2000,)),
           ("vm 2000 @ 2000x128", (2000,), (2000, 128))]  # fmt: skip
LIBS = ("pyframe", "numpy", "torch")


def _cases():
    for m, k, n in SMALL:
        yield f"{m}x{k} @ {k}x{n}", (m, k), (k, n)
        if (m, k, n) == (40, 50, 40):  # x @ W^T as a Linear layer computes it
            yield f"{m}x{k} @ ({n}x{k})^T", (m, k), (n, k)
    yield from VECTORS


def worker(lib: str, threads: int) -> None:
    """Prints {case: best microseconds per call} for one library at `threads` threads."""
    import numpy as np
    from _harness import best_time

    rng = np.random.default_rng(0)
    if lib == "pyframe":
        import pyframe as pf

        pf.set_num_threads(threads)
        conv = pf.from_numpy
    elif lib == "torch":
        import torch

        torch.set_num_threads(threads)
        conv = torch.from_numpy
    else:
        conv = np.asarray  # NumPy's threads are OpenBLAS's, set by the parent's environment
    out = {}
    for name, sa, sb in _cases():
        a = conv(rng.standard_normal(sa).astype(np.float32))
        b = conv(rng.standard_normal(sb).astype(np.float32))
        if "^T" in name:
            b = b.T
        out[name] = best_time(lambda a=a, b=b: a @ b, min_time=0.1) * 1e6
    print(json.dumps(out))


def available(lib: str) -> bool:
    if lib != "torch":
        return True
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def small(rounds: int, threads_list: list[int]) -> None:
    from _harness import table

    libs = [lib for lib in LIBS if available(lib)]
    here = os.path.dirname(os.path.abspath(__file__))
    for threads in threads_list:
        env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads))
        runs: dict[str, list[dict[str, float]]] = {lib: [] for lib in libs}
        load = []
        for r in range(rounds):
            load.append(os.getloadavg()[0])
            for lib in libs[r % len(libs) :] + libs[: r % len(libs)]:  # a different library first each round
                proc = subprocess.run([sys.executable, __file__, "--worker", lib, str(threads)], env=env,
                                      capture_output=True, text=True, check=True, cwd=here)  # fmt: skip
                runs[lib].append(json.loads(proc.stdout.strip().splitlines()[-1]))
        rows = []
        for name, _, _ in _cases():
            rows.append((name, {lib: statistics.median(run[name] for run in runs[lib]) for lib in libs}))
        title = (f"float32 small matmul, {threads} thread(s): median of {rounds} rounds' best us per call "
                 f"(lower is better; load average {min(load):.1f}-{max(load):.1f})")  # fmt: skip
        table(title, "us", rows, higher_is_better=False)


def large() -> None:
    from _harness import best_time, table, torch

    import pyframe as pf

    rows = []
    for n in (256, 512, 1024, 2048):
        a, b = pf.rand(n, n), pf.rand(n, n)
        an, bn = a.numpy().copy(), b.numpy().copy()
        flops = 2.0 * n**3
        r = {"pyframe": flops / best_time(lambda: a @ b) / 1e9}
        r["numpy"] = flops / best_time(lambda: an @ bn) / 1e9
        if torch is not None:
            ta, tb = torch.from_numpy(an), torch.from_numpy(bn)
            r["torch"] = flops / best_time(lambda: ta @ tb) / 1e9
        rows.append((f"matmul {n}x{n}x{n}", r))
    table(f"float32 matmul (higher is better; load average {os.getloadavg()[0]:.1f})", "GFLOP/s", rows,
          higher_is_better=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=2, metavar=("LIB", "THREADS"), help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    part = ap.add_mutually_exclusive_group()
    part.add_argument("--small-only", action="store_true")
    part.add_argument("--large-only", action="store_true")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]))
        return
    if not args.large_only:
        small(args.rounds, args.threads)
    if not args.small_only:
        import pyframe as pf

        pf.show_config()
        large()


if __name__ == "__main__":
    main()
