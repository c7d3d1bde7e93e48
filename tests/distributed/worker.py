"""One rank of the multi-process tests in ``test_mpi.py`` (run under ``mpiexec -n 2``).

``python worker.py SCENARIO OUTDIR``: ``train`` checks collectives and DDP against a
single-process run on the full batch and writes ``OUTDIR/rank<r>.json``; ``die``, ``raise`` and ``hang``
make rank 1 fail in one way while rank 0 trains, for the failure tests.
"""

from __future__ import annotations

import json
import os
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


def flat(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def data(kind: str, n: int = 16):
    torch.manual_seed(1234)
    x = torch.randn(n, 8) if kind == "mlp" else torch.randn(n, 1, 8, 8)
    y = torch.randint(0, 3, (n,))
    return x, y


def train_case(kind: str, rank: int, world: int, micro: int = 1, steps: int = 3, cap_mb: float = 0.01) -> dict:
    """DDP on this rank's share vs one process on the full batch, from rank 0's initial weights.
    With ``micro`` > 1, each step accumulates ``micro`` micro-batches under ``no_sync()``."""
    make = mlp if kind == "mlp" else cnn
    torch.manual_seed(0)
    model = make()
    torch.manual_seed(0)
    reference = make()
    if rank == 1:
        torch.manual_seed(99)  # rank 1 starts from other weights: the broadcast must fix them
        for p in model.parameters():
            with torch.no_grad():
                p.copy_(torch.randn(*p.shape))
    differed = not bool((flat(model) == flat(reference)).all())
    ddp = DDP(model, bucket_cap_mb=cap_mb)
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
    mine = flat(model)
    every = [torch.zeros_like(mine) for _ in range(world)]
    dist.all_gather(every, mine)
    return {
        "differed_before": differed,
        "buckets": len(ddp.bucket_sizes),
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
    t = torch.full((2, 2), float(rank + 5))
    dist.broadcast(t, src=1)
    out["broadcast"] = t.tolist()
    got = [torch.zeros(2) for _ in range(world)]
    dist.all_gather(got, torch.tensor([rank, rank * 2.0]))
    out["all_gather"] = [g.tolist() for g in got]
    dist.barrier()
    other_dtype = torch.zeros(3, dtype=[torch.float32, torch.float64][rank])
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
    return out


def main() -> None:
    scenario, outdir = sys.argv[1], sys.argv[2]
    dist.init_process_group("mpi", timeout=float(os.environ.get("DIST_TEST_TIMEOUT", "60")))
    rank, world = dist.get_rank(), dist.get_world_size()
    if scenario == "train":
        result = {"rank": rank, "world": world, "backend": dist.get_backend(), **collectives(rank, world)}
        result["mlp"] = train_case("mlp", rank, world)
        result["cnn"] = train_case("cnn", rank, world, cap_mb=0.001)
        result["mlp_no_sync"] = train_case("mlp", rank, world, micro=2, steps=2)
        with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
            json.dump(result, f)
        dist.destroy_process_group()
        return
    # failure scenarios: rank 0 keeps training; rank 1 fails after one step
    model = DDP(mlp())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = data("mlp")
    for step in range(1000):
        if rank == 1 and step == 1:
            if scenario == "die":
                os._exit(3)
            if scenario == "raise":
                raise ValueError("rank 1 failed on purpose")
            if scenario == "hang":
                time.sleep(600)
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    print("rank", rank, "finished 1000 steps: the failure went unnoticed", flush=True)


if __name__ == "__main__":
    main()
