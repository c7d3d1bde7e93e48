"""Per-op cost of small ops, pyframe beside torch in one run (1 thread each).

What users feel in a training loop is the fixed cost of every small op: type promotion,
shape checks, descriptor building, allocation and autograd recording. Each case is timed
in rounds that alternate between the libraries, and the table shows each library's median
over the rounds. Target: every case within 1.25x of torch's time, and `w * x`
with grad no slower than torch's. Usage: bench_ops.py [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import statistics

from _harness import best_time, torch

import pyframe as pf


def cases(lib) -> dict:
    """Name -> zero-argument callable, built the same way for either library."""
    x = lib.randn(2000)
    y = lib.randn(2000)
    a = lib.randn(40, 50)
    b = lib.randn(50, 40)
    w = lib.randn(2000, requires_grad=True)
    idx = lib.tensor([3, 1, 4])
    lin, x4 = lib.nn.Linear(4, 4), lib.randn(1, 4)

    def linear_no_grad():
        with lib.no_grad():
            return lin(x4)

    return {
        "x.pow(2), 2,000 floats": lambda: x.pow(2),
        "x.sum()": lambda: x.sum(),
        "1-d x @ y": lambda: x @ y,
        "x[0].item()": lambda: x[0].item(),
        "w * x, w.requires_grad": lambda: w * x,
        "x[3]": lambda: x[3],
        "x[tensor([3, 1, 4])]": lambda: x[idx],
        "x.reshape(40, 50)": lambda: x.reshape(40, 50),
        "(40x50) @ (50x40)": lambda: a @ b,
        "a.softmax(-1), 40x50": lambda: a.softmax(-1),
        "a.mean(1)": lambda: a.mean(1),
        "cat([a, a])": lambda: lib.cat([a, a]),
        "Linear(4, 4) under no_grad": linear_no_grad,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ns = ap.parse_args()
    pf.set_num_threads(1)
    libs = {"pyframe": cases(pf)}
    if torch is not None:
        torch.set_num_threads(1)
        libs["torch"] = cases(torch)
    times: dict[str, dict[str, list[float]]] = {name: {lib: [] for lib in libs} for name in libs["pyframe"]}
    for _ in range(ns.rounds):
        for name in times:
            for lib, fns in libs.items():  # alternate: a burst of load hits both columns
                times[name][lib].append(best_time(fns[name], min_time=0.05, repeats=3) * 1e6)
    print(f"\nper-op cost, 1 thread, median of {ns.rounds} alternating rounds (lower is better)")
    print(f"load (1-min average): {os.getloadavg()[0]:.2f}")
    head = f"{'case':<28}{'pyframe us':>12}{'torch us':>12}{'pyframe/torch':>16}"
    print(f"{head}\n{'-' * len(head)}")
    for name, per_lib in times.items():
        p = statistics.median(per_lib["pyframe"])
        line = f"{name:<28}{p:>12.2f}"
        if "torch" in per_lib:
            t = statistics.median(per_lib["torch"])
            line += f"{t:>12.2f}{p / t:>15.2f}x"
        print(line)


if __name__ == "__main__":
    main()
