"""Elementwise and reduction throughput over 1e7 float32 elements, and the cost of a tiny
(4-element) add: pyframe vs NumPy (and torch when installed), side by side in one run.

Targets: add, mul, exp, sum reach at least NumPy's throughput; a tiny add costs
no more than torch's; the 1e7 sum at or above torch's at the default (2) threads.
The table takes each library's best time in one process; ``--sum-rounds R`` also times the
sum in R rounds of fresh processes alternating pyframe and torch, and prints the medians
(the 1e7 sum is bound by memory and moves with everything else the machine does, so one
process's best says little). Usage: bench_elementwise.py [--sum-rounds R]
"""

import argparse
import os
import statistics
import subprocess
import sys

import numpy as np
from _harness import best_time, table, torch

import pyframe as pf

N = 10_000_000

# one round of one library: the median of 100 back-to-back x.sum() calls, in ms
_SUM_ROUND = """
import statistics, sys, time
lib = __import__(sys.argv[1])
x = lib.rand(10_000_000)
for _ in range(10):
    x.sum()
ts = []
for _ in range(100):
    t0 = time.perf_counter()
    x.sum()
    ts.append(time.perf_counter() - t0)
print(statistics.median(ts) * 1e3)
"""


def sum_rounds(rounds: int) -> None:
    """The 1e7 float32 sum in fresh processes, pyframe and torch alternating."""
    times: dict[str, list[float]] = {"pyframe": [], "torch": []}
    for _ in range(rounds):
        for lib in times:
            out = subprocess.run([sys.executable, "-c", _SUM_ROUND, lib], capture_output=True, text=True, check=True)
            times[lib].append(float(out.stdout))
    p, t = statistics.median(times["pyframe"]), statistics.median(times["torch"])
    print(f"\nsum 1e7 float32, median ms per call over {rounds} alternating processes (load {os.getloadavg()[0]:.2f})")
    for lib, ts in times.items():
        print(f"{lib:<10}" + " ".join(f"{v:.3f}" for v in ts))
    print(f"median: pyframe {p:.3f} ms, torch {t:.3f} ms; pyframe's time / torch's {p / t:.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sum-rounds", type=int, default=0)
    ns = ap.parse_args()
    x, y = pf.rand(N), pf.rand(N)
    xn, yn = x.numpy().copy(), y.numpy().copy()
    cases = {
        "add": (lambda: x + y, lambda: xn + yn, lambda a, b: a + b),
        "mul": (lambda: x * y, lambda: xn * yn, lambda a, b: a * b),
        "exp": (lambda: x.exp(), lambda: np.exp(xn), lambda a, b: a.exp()),
        "sum": (lambda: x.sum(), lambda: xn.sum(), lambda a, b: a.sum()),
    }
    tx = ty = None
    if torch is not None:
        tx, ty = torch.from_numpy(xn), torch.from_numpy(yn)
    rows = []
    for name, (fp, fn, ft) in cases.items():
        gbytes = N * 4 * (3 if name in ("add", "mul") else 2) / 1e9  # bytes moved, for GB/s
        r = {"pyframe": gbytes / best_time(fp), "numpy": gbytes / best_time(fn)}
        if torch is not None:
            r["torch"] = gbytes / best_time(lambda: ft(tx, ty))
        rows.append((f"{name} 1e7 float32", r))
    table("throughput over 1e7 float32 elements (higher is better)", "GB/s", rows, higher_is_better=True)

    a, b = pf.ones(4), pf.ones(4)
    an, bn = a.numpy().copy(), b.numpy().copy()
    r = {"pyframe": best_time(lambda: a + b, min_time=0.5) * 1e6, "numpy": best_time(lambda: an + bn) * 1e6}
    if torch is not None:
        ta, tb = torch.ones(4), torch.ones(4)
        r["torch"] = best_time(lambda: ta + tb, min_time=0.5) * 1e6
    table("tiny add, 4 float32 elements (lower is better)", "us", [("a + b", r)], higher_is_better=False)
    if ns.sum_rounds and torch is not None:
        del x, y, xn, yn, tx, ty  # the rounds' processes get the memory and caches to themselves
        sum_rounds(ns.sum_rounds)


if __name__ == "__main__":
    main()
