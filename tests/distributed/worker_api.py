"""One rank of ``test_mpi_api.py``: every collective on the same data through pyframe (mpi backend) and,
when torch is installed, through torch's gloo in the same processes; then bad input on purpose.
Writes ``OUTDIR/rank<r>.json``: ``{"results": {name: value}, "diffs": [names where pyframe != torch], ...}``."""

from __future__ import annotations

import json
import os
import sys

import numpy as np

import pyframe
import pyframe.distributed as dist
from pyframe import nn


def cases(lib, d, rank: int, n: int) -> dict:
    """The same calls for pyframe and torch (``lib``, ``d`` its distributed module); values as lists."""
    out = {}

    def T(values, dtype="float32"):  # noqa: N802
        return lib.tensor(values, dtype=getattr(lib, dtype))

    for op in ("SUM", "AVG", "PRODUCT", "MAX", "MIN"):
        t = T([1.5 + rank, -2.0 * rank, 3.0])
        d.all_reduce(t, op=getattr(d.ReduceOp, op))
        out[f"all_reduce_{op}"] = t.tolist()
    for op in ("BAND", "BOR", "BXOR"):
        t = T([6 + rank, 12 - rank, 1 << rank], "int64")
        d.all_reduce(t, op=getattr(d.ReduceOp, op))
        out[f"all_reduce_{op}"] = t.tolist()
    t = T([0.1 * (rank + 1), 1000.0 + rank, 1e-3], "float16")
    d.all_reduce(t)
    out["all_reduce_float16"] = [float(v) for v in t.float().tolist()]
    t = T([0.1 * (rank + 1), 1000.0 + rank, 3e38], "bfloat16")
    d.all_reduce(t)
    out["all_reduce_bfloat16"] = [float(v) for v in t.float().tolist()]
    t = T([[rank + 0.5, -1.25], [2.0, 3.0]], "bfloat16").t()  # not contiguous, moved as its 2-byte words
    d.broadcast(t, src=n - 1)
    out["broadcast_bfloat16"] = [[float(v) for v in row] for row in t.float().tolist()]
    for dtype, values in (("int8", [100, -7 * rank, 3]), ("uint8", [200 + rank, 7, 1 << rank])):
        t = T(values, dtype)  # wraps around as torch's (100 * n overflows int8)
        d.all_reduce(t)
        out[f"all_reduce_{dtype}"] = t.tolist()
        t = T(values, dtype)
        d.all_reduce(t, op=d.ReduceOp.BOR)
        out[f"all_reduce_{dtype}_BOR"] = t.tolist()
    t = T([[1.0 + rank, 2.0], [3.0, 4.0 * rank], [5.0, 6.0]]).t()  # not contiguous
    d.all_reduce(t)
    out["all_reduce_noncontiguous"] = t.tolist()
    t = T([True, rank == 0, False], "bool")
    d.all_reduce(t)
    out["all_reduce_bool"] = t.tolist()
    t = T([1.0 * rank, 2.0])
    w = d.all_reduce(t, async_op=True)
    out["async_future"] = w.get_future().wait()[0].tolist()
    t = T([[rank + 1.0, 0.5]] * 2)
    d.broadcast(t, src=n - 1)
    out["broadcast"] = t.tolist()
    got = [T([0.0, 0.0]) for _ in range(n)]
    d.all_gather(got, T([rank, rank * 2.0]))
    out["all_gather"] = [g.tolist() for g in got]
    flat = T([0.0] * (2 * n))
    d.all_gather_into_tensor(flat, T([rank, -rank]))
    out["all_gather_into_tensor"] = flat.tolist()
    o = T([0.0, 0.0])
    d.reduce_scatter(o, [T([r + rank, 10.0 * r]) for r in range(n)])
    out["reduce_scatter"] = o.tolist()
    o = T([0.0, 0.0])
    d.reduce_scatter_tensor(o, T([float(i + rank) for i in range(2 * n)]), op=d.ReduceOp.MAX)
    out["reduce_scatter_tensor_MAX"] = o.tolist()
    t = T([rank + 1.0, 2.0])
    d.reduce(t, dst=0)
    out["reduce"] = t.tolist() if rank == 0 else None
    gl = [T([0.0]) for _ in range(n)] if rank == 1 else None
    d.gather(T([rank * 3.0]), gl, dst=1)
    out["gather"] = [g.tolist() for g in gl] if gl else None
    o = T([0.0, 0.0])
    d.scatter(o, [T([r, r * r]) for r in range(n)] if rank == 0 else None, src=0)
    out["scatter"] = o.tolist()
    outs = [T([0.0]) for _ in range(n)]
    d.all_to_all(outs, [T([10.0 * rank + r]) for r in range(n)])
    out["all_to_all"] = [x.tolist() for x in outs]
    o = T([0.0] * n)
    d.all_to_all_single(o, T([10.0 * rank + r for r in range(n)]))
    out["all_to_all_single"] = o.tolist()

    def rows(a, b):  # how many rows rank a sends to rank b
        return (a + 2 * b) % 3 + 1

    ins, outs = [rows(rank, q) for q in range(n)], [rows(q, rank) for q in range(n)]
    o = T([[0.0, 0.0]] * sum(outs))
    d.all_to_all_single(o, T([[100.0 * rank + 10 * q + j, -1.0] for q in range(n) for j in range(ins[q])]),
                        output_split_sizes=outs, input_split_sizes=ins)  # fmt: skip
    out["all_to_all_single_uneven"] = o.tolist()
    if rank < 2:  # send/recv between ranks 0 and 1, both directions at once (isend before recv)
        peer = 1 - rank
        s = d.isend(T([rank + 0.5, 7.0]), dst=peer)
        r = T([0.0, 0.0])
        d.recv(r, src=peer)
        s.wait()
        out["send_recv"] = r.tolist()
        r2 = T([0.0])
        w = d.irecv(r2, src=peer, tag=3)
        d.send(T([rank * 100.0]), dst=peer, tag=3)
        w.wait()
        out["isend_irecv_tag"] = r2.tolist()
    objs = [None] * n
    d.all_gather_object(objs, {"rank": rank, "s": "x" * rank})
    out["all_gather_object"] = objs
    lst = [rank, "a", {"k": rank}] if rank == 0 else [None, None, None]
    d.broadcast_object_list(lst, src=0)
    out["broadcast_object_list"] = lst
    gl = [None] * n if rank == 0 else None
    d.gather_object(("r", rank), gl, dst=0)
    out["gather_object"] = [list(x) for x in gl] if gl else None
    sub = d.new_group([0, n - 1])
    t = T([rank + 1.0])
    if rank in (0, n - 1):
        d.all_reduce(t, group=sub)
    out["new_group"] = [t.tolist(), d.get_rank(sub), d.get_world_size(sub)]
    if rank in (0, n - 1):
        d.destroy_process_group(sub)  # one group; the world goes on
    d.barrier()
    return out


def torch_results(rank: int, n: int) -> dict | None:
    try:
        import torch
        import torch.distributed as td
    except ImportError:
        return None
    td.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{os.environ['GLOO_PORT']}", rank=rank, world_size=n)
    try:
        return cases(torch, td, rank, n)
    finally:
        td.destroy_process_group()


def bad_input(rank: int, n: int) -> dict:
    out = {}
    T = pyframe.tensor  # noqa: N806
    for name, call in (
        ("op", lambda: dist.all_reduce(T([1.0]), op=[dist.ReduceOp.SUM, dist.ReduceOp.MAX][rank % 2])),
        ("root", lambda: dist.broadcast(T([1.0]), src=rank % 2)),
        ("kind", lambda: dist.all_reduce(T([1.0])) if rank == 0 else dist.broadcast(T([1.0]), 0)),
    ):
        try:
            call()
            out[name] = "no error"
        except dist.DistBackendError as e:
            out[name] = str(e)
    sub = dist.new_group([0])
    try:
        if rank != 0:
            dist.all_reduce(T([1.0]), group=sub)
        out["not_member"] = "no error" if rank != 0 else None
    except ValueError as e:
        out["not_member"] = str(e)
    outs = [2] + [1] * (n - 1) if rank == 1 else [1] * n  # rank 1 expects 2 rows from rank 0, which sends 1
    for name, call in (
        ("splits", lambda: dist.all_to_all_single(pyframe.zeros(sum(outs), 2), pyframe.zeros(n, 2), outs, [1] * n)),
        (
            "splits_async",
            lambda: dist.all_to_all_single(
                pyframe.zeros(sum(outs), 2), pyframe.zeros(n, 2), outs, [1] * n, async_op=True
            ).wait(),
        ),
        ("send_self", lambda: dist.send(T([1.0]), dst=rank)),
        ("join_without_ddp", lambda: pyframe.nn.parallel.Join([nn.Linear(2, 2)])),
    ):
        try:
            call()
            out[name] = "no error"
        except (ValueError, TypeError) as e:
            out[name] = str(e)
    if rank < 2:
        try:
            if rank == 0:
                dist.send(T([1.0, 2.0, 3.0]), dst=1)
            else:
                dist.recv(pyframe.zeros(4), src=0)
            out["recv_mismatch"] = "no error"
        except ValueError as e:
            out["recv_mismatch"] = str(e)
    t = T([1.0])
    dist.all_reduce(t)
    out["usable_after"] = t.tolist()
    return out


def _close(a, b) -> bool:
    try:
        return bool(np.allclose(np.array(a, dtype=float), np.array(b, dtype=float), rtol=1e-6))
    except (TypeError, ValueError):
        return False


def main() -> None:
    outdir = sys.argv[1]
    dist.init_process_group("mpi", timeout=60)
    rank, n = dist.get_rank(), dist.get_world_size()
    mine = cases(pyframe, dist, rank, n)
    theirs = torch_results(rank, n)
    diffs = []
    if theirs is not None:
        for k, v in mine.items():
            a, b = json.dumps(v), json.dumps(theirs[k])
            if a != b and not _close(v, theirs[k]):
                diffs.append(f"{k}: pyframe {a} torch {b}")
    result = {"results": mine, "torch": theirs is not None, "diffs": diffs, **bad_input(rank, n)}
    with open(os.path.join(outdir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
