"""pyframe.linalg against torch.linalg (LAPACK) side by side: forward of each factorization on a batch of
small matrices (the parametrization / covariance case) and on one medium matrix, float64, microseconds per
call (torch's column is left out when it is not installed). A ratio above 1 means pyframe is faster.

pyframe's kernels are plain O(n^3) loops in core_c computed in double; torch calls an optimized LAPACK,
so expect it to win as n grows. Run: .venv/bin/python benchmarks/bench_linalg.py
"""

import os

import numpy as np
from _harness import best_time, table, torch

import pyframe as pf

OPS = {
    "solve": lambda la, A, B: la.solve(A, B),
    "inv": lambda la, A, B: la.inv(A),
    "det": lambda la, A, B: la.det(A),
    "cholesky": lambda la, A, B: la.cholesky(A),
    "qr": lambda la, A, B: la.qr(A),
    "eigh": lambda la, A, B: la.eigh(A),
    "svd": lambda la, A, B: la.svd(A, full_matrices=False),
    "matrix_exp": lambda la, A, B: la.matrix_exp(A),
}


def inputs(batch, n):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((batch, n, n))
    spd = a @ np.swapaxes(a, -1, -2) + n * np.eye(n)  # symmetric positive-definite: every op accepts it
    spd /= n  # keeps matrix_exp's scaling modest
    return spd, rng.standard_normal((batch, n, 4))


def main() -> None:
    print(f"load: {os.getloadavg()[0]:.2f} (1-min average); threads: pyframe {pf.get_num_threads()}", end="")
    print(f", torch {torch.get_num_threads()}" if torch is not None else "")
    for batch, n in ((256, 8), (64, 32), (1, 128)):
        a, b = inputs(batch, n)
        A, B = pf.tensor(a), pf.tensor(b)
        TA, TB = (torch.from_numpy(a), torch.from_numpy(b)) if torch is not None else (None, None)
        rows = []
        for name, op in OPS.items():
            r = {"pyframe": best_time(lambda op=op: op(pf.linalg, A, B)) * 1e6}
            if torch is not None:
                r["torch"] = best_time(lambda op=op: op(torch.linalg, TA, TB)) * 1e6
            rows.append((name, r))
        table(f"pyframe.linalg vs torch.linalg, batch {batch} of {n}x{n} float64", "us", rows, higher_is_better=False)


if __name__ == "__main__":
    main()
