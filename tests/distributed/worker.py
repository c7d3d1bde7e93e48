"""One rank of the multi-process tests in ``test_mpi.py`` and ``test_mpi_api.py`` (run under ``mpiexec -n 2``
or ``-n 4``).

``python worker.py SCENARIO OUTDIR``: ``train`` checks collectives and DDP (also with a branch order that
differs per rank) against a single-process run on the full batch and writes ``OUTDIR/rank<r>.json``; ``api``
runs every collective and compares it with torch's gloo on the same data when torch is installed; the other
scenarios make the last rank fail in one way while the others train, for the failure tests.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import pyframe as torch
import pyframe.distributed as dist
from pyframe import nn
from pyframe.nn.parallel import DistributedDataParallel as DDP


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(8, 96), nn.Tanh(), nn.Linear(96, 96), nn.Tanh(), nn.Linear(96, 3))


def cnn() -> nn.Module:
    """The demo's digits CNN (examples/demo.py, there in float64) on 8x8 images."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 2 * 2, 10),
    )  # fmt: skip


class Branches(nn.Module):
    """Two branches of the same size run in an order that depends on the rank: the gradients of ``a`` and
    ``b`` reach DDP in different orders on different ranks (each branch is a bucket of its own)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 32), nn.Linear(8, 32)
        self.head = nn.Linear(32, 3)
        self.order = "ab"

    def forward(self, x):
        outs = {}
        for name in self.order:
            outs[name] = torch.tanh(getattr(self, name)(x))
        # backward runs the later branch first: the order of the hooks follows self.order
        return self.head(
            outs["a"] * 0.5 + outs["b"] * 0.25 if self.order == "ab" else outs["b"] * 0.25 + outs["a"] * 0.5
        )


class Unused(nn.Module):
    """A rank-dependent part of the model is unused (find_unused_parameters)."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.left, self.right = nn.Linear(8, 16), nn.Linear(16, 3), nn.Linear(16, 3)
        self.never = nn.Linear(3, 3)
        self.use = "both"

    def forward(self, x):
        h = torch.tanh(self.body(x))
        if self.use == "left":
            return self.left(h)
        if self.use == "right":
            return self.right(h)
        return self.left(h) + self.right(h)


def flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def data(kind: str, n: int = 16):
    torch.manual_seed(1234)
    x = torch.randn(n, 8) if kind != "cnn" else torch.randn(n, 1, 8, 8)
    y = torch.randint(0, 3, (n,))
    return x, y


def make(kind: str) -> nn.Module:
    return {"mlp": mlp, "cnn": cnn, "branches": Branches}[kind]()


def train_case(kind: str, rank: int, world: int, micro: int = 1, steps: int = 3, cap_mb: float = 0.01,
               **ddp_kwargs) -> dict:  # fmt: skip
    """DDP on this rank's share vs one process on the full batch, from rank 0's initial weights.
    With ``micro`` > 1, each step accumulates ``micro`` micro-batches under ``no_sync()``."""
    torch.manual_seed(0)
    model = make(kind)
    torch.manual_seed(0)
    reference = make(kind)
    if kind == "branches":
        model.order = "ab" if rank % 2 == 0 else "ba"  # the branch order differs per rank
    if rank == 1:
        torch.manual_seed(99)  # rank 1 starts from other weights: the broadcast must fix them
        for p in model.parameters():
            with torch.no_grad():
                p.copy_(torch.randn(*p.shape))
    differed = not bool((flat(model) == flat(reference)).all())
    ddp = DDP(model, bucket_cap_mb=cap_mb, **ddp_kwargs)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    x, y = data(kind, 8 * world * micro)
    piece = 8  # rows per rank per micro-batch
    for _ in range(steps):
        opt.zero_grad()
        ref_opt.zero_grad()
        for m in range(micro):
            rows = slice((m * world + rank) * piece, (m * world + rank + 1) * piece)
            ctx = ddp.no_sync() if m < micro - 1 else _null()
            with ctx:
                loss_fn(ddp(x[rows]), y[rows]).backward()
            full = slice(m * world * piece, (m + 1) * world * piece)
            loss_fn(reference(x[full]), y[full]).backward()
        opt.step()
        ref_opt.step()
    return {"differed_before": differed, "buckets": len(ddp.bucket_sizes), **compare(model, reference, world)}


def compare(model, reference, world) -> dict:
    mine = flat(model)
    every = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(every, mine)
    return {
        "ranks_identical": all(bool((every[0] == e).all()) for e in every),
        "max_diff_vs_single": float((mine - flat(reference)).abs().max()),
    }


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def collectives(rank: int, world: int) -> dict:
    out = {}
    t = torch.tensor([1.0 + rank, 10.0 * rank])
    dist.all_reduce(t)
    out["sum"] = t.tolist()
    t = torch.tensor([1.0 + rank, 10.0 * rank])
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    out["avg"] = t.tolist()
    t = torch.tensor([rank, -rank], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    out["max"] = t.tolist()
    t = torch.tensor([rank, -rank], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    out["min"] = t.tolist()
    t = torch.full((3,), float(rank))
    work = dist.all_reduce(t, async_op=True)
    out["async"] = [work.wait(), t.tolist()]
    # async_op=True returns while another rank has not called it yet (the others wait for rank 0's message
    # before they do); Work.wait(timeout) gives up, the work goes on
    t = torch.full((3,), float(rank))
    if rank == 0:
        work = dist.all_reduce(t, async_op=True)
        out["async_pending"] = not work.is_completed()
        try:
            work.wait(timeout=0.05)
            out["wait_timeout"] = "no error"
        except dist.DistTimeoutError as e:
            out["wait_timeout"] = str(e)
        for r in range(1, world):
            dist.send(torch.zeros(1), dst=r)
    else:
        dist.recv(torch.zeros(1), src=0)
        work = dist.all_reduce(t, async_op=True)
    out["async_late"] = [work.wait(), t.tolist()]
    # the same with all_to_all_single and uneven splits: the split sizes are exchanged on the communication thread
    ins = [(rank + q) % 2 + 1 for q in range(world)]  # rows this rank sends to rank q
    outs = [(q + rank) % 2 + 1 for q in range(world)]  # rows rank q sends here
    inp = torch.tensor([[100.0 * rank + q] for q in range(world) for _ in range(ins[q])])
    o = torch.zeros(sum(outs), 1)
    if rank == 0:
        work = dist.all_to_all_single(o, inp, outs, ins, async_op=True)
        out["a2a_pending"] = not work.is_completed()
        for r in range(1, world):
            dist.send(torch.zeros(1), dst=r)
        work.wait()
    else:
        dist.recv(torch.zeros(1), src=0)
        dist.all_to_all_single(o, inp, outs, ins)
    out["a2a_late"] = o.reshape(-1).tolist()
    # the same small tensor reduced again after an in-place transpose (no longer contiguous)
    t = torch.tensor([[1.0, 2.0], [3.0, 4.0]]) * (rank + 1)
    dist.all_reduce(t)
    t.t_()
    dist.all_reduce(t)
    out["sum_after_t_"] = t.tolist()
    # one tensor reduced again and again (the prepared call is kept): written between calls, with other ops
    t = torch.tensor([rank + 1.0, 10.0 * rank])
    seen = []
    for op in (dist.ReduceOp.SUM, dist.ReduceOp.SUM, dist.ReduceOp.MAX, dist.ReduceOp.AVG, dist.ReduceOp.SUM):
        dist.all_reduce(t, op=op)
        seen.append(t.tolist())
        t.add_(rank)
    out["reduced_again"] = seen
    t = torch.full((2, 2), float(rank + 5))
    dist.broadcast(t, src=1)
    out["broadcast"] = t.tolist()
    got = [torch.zeros(2) for _ in range(world)]
    dist.all_gather(got, torch.tensor([rank, rank * 2.0]))
    out["all_gather"] = [g.tolist() for g in got]
    dist.barrier()
    other_dtype = torch.zeros(3, dtype=[torch.float32, torch.float64][rank % 2])
    for name, t in (("shape", torch.zeros(3 + rank)), ("dtype", other_dtype)):
        try:
            dist.all_reduce(t)
            out[f"mismatch_{name}"] = "no error"
        except dist.DistBackendError as e:
            out[f"mismatch_{name}"] = str(e)
    try:
        DDP(mlp() if rank == 0 else cnn())
        out["mismatch_ddp"] = "no error"
    except dist.DistBackendError as e:
        out["mismatch_ddp"] = str(e)
    t = torch.ones(2)
    dist.all_reduce(t)  # the group is still usable after the mismatches
    out["after_mismatch"] = t.tolist()
    return out


def reduce_paths(rank: int, world: int) -> dict:
    """Synchronous all_reduce, every dtype and op, small (riding in the check's message) and larger (check, then
    data), each tensor reduced twice (the prepared call kept, the tensor written between), compared with NumPy on
    every rank's inputs; a small call on one rank against a larger one on another; the C path's refusals. The
    test makes the last rank call MPI through mpi4py (``PYFRAME_MPI_DIRECT=0``) in one run, so the two ways pair."""
    import numpy as np
    from pyframe_mpi import _engine, direct

    out: dict = {"direct": direct.why_not(), "wrong": []}
    ops = {"sum": np.add, "max": np.maximum, "min": np.minimum, "product": np.multiply,
           "band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}  # fmt: skip
    for dtype in ("float32", "float64", "int32", "int64", "int8", "uint8", "int16"):
        for numel in (3, 256, 275, 276, 3000):  # 275 float32 is the largest that rides in the check's message
            for name, fn in ops.items():
                if name.startswith("b") and dtype.startswith("float"):
                    continue
                op = getattr(dist.ReduceOp, name.upper())
                t = torch.zeros(numel, dtype=getattr(torch, dtype))
                for again in range(3):  # from the third call a larger SUM rides in a check of its own size
                    inputs = [(np.arange(numel) * (again + 1) % 5 + r + 1).astype(dtype) for r in range(world)]
                    t.copy_(torch.from_numpy(inputs[rank]))
                    dist.all_reduce(t, op=op)
                    want = inputs[0]
                    for r in range(1, world):
                        want = fn(want, inputs[r]).astype(dtype)
                    if t.numpy().tobytes() != want.tobytes():
                        out["wrong"].append(f"{name} {dtype}[{numel}] call {again}: {t.tolist()[:4]} vs {want[:4]}")
    try:
        dist.all_reduce(torch.ones(4 if rank == 0 else 3000))
        out["small_vs_large"] = "no error"
    except dist.DistBackendError as e:
        out["small_vs_large"] = str(e)
    # after a 16 KB SUM checked twice the check is 16 KB: a different call on one rank still pairs and is caught
    big = torch.ones(4096)
    for _ in range(3):
        dist.all_reduce(big)
    try:
        dist.all_reduce(big if rank == 0 else torch.ones(3))
        out["small_vs_repeated"] = "no error"
    except dist.DistBackendError as e:
        out["small_vs_repeated"] = str(e)
    out["repeated"] = big.numpy()[:2].tolist()
    # alternating sizes, and other collectives after a repeated larger SUM
    small = torch.ones(1)
    for _ in range(3):
        dist.all_reduce(big)
        dist.all_reduce(small)
    dist.barrier()
    b = torch.full((3,), float(rank))
    dist.broadcast(b, src=world - 1)
    out["alternating"] = [big.numpy()[:2].tolist(), small.tolist(), b.tolist()]
    t = torch.ones(3)
    dist.all_reduce(t)
    out["after"] = t.tolist()
    if _engine.direct is not None:
        ffi, lib = _engine.direct
        rec = ffi.new("struct pf_allreduce *")
        rec.type, rec.op, rec.count = 99, lib.PF_SUM, 0  # a dtype code direct.c does not know
        out["refused"] = [lib.pf_allreduce_run(ffi.NULL), lib.pf_allreduce_plain(rec), lib.pf_allreduce_run(rec)]
        out["bad_record"] = lib.PF_BAD_RECORD
    return out


def eval_on_rank0(rank: int, world: int) -> dict:
    """Train with BatchNorm, then evaluate on rank 0 only through the wrapper (no_grad: no buffer broadcast)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.Linear(16, 3))
    ddp = DDP(model)
    x, y = data("mlp", 8 * world)
    nn.functional.cross_entropy(ddp(x[rank * 8 : rank * 8 + 8]), y[rank * 8 : rank * 8 + 8]).backward()
    result = None
    if rank == 0:
        ddp.eval()
        with torch.no_grad():
            result = ddp(x).shape[0]
        ddp.train()
    dist.barrier()
    return {"eval_rows": result}


def failing_now(outdir: str) -> None:
    """The wall-clock time the failure starts, for the test to measure detection from (not from the launch,
    whose import time grows with the machine's load)."""
    with open(os.path.join(outdir, "failing_at"), "w") as f:
        f.write(repr(time.time()))


def main() -> None:
    scenario, outdir = sys.argv[1], sys.argv[2]
    last = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1")) - 1
    if scenario == "reduce_mixed" and os.environ.get("OMPI_COMM_WORLD_RANK") == str(last):
        os.environ["PYFRAME_MPI_DIRECT"] = "0"  # the last rank calls MPI through mpi4py, the others through direct.c
    dist.init_process_group("mpi", timeout=float(os.environ.get("DIST_TEST_TIMEOUT", "60")))
    rank, world = dist.get_rank(), dist.get_world_size()
    if scenario == "train":
        result = {"rank": rank, "world": world, "backend": dist.get_backend(), **collectives(rank, world)}
        result["branches"] = train_case("branches", rank, world, cap_mb=0.001)
        result["mlp"] = train_case("mlp", rank, world)
        result["cnn"] = train_case("cnn", rank, world, cap_mb=0.001)
        result["mlp_no_sync"] = train_case("mlp", rank, world, micro=2, steps=2)
        result.update(eval_on_rank0(rank, world))
        with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
        dist.destroy_process_group()
        return
    if scenario in ("reduce", "reduce_mixed"):
        with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
            json.dump(reduce_paths(rank, world), f)
        dist.destroy_process_group()
        return
    if scenario == "branches":
        result = train_case("branches", rank, world, cap_mb=0.001)
        with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
        dist.destroy_process_group()
        return
    if scenario == "recv_gone":  # the last rank leaves without sending what rank 0 waits for
        if rank == world - 1:
            failing_now(outdir)
            sys.exit(0)
        dist.recv(torch.zeros(2), src=world - 1)
        print("rank", rank, "received: the failure went unnoticed", flush=True)
        return
    # failure scenarios: the other ranks keep training; the last rank fails after one step
    model = DDP(mlp())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data("mlp")

    def train():
        for step in range(1000):
            if rank == world - 1 and step == 1:
                failing_now(outdir)
                if scenario == "die":
                    os._exit(3)
                if scenario == "sigkill":
                    os.kill(os.getpid(), signal.SIGKILL)
                if scenario in ("raise", "finally_destroy"):
                    raise ValueError(f"rank {rank} failed on purpose")
                if scenario == "exit1":
                    sys.exit(1)
                if scenario == "early_return":
                    return
                if scenario == "hang":
                    time.sleep(600)
            opt.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        print("rank", rank, "finished 1000 steps: the failure went unnoticed", flush=True)

    if scenario == "finally_destroy":
        try:
            train()
        finally:
            dist.destroy_process_group()
    else:
        train()


if __name__ == "__main__":
    main()
