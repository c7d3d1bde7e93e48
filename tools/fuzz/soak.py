"""Long-run checks: memory over 10,000 training steps, and Python threads sharing the core.

    python -m tools.fuzz.soak [--steps 10000]

Memory: an MLP (with a checkpoint save/load every 1,000 steps) trains for ``--steps`` steps; the
resident set size after the first 1,000 steps and at the end must differ by less than 16 MiB.
Threads: 4 Python threads run the same forward/backward on their own inputs while the others run,
and each result must equal, bit for bit, the one computed alone.
"""

from __future__ import annotations

import argparse
import io
import resource
import sys
import threading

import numpy as np

import pyframe as pf
import pyframe.nn as nn


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def memory(steps: int) -> tuple[float, float]:
    pf.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10))
    opt = pf.optim.Adam(model.parameters(), lr=1e-3)
    x, y = pf.randn(64, 32), pf.randint(0, 10, (64,))
    first = 0.0
    for step in range(1, steps + 1):
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step % 1000 == 0:
            buf = io.BytesIO()
            pf.save(model.state_dict(), buf)
            buf.seek(0)
            model.load_state_dict(pf.load(buf))
        if step == min(1000, steps):
            first = rss_mib()
    return first, rss_mib()


def _work(seed: int) -> np.ndarray:
    g = np.random.default_rng(seed)
    w = pf.tensor(g.standard_normal((96, 96)), dtype=pf.float32, requires_grad=True)
    x = pf.tensor(g.standard_normal((128, 96)), dtype=pf.float32)
    out = (x @ w).tanh().sum(1).softmax(0)
    (out * pf.arange(128.0)).sum().backward()
    return np.concatenate([out.detach().numpy(), w.grad.numpy().ravel()])


def threads(n: int = 4, rounds: int = 25) -> int:
    """Number of results that differ from the single-threaded ones (0 is the only good answer)."""
    alone = {s: _work(s) for s in range(n)}
    bad = []

    def run(s: int) -> None:
        for _ in range(rounds):
            if not np.array_equal(_work(s), alone[s]):
                bad.append(s)

    ts = [threading.Thread(target=run, args=(s,)) for s in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return len(bad)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.fuzz.soak")
    p.add_argument("--steps", type=int, default=10_000)
    args = p.parse_args(argv)
    first, last = memory(args.steps)
    print(f"memory: {first:.1f} MiB after 1000 steps, {last:.1f} MiB after {args.steps} ({last - first:+.1f} MiB)")
    wrong = threads()
    print(f"threads: 4 Python threads x 25 rounds of forward+backward, {wrong} results differ from running alone")
    return 1 if last - first > 16 or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
