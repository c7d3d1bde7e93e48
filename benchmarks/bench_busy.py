"""Two jobs at once: training steps alone, then as two simultaneous processes.

A machine is rarely a job's alone: a sweep, a second user, data-loader workers. Each
library runs the MLP and the CNN step of bench_training.py (and, with ``--models``, the models
of bench_models.py: gpt, resnet, lstm, encoder, mnist) in a process of its own with default
settings (no thread or wait-policy variables), first alone, then as two copies that start
timing together once both have warmed up; the ratio is each copy's median step time over the
solo median. Target:
at most 2.5x in every trial, where OpenMP's default spinning has collapsed
both pyframe and torch by 100x in some runs. The collapse comes and goes, so the whole
comparison repeats for several trials. Run it on a quiet machine: load from others adds
to both columns. Usage: bench_busy.py [--trials N] [--seconds S] [--libs pyframe,torch]
[--models mlp,cnn,lstm,...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
VARS = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_DYNAMIC", "OMP_THREAD_LIMIT")


def _worker(lib_name: str, model: str, sync_dir: str, copies: int, seconds: float) -> None:
    """Child: build the model, warm up, wait until every copy has, time steps."""
    sys.path.insert(0, HERE)
    if lib_name == "torch":
        import torch as lib
    else:
        import pyframe as lib
    lib.manual_seed(0)
    if model in ("mlp", "cnn"):
        from bench_training import cnn, mlp, step_fn

        if model == "mlp":
            net, x, y = mlp(lib), lib.randn(128, 784), lib.randint(0, 10, (128,))
            opt = lib.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        else:
            net, x, y = cnn(lib), lib.randn(64, 1, 28, 28), lib.randint(0, 10, (64,))
            opt = lib.optim.Adam(net.parameters())
        step, warm = step_fn(lib, net, opt, x, y), 5
    else:
        from bench_models import build

        step, warm = build(lib, model), 2
    for _ in range(warm):
        step()
    # a barrier on files: the copies start timing together, however long each took to build and warm up
    open(os.path.join(sync_dir, f"ready-{os.getpid()}"), "w").close()
    while len(os.listdir(sync_dir)) < copies:
        time.sleep(0.01)
    times, end = [], time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 5:
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    print(json.dumps({"median_ms": statistics.median(times) * 1e3, "steps": len(times)}))


def _run(lib_name: str, model: str, copies: int, seconds: float) -> list[float]:
    """Median step ms of each of `copies` processes running at the same time."""
    env = {k: v for k, v in os.environ.items() if k not in VARS}
    env["PYFRAME_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    with tempfile.TemporaryDirectory() as sync_dir:
        args = [sys.executable, __file__, "--worker", lib_name, model, sync_dir, str(copies), str(seconds)]
        procs = [subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True) for _ in range(copies)]
        out = []
        for p in procs:
            stdout, _ = p.communicate(timeout=900)
            if p.returncode != 0:
                raise RuntimeError(f"{lib_name} {model} worker failed")
            out.append(json.loads(stdout.strip().splitlines()[-1])["median_ms"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=5, metavar=("LIB", "MODEL", "SYNC", "COPIES", "SECONDS"), help=argparse.SUPPRESS)
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--libs", default="pyframe,torch")
    ap.add_argument("--models", default="mlp,cnn", help="from mlp, cnn and bench_models.py's training models")
    ns = ap.parse_args()
    if ns.worker:
        lib_name, model, sync_dir, copies, seconds = ns.worker
        _worker(lib_name, model, sync_dir, int(copies), float(seconds))
        return
    models = [m for m in ns.models.split(",") if m]
    known = ("mlp", "cnn", "gpt", "resnet", "lstm", "encoder", "mnist")
    for m in models:
        if m not in known:
            ap.error(f"unknown model {m!r}; choose from {', '.join(known)}")
    libs = [name for name in ns.libs.split(",") if name]
    if "torch" in libs:
        try:
            import torch  # noqa: F401
        except ImportError:
            libs.remove("torch")
    print(f"two jobs at once: step time alone and as 2 simultaneous processes, {ns.trials} trials")
    print(f"load before: {os.getloadavg()[0]:.2f} (1-min average), {os.cpu_count()} cores")
    head = f"{'trial':<6}{'model':<8}{'library':<9}{'alone ms':>10}{'2 jobs ms':>20}{'slowdown':>18}"
    print(f"\n{head}\n{'-' * len(head)}")
    worst: dict[tuple[str, str], float] = {}
    for trial in range(1, ns.trials + 1):
        for model in models:
            for lib_name in libs:  # libraries alternate within each trial
                (alone,) = _run(lib_name, model, 1, ns.seconds)
                both = _run(lib_name, model, 2, ns.seconds)
                ratios = [b / alone for b in both]
                key = (model, lib_name)
                worst[key] = max(worst.get(key, 0.0), *ratios)
                pair = " / ".join(f"{b:.2f}" for b in both)
                slow = " / ".join(f"{r:.2f}x" for r in ratios)
                print(f"{trial:<6}{model:<8}{lib_name:<9}{alone:>10.2f}{pair:>20}{slow:>18}", flush=True)
    print(f"\nworst slowdown over all trials (target <= 2.5x), load after: {os.getloadavg()[0]:.2f}")
    for (model, lib_name), r in sorted(worst.items()):
        print(f"  {model:<8}{lib_name:<9}{r:>7.2f}x")


if __name__ == "__main__":
    main()
