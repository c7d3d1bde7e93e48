"""sort, topk, cumsum and multinomial: pyframe beside torch in one run (a ratio above 1 means pyframe is faster).

Each case is timed in rounds that alternate the two libraries (pyframe, torch, pyframe, ...), each round's best
time kept, and the median round reported, so a burst of load from other processes hits both columns alike.
Quote the machine load (`uptime`) with the figures.
"""

import os
import statistics

import numpy as np
from _harness import best_time, table, torch

import pyframe as pf

ROUNDS = 3


def cases():
    rng = np.random.default_rng(0)
    big = rng.standard_normal(1_000_000).astype(np.float32)
    rows = rng.standard_normal((1000, 1000)).astype(np.float32)
    logits = rng.standard_normal((64, 50257)).astype(np.float32)
    long = rng.standard_normal(10_000_000).astype(np.float32)
    probs = np.exp(logits[:8]) / np.exp(logits[:8]).sum(1, keepdims=True)
    return {
        "sort 1e6 float32": (big, lambda m, x: m.sort(x)),
        "sort 1000x1000 dim=-1": (rows, lambda m, x: m.sort(x, dim=-1)),
        "sort 1000x1000 dim=0": (rows, lambda m, x: m.sort(x, dim=0)),
        "topk k=10 of 64x50257": (logits, lambda m, x: m.topk(x, 10)),
        "topk k=1000 of 1e6": (big, lambda m, x: m.topk(x, 1000)),
        "cumsum 1e7 float32": (long, lambda m, x: m.cumsum(x, 0)),
        "cumsum 1000x1000 dim=0": (rows, lambda m, x: m.cumsum(x, 0)),
        "multinomial 8x50257, 1": (probs, lambda m, x: m.multinomial(x, 1, True)),
    }


def main() -> None:
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average), pyframe threads {pf.get_num_threads()}")
    rows = []
    for name, (arr, op) in cases().items():
        x = pf.from_numpy(arr)
        times = {"pyframe": []}
        if torch is not None:
            tx = torch.from_numpy(arr)
            times["torch"] = []
        for _ in range(ROUNDS):
            times["pyframe"].append(best_time(lambda: op(pf, x), min_time=0.3, repeats=3))
            if torch is not None:
                times["torch"].append(best_time(lambda: op(torch, tx), min_time=0.3, repeats=3))
        rows.append((name, {lib: statistics.median(t) * 1e3 for lib, t in times.items()}))
    table("sorting, selection, scans and sampling (lower is better)", "ms", rows, higher_is_better=False)


if __name__ == "__main__":
    main()
