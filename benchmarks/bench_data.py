"""DataLoader throughput, pyframe vs torch side by side: one epoch over a TensorDataset of
60,000 x 1 x 28 x 28 float32 images and int64 labels, batch 64, shuffled, with 0 and 2
worker processes. Each round times every case once, the libraries alternating; the table
shows the median round. Quote it with the machine's load (``uptime``)."""

from __future__ import annotations

import os
import statistics
import sys
import time

from _harness import table, torch

import pyframe as pf

N, BATCH = 60_000, 64
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))


def _epoch_seconds(lib, loader) -> float:
    t0 = time.perf_counter()
    seen = 0
    for x, _y in loader:
        seen += x.shape[0]
    assert seen == N, seen
    return time.perf_counter() - t0


def _loader(lib, workers: int):
    x = lib.randn(N, 1, 28, 28)
    y = lib.randint(0, 10, (N,))
    ds = lib.utils.data.TensorDataset(x, y)
    return lib.utils.data.DataLoader(ds, batch_size=BATCH, shuffle=True, num_workers=workers)


def main() -> None:
    libs = {"pyframe": pf} | ({"torch": torch} if torch is not None else {})
    if torch is not None:
        torch.set_num_threads(pf.get_num_threads())
    times: dict[str, dict[str, list[float]]] = {}
    for workers in (0, 2):
        loaders = {name: _loader(lib, workers) for name, lib in libs.items()}
        for name in libs:  # warm-up epoch: first-touch page faults, worker start-up code paths
            _epoch_seconds(libs[name], loaders[name])
        case = times.setdefault(f"{workers} workers (s/epoch)", {n: [] for n in libs})
        for r in range(ROUNDS):
            order = list(libs) if r % 2 == 0 else list(reversed(libs))
            for name in order:
                case[name].append(_epoch_seconds(libs[name], loaders[name]))
                time.sleep(0.2)
    rows = [(case, {n: statistics.median(v) for n, v in by_lib.items()}) for case, by_lib in times.items()]
    print(f"load average: {os.getloadavg()}; python {sys.version.split()[0]}")
    table(f"DataLoader epoch, {N} x 1 x 28 x 28, batch {BATCH}, shuffled (median of {ROUNDS})", "s", rows, False)


if __name__ == "__main__":
    main()
