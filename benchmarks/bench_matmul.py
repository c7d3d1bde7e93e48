"""float32 matmul throughput: pyframe vs NumPy (and torch when installed), one run.

Target: at least 0.9x NumPy's GFLOP/s for n >= 512 and 0.75x at n = 256.
"""

from _harness import best_time, table, torch

import pyframe as pf


def main() -> None:
    pf.show_config()
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
    table("float32 matmul (higher is better)", "GFLOP/s", rows, higher_is_better=True)


if __name__ == "__main__":
    main()
