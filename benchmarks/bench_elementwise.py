"""Elementwise and reduction throughput over 1e7 float32 elements, and the cost of a tiny
(4-element) add: pyframe vs NumPy (and torch when installed), side by side in one run.

Targets (issue 2): add, mul, exp, sum reach at least NumPy's throughput; a tiny add costs
no more than torch's.
"""

import numpy as np
from _harness import best_time, table, torch

import pyframe as pf

N = 10_000_000


def main() -> None:
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


if __name__ == "__main__":
    main()
