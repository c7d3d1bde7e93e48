"""conv2d and max_pool2d forward and backward on small-CNN shapes, pyframe beside torch.

Small CNNs (MNIST-style nets, the CNN in bench_training.py) spend their time in 3x3
convolutions with few input channels and in 2x2 max-pooling, batch 32-128. Each case is
timed in rounds that alternate between the libraries (a burst of load hits both columns)
and the table shows each library's median over the rounds. Ratio above 1: pyframe faster.
Usage: bench_conv.py [--rounds N] [--threads T] [--only TEXT] [--cpu]

--cpu times each call's CPU time (``time.thread_time``, median of 7 calls) instead of the best
wall-clock time: on a machine other jobs share, it is barely moved by their load (1 thread only:
a second thread's time is not the caller's).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from _harness import best_time, torch

import pyframe as pf

# (name, N, C, H, W, O, kernel, stride, padding)
SHAPES = [
    ("1->8 28x28 b32", 32, 1, 28, 28, 8, 3, 1, 1),
    ("8->16 28x28 b32", 32, 8, 28, 28, 16, 3, 1, 1),
    ("1->8 28x28 b128", 128, 1, 28, 28, 8, 3, 1, 1),
    ("8->16 14x14 b128", 128, 8, 14, 14, 16, 3, 1, 1),
    ("1->32 28x28 b32 (MNIST)", 32, 1, 28, 28, 32, 3, 1, 0),
    ("32->64 26x26 b32 (MNIST)", 32, 32, 26, 26, 64, 3, 1, 0),
    ("3->16 32x32 b64 s2", 64, 3, 32, 32, 16, 3, 2, 1),
    # late stages of a CIFAR ResNet-18 (batch 32) and of an ImageNet one at batch 8: wide layers on small images
    ("512->512 4x4 b32 (ResNet)", 32, 512, 4, 4, 512, 3, 1, 1),
    ("256->256 8x8 b32 (ResNet)", 32, 256, 8, 8, 256, 3, 1, 1),
    ("512->512 7x7 b8 (ResNet)", 8, 512, 7, 7, 512, 3, 1, 1),
]
POOL = [("pool2 8x28x28 b64", 64, 8, 28, 28), ("pool2 64x24x24 b32", 32, 64, 24, 24)]


def cases(lib) -> dict:
    """Name -> zero-argument callable, built the same way for either library."""
    F = lib.nn.functional
    out = {}
    for name, n, c, h, w, o, k, s, p in SHAPES:
        x = lib.randn(n, c, h, w, requires_grad=True)
        wt = lib.randn(o, c, k, k, requires_grad=True)
        b = lib.randn(o, requires_grad=True)
        with lib.no_grad():
            y = F.conv2d(x, wt, b, s, p)
        gy = lib.randn(*y.shape)

        def fwd(x=x, wt=wt, b=b, s=s, p=p):
            with lib.no_grad():
                return F.conv2d(x, wt, b, s, p)

        def fwd_bwd(x=x, wt=wt, b=b, s=s, p=p, gy=gy):
            x.grad = wt.grad = b.grad = None
            F.conv2d(x, wt, b, s, p).backward(gy)

        out[name + " fwd"] = fwd
        out[name + " fwd+bwd"] = fwd_bwd
    for name, n, c, h, w in POOL:
        x = lib.randn(n, c, h, w, requires_grad=True)
        gy = lib.randn(n, c, h // 2, w // 2)

        def pool_fwd(x=x):
            with lib.no_grad():
                return F.max_pool2d(x, 2)

        def pool_bwd(x=x, gy=gy):
            x.grad = None
            F.max_pool2d(x, 2).backward(gy)

        out[name + " fwd"] = pool_fwd
        out[name + " fwd+bwd"] = pool_bwd
    return out


def cpu_time(fn, calls: int = 7) -> float:
    """Median CPU seconds of the calling thread per call, after two warm-up calls."""
    fn(), fn()
    ts = []
    for _ in range(calls):
        t0 = time.thread_time()
        fn()
        ts.append(time.thread_time() - t0)
    return statistics.median(ts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="", help="run only cases whose name contains this")
    ap.add_argument("--cpu", action="store_true", help="CPU time per call (1 thread), not wall-clock")
    ns = ap.parse_args()
    if ns.cpu and ns.threads != 1:
        ap.error("--cpu measures the calling thread: use it with --threads 1")
    pf.set_num_threads(ns.threads)
    libs = {"pyframe": cases(pf)}
    if torch is not None:
        torch.set_num_threads(ns.threads)
        libs["torch"] = cases(torch)
    names = [n for n in libs["pyframe"] if ns.only in n]
    times: dict[str, dict[str, list[float]]] = {name: {lib: [] for lib in libs} for name in names}
    for _ in range(ns.rounds):
        for name in names:
            for lib, fns in libs.items():
                t = cpu_time(fns[name]) if ns.cpu else best_time(fns[name], min_time=0.05, repeats=3)
                times[name][lib].append(t * 1e6)
    kind = "CPU time" if ns.cpu else "best wall-clock time"
    print(
        f"\nconv2d / max_pool2d, {ns.threads} thread(s), {kind}, median of {ns.rounds} alternating rounds "
        "(lower is better)"
    )
    print(f"load (1-min average): {os.getloadavg()[0]:.2f}")
    head = f"{'case':<36}{'pyframe us':>14}" + (f"{'torch us':>14}{'torch/pyframe':>15}" if torch else "")
    print(f"{head}\n{'-' * len(head)}")
    for name in names:
        pv = statistics.median(times[name]["pyframe"])
        line = f"{name:<36}{pv:>14.1f}"
        if "torch" in times[name]:
            tv = statistics.median(times[name]["torch"])
            line += f"{tv:>14.1f}{tv / pv:>14.2f}x"
        print(line)


if __name__ == "__main__":
    main()
