"""Data-parallel training steps on 1 vs 2 processes, pyframe (DDP on the mpi plugin) beside torch
(DDP on gloo, over loopback TCP), both launched by mpiexec on this machine.

The global batch is fixed (strong scaling) and every rank uses one thread (OMP_NUM_THREADS=1): with 2
processes each rank computes half of the batch on its own core, so the ideal speedup is 2x; what is
lost to the all-reduce and to waiting for the slower rank shows as less. (One process with 2 threads
instead would measure the C core's threading, not data parallelism, and collapses on a loaded machine.)
For pyframe it also prints the all-reduce time per step (the buckets all-reduced alone, blocking) and
the time backward waited for it (``DistributedDataParallel.last_sync_wait``).

    python benchmarks/bench_distributed.py            # needs: pip install -e '.[dist]' plugins/mpi
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import table, torch  # noqa: E402

GLOBAL_BATCH = 64
STEPS, WARMUP, ROUNDS = 10, 3, 3
ROOT = Path(__file__).resolve().parents[1]


def build(lib, kind: str):
    nn = lib.nn
    if kind == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10),
    )  # fmt: skip


def worker(libname: str, outfile: str) -> None:
    """One rank: time STEPS training steps of each model on this rank's share of the global batch."""
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    if libname == "pyframe":
        import pyframe as lib
        import pyframe.distributed as dist
        from pyframe.nn.parallel import DistributedDataParallel as DDP

        dist.init_process_group("mpi", timeout=120)
    else:
        import torch as lib
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP

        port = os.environ["BENCH_PORT"]
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    lib.set_num_threads(1)
    result = {}
    for kind in ("mlp", "cnn"):
        lib.manual_seed(0)
        model = DDP(build(lib, kind))
        opt = lib.optim.SGD(model.parameters(), lr=0.01)
        n = GLOBAL_BATCH // world
        x = lib.randn(n, 784) if kind == "mlp" else lib.randn(n, 1, 28, 28)
        y = lib.randint(0, 10, (n,))
        loss_fn = lib.nn.CrossEntropyLoss()
        times, waits = [], []
        for step in range(WARMUP + STEPS):
            dist.barrier()
            t0 = time.perf_counter()
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            if step >= WARMUP:
                times.append(time.perf_counter() - t0)
                waits.append(getattr(model, "last_sync_wait", 0.0))
        row = {"step": statistics.median(times), "wait": statistics.median(waits)}
        if libname == "pyframe" and world > 1:
            # the same buckets all-reduced alone, blocking: the communication cost per step
            # (through the backend, as DDP sends them: all_reduce would add its argument check)
            buckets, backend = model._buckets, dist._group.backend
            alone = []
            for _ in range(STEPS):
                dist.barrier()
                t0 = time.perf_counter()
                for work in [backend.allreduce(b.wire, "sum") for b in buckets]:
                    work.wait()
                alone.append(time.perf_counter() - t0)
            row["allreduce"] = statistics.median(alone)
            row["buckets"] = len(buckets)
        result[kind] = row
    if rank == 0:
        Path(outfile).write_text(json.dumps(result))
    dist.barrier()  # gloo aborts at exit when one rank tears down while the other is still in a collective
    dist.destroy_process_group()


def launch(mpiexec: str, libname: str, procs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {
            **os.environ, "BENCH_PORT": str(port), "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMP_NUM_THREADS": "1",
        }  # fmt: skip
        site = ROOT / "build" / "plugin-site"  # where make installs the plugins when they are not in the venv
        if (site / "pyframe_mpi").is_dir():
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
            env["PYFRAME_PLUGINS"] = "mpi"
        cmd = [mpiexec, "-n", str(procs), "--oversubscribe", sys.executable, __file__, "--worker", libname, str(out)]
        r = subprocess.run(cmd, env=env, timeout=600, stdout=subprocess.DEVNULL)
        if not out.exists():
            sys.exit(f"bench_distributed: {libname} on {procs} processes failed (exit {r.returncode})")
        if r.returncode:  # the timings were written; only the teardown failed
            print(f"note: {libname} on {procs} processes exited {r.returncode} after writing its timings")
        return json.loads(out.read_text())


def main() -> None:
    mpiexec = Path(sys.executable).with_name("mpiexec")
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        sys.exit("bench_distributed: no mpiexec (pip install -e '.[dist]' plugins/mpi)")
    libs = ["pyframe"] + (["torch"] if torch is not None else [])
    runs: dict = {}
    for _ in range(ROUNDS):  # alternate libraries and sizes, take medians: the machine is shared
        for procs in (1, 2):
            for lib in libs:
                runs.setdefault((lib, procs), []).append(launch(mpiexec, lib, procs))
    med = {
        key: {kind: {k: statistics.median(r[kind][k] for r in rs) for k in rs[0][kind]} for kind in rs[0]}
        for key, rs in runs.items()
    }
    print(f"global batch {GLOBAL_BATCH}, median of {ROUNDS} runs x {STEPS} steps; load: {os.getloadavg()[0]:.2f}")
    rows = []
    for kind in ("mlp", "cnn"):
        for procs in (1, 2):
            rows.append((f"{kind} step, {procs} proc", {lib: med[(lib, procs)][kind]["step"] * 1e3 for lib in libs}))
    table("DDP training step (ms, lower is better)", "ms", rows, higher_is_better=False)
    print("\nspeedup 1 -> 2 processes: " + ", ".join(
        f"{lib} {kind} {med[(lib, 1)][kind]['step'] / med[(lib, 2)][kind]['step']:.2f}x"
        for kind in ("mlp", "cnn") for lib in libs
    ))  # fmt: skip
    print("\npyframe, 2 processes: all-reduce per step and how much of it backward hid")
    for kind in ("mlp", "cnn"):
        r = med[("pyframe", 2)][kind]
        hidden = max(0.0, 1 - r["wait"] / r["allreduce"]) if r["allreduce"] else 0.0
        print(f"  {kind}: {r['buckets']:.0f} bucket(s), all-reduce alone {r['allreduce'] * 1e3:.3f} ms, "
              f"waited after backward {r['wait'] * 1e3:.3f} ms, overlapped {hidden:.0%}")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
    else:
        main()
