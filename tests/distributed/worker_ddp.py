"""One rank of ``test_mpi_ddp.py``: DDP's options against torch's DDP on gloo in the same processes (when
torch is installed) or against one process on the full batch: ``join()`` with uneven inputs (also with
``throw_on_early_termination=True``), ``find_unused_parameters``, the fp16 compression hook,
``gradient_as_bucket_view``, ``broadcast_buffers=False``, ``SyncBatchNorm``. Writes ``OUTDIR/rank<r>.json``."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

import pyframe
import pyframe.distributed as dist
from pyframe import nn
from pyframe.distributed.algorithms.ddp_comm_hooks import default_hooks
from pyframe.nn.parallel import DistributedDataParallel as DDP


def build(lib, kind: str):
    n = lib.nn

    class Unused(n.Module):
        def __init__(self):
            super().__init__()
            self.body, self.left, self.right, self.never = (
                n.Linear(6, 8),
                n.Linear(8, 3),
                n.Linear(8, 3),
                n.Linear(3, 3),
            )
            self.use = "both"

        def forward(self, x):
            h = lib.tanh(self.body(x))
            if self.use == "left":
                return self.left(h)
            return self.right(h) if self.use == "right" else self.left(h) + self.right(h)

    if kind == "unused":
        return Unused()
    return n.Sequential(n.Linear(6, 16), n.Tanh(), n.Linear(16, 3))


def same_weights(src, dst, lib) -> None:
    """dst (any lib) gets src's (pyframe) parameters."""
    with lib.no_grad():
        for p, q in zip(src.parameters(), dst.parameters(), strict=True):
            q.copy_(lib.tensor(p.detach().numpy().copy()))


def flat(model) -> np.ndarray:
    return np.concatenate([p.detach().numpy().reshape(-1) for p in model.parameters()])


def batches(rank: int, count: int):
    rng = np.random.default_rng(100 + rank)
    return [(rng.standard_normal((4, 6)).astype(np.float32), rng.integers(0, 3, 4)) for _ in range(count)]


def train(lib, d, ddp_cls, kind: str, rank: int, world: int, init, **options) -> np.ndarray:
    model = build(lib, kind)
    same_weights(init, model, lib)
    hook = options.pop("hook", None)
    uneven = options.pop("uneven", False)
    ddp = ddp_cls(model, **options)
    if hook is not None:
        ddp.register_comm_hook(None, hook)
    opt = lib.optim.SGD(ddp.parameters(), lr=0.1)
    steps = batches(rank, 3 + rank if uneven else 3)
    ctx = ddp.join() if uneven else _null()
    with ctx:
        for i, (x, y) in enumerate(steps):
            if kind == "unused":
                model.use = ["left", "right", "both"][(i + rank) % 3]
            opt.zero_grad()
            lib.nn.functional.cross_entropy(ddp(lib.tensor(x)), lib.tensor(y, dtype=lib.int64)).backward()
            opt.step()
    return np.concatenate([p.detach().numpy().reshape(-1) for p in model.parameters()])


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


CASES = {
    "join": ("mlp", {"uneven": True}),
    "unused": ("unused", {"find_unused_parameters": True}),
    "fp16_hook": ("mlp", {"hook": "fp16"}),
    "bf16_hook": ("mlp", {"hook": "bf16"}),
    "bucket_view": ("mlp", {"gradient_as_bucket_view": True}),
}


def _torch_bf16_hook(process_group, bucket):
    """torch's bf16_compress_hook, which torch's DDP accepts only with NCCL (CUDA): the same steps on gloo."""
    import torch
    import torch.distributed as td

    buf = bucket.buffer()
    compressed = buf.to(torch.bfloat16).div_(td.get_world_size(process_group))
    fut = td.all_reduce(compressed, group=process_group, async_op=True).get_future()
    return fut.then(lambda f: buf.copy_(f.value()[0]))


def run_cases(lib, d, ddp_cls, rank, world) -> dict:
    out = {}
    for name, (kind, options) in CASES.items():
        pyframe.manual_seed(0)
        init = build(pyframe, kind)
        options = dict(options)
        if "hook" in options:
            hook = f"{options['hook']}_compress_hook"
            if lib is pyframe:
                options["hook"] = getattr(default_hooks, hook)
            else:
                from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as th

                options["hook"] = getattr(th, hook) if hook != "bf16_compress_hook" else _torch_bf16_hook
        out[name] = train(lib, d, ddp_cls, kind, rank, world, init, **options).tolist()
    return out


def join_throw(lib, ddp_cls, rank: int) -> dict:
    """``join(throw_on_early_termination=True)`` with rank r holding 3 + r batches: how far each rank got and
    what it raised."""
    pyframe.manual_seed(0)
    init = build(pyframe, "mlp")
    model = build(lib, "mlp")
    same_weights(init, model, lib)
    ddp = ddp_cls(model)
    opt = lib.optim.SGD(ddp.parameters(), lr=0.1)
    steps, error = 0, None
    try:
        with ddp.join(throw_on_early_termination=True):
            for x, y in batches(rank, 3 + rank):
                opt.zero_grad()
                lib.nn.functional.cross_entropy(ddp(lib.tensor(x)), lib.tensor(y, dtype=lib.int64)).backward()
                opt.step()
                steps += 1
    except RuntimeError as e:
        error = str(e)
    return {"steps": steps, "error": error}


def torch_run(rank, world):
    try:
        import torch
        import torch.distributed as td
        from torch.nn.parallel import DistributedDataParallel as TDDP
    except ImportError:
        return None
    td.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['GLOO_PORT']}", rank=rank, world_size=world)
    try:
        return run_cases(torch, td, TDDP, rank, world), join_throw(torch, TDDP, rank)
    finally:
        td.destroy_process_group()


def buffers_and_syncbn(rank: int, world: int) -> dict:
    out = {}
    bn = nn.BatchNorm1d(4)
    with pyframe.no_grad():
        bn.running_mean.fill_(float(rank))
    model = nn.Sequential(nn.Linear(3, 4), bn)
    DDP(model, broadcast_buffers=False)
    out["running_mean_kept"] = bn.running_mean.tolist()
    # SyncBatchNorm across ranks == BatchNorm on the whole batch in one process
    pyframe.manual_seed(3)
    full = pyframe.randn(4 * world, 3, 5)
    plain = nn.Sequential(nn.Conv1d(3, 4, 1), nn.BatchNorm1d(4))
    pyframe.manual_seed(3)
    synced = nn.SyncBatchNorm.convert_sync_batchnorm(nn.Sequential(nn.Conv1d(3, 4, 1), nn.BatchNorm1d(4)))
    same_weights(plain, synced, pyframe)
    ddp = DDP(synced)
    mine = full[4 * rank : 4 * rank + 4]
    (ddp(mine) ** 2).mean().backward()
    (plain(full) ** 2).mean().backward()
    out["syncbn_type"] = type(synced[1]).__name__
    out["syncbn_grad_diff"] = max(float((p.grad - q.grad).abs().max()) for p, q in
                                  zip(synced.parameters(), plain.parameters(), strict=True))  # fmt: skip
    out["syncbn_stats_diff"] = max(float((synced[1].running_mean - plain[1].running_mean).abs().max()),
                                   float((synced[1].running_var - plain[1].running_var).abs().max()))  # fmt: skip
    return out


def main() -> None:
    outdir = sys.argv[1]
    dist.init_process_group("mpi", timeout=60)
    rank, world = dist.get_rank(), dist.get_world_size()
    mine = run_cases(pyframe, dist, DDP, rank, world)
    throw = join_throw(pyframe, DDP, rank)
    theirs, theirs_throw = torch_run(rank, world) or (None, None)
    every = [None] * world
    dist.all_gather_object(every, mine)  # the group is still usable after the throw
    result = {
        "ranks_identical": {k: all(e[k] == mine[k] for e in every) for k in mine},
        "vs_torch": None if theirs is None else {k: float(np.abs(np.array(mine[k]) - theirs[k]).max()) for k in mine},
        "join_throw": throw,
        "join_throw_torch": theirs_throw,
        **buffers_and_syncbn(rank, world),
    }
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
