"""Timing and side-by-side tables shared by the benchmark scripts.

Each library is timed in its own block (never interleaved call by call) with a pause
between blocks: OpenBLAS's and OpenMP's idle threads spin for a while after a call, and
two spinning pools on two cores would make the next measurement meaningless.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

try:
    import torch
except ImportError:  # torch is optional: its column is left out
    torch = None


def best_time(fn: Callable[[], object], min_time: float = 0.2, repeats: int = 5) -> float:
    """Best per-call seconds over ``repeats`` rounds, each running at least ``min_time``.
    A few warm-up calls first: the first large allocations of a process pay for the kernel
    assembling huge pages, which is not the op's cost."""
    for _ in range(3):
        fn()
    number = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        if time.perf_counter() - t0 >= min_time / repeats or number >= 1 << 20:
            break
        number *= 4
    gc.disable()
    try:
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            best = min(best, (time.perf_counter() - t0) / number)
    finally:
        gc.enable()
    time.sleep(0.2)
    return best


def table(title: str, unit: str, rows: list[tuple[str, dict[str, float]]], higher_is_better: bool) -> None:
    """Prints values per library and pyframe's ratio against each other library
    (a ratio above 1 means pyframe is better)."""
    libs = [lib for lib in ("pyframe", "numpy", "torch") if any(lib in r for _, r in rows)]
    others = [lib for lib in libs if lib != "pyframe"]
    head = f"{'case':<28}" + "".join(f"{lib + ' ' + unit:>18}" for lib in libs)
    head += "".join(f"{'vs ' + lib:>12}" for lib in others)
    print(f"\n{title}\n{head}\n{'-' * len(head)}")
    for name, r in rows:
        line = f"{name:<28}" + "".join(f"{r[lib]:>18.3f}" if lib in r else f"{'-':>18}" for lib in libs)
        for lib in others:
            if lib in r:
                ratio = r["pyframe"] / r[lib] if higher_is_better else r[lib] / r["pyframe"]
                line += f"{ratio:>11.2f}x"
            else:
                line += f"{'-':>12}"
        print(line)
