"""Point-to-point messages (``send``, ``recv``, ``isend``, ``irecv``) and torch's object collectives
(``all_gather_object``, ``broadcast_object_list``, ``gather_object``, ``scatter_object_list``).

A tensor message carries a short header (dtype and shape) before its bytes, so a receiver whose tensor does
not match what was sent raises naming both ranks and both tensors instead of reading garbage. Objects are
pickled; their sizes are gathered first, then their bytes."""

from __future__ import annotations

import io
import pickle

import numpy as np

from pyframe._grad_mode import no_grad
from pyframe.distributed.collectives import Work, _check_tensor, _describe, _Staged
from pyframe.distributed.process_group import _require
from pyframe.tensor import Tensor

__all__ = [
    "send", "recv", "isend", "irecv", "all_gather_object", "broadcast_object_list", "gather_object",
    "scatter_object_list",
]  # fmt: skip

_HEADER = 96  # bytes: the tensor's description, space padded


def _peer(g, what: str, argname: str, rank, group_rank) -> int:
    n = len(g.ranks)
    if group_rank is not None:
        if isinstance(group_rank, bool) or not isinstance(group_rank, int) or not 0 <= group_rank < n:
            raise ValueError(f"{what}: group_{argname} must be a rank in [0, {n}), got {group_rank!r}")
        peer = group_rank
    else:
        if isinstance(rank, bool) or not isinstance(rank, int) or rank not in g.ranks:
            raise ValueError(f"{what}: {argname} must be a rank of the group {g.ranks}, got {rank!r}")
        peer = g.ranks.index(rank)
    if peer == g.backend.rank:
        raise ValueError(f"Invalid {'destination' if argname == 'dst' else 'source'} rank: {what} on rank "
                         f"{g.ranks[peer]} names itself; {argname} must be another rank")  # fmt: skip
    return peer


def _tag(tag) -> int:
    if isinstance(tag, bool) or not isinstance(tag, int) or not 0 <= tag < 1 << 20:
        raise ValueError(f"tag must be an int in [0, 2**20), got {tag!r}")
    return tag


def isend(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> Work:
    """Same as torch.distributed.isend: start sending ``tensor`` to rank ``dst``; wait before reusing it."""
    g = _require(group)
    what = "send"
    _check_tensor(tensor, what, "tensor")
    peer = _peer(g, what, "dst", dst, group_dst)
    body = _Staged(tensor, out=False).arr
    payload = np.empty(_HEADER + body.nbytes, dtype=np.uint8)
    payload[:_HEADER] = np.frombuffer(_describe(tensor).encode().ljust(_HEADER)[:_HEADER], dtype=np.uint8)
    payload[_HEADER:] = body
    return Work([g.backend.send(payload, peer, _tag(tag))], None, [tensor], what)


def send(tensor: Tensor, dst: int | None = None, group=None, tag: int = 0, group_dst: int | None = None) -> None:
    """Same as torch.distributed.send."""
    isend(tensor, dst, group, tag, group_dst).wait()


def irecv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None) -> Work:
    """Same as torch.distributed.irecv: receive into ``tensor`` from ``src`` (None: any rank). A message
    whose dtype or shape differs from ``tensor``'s raises, naming both."""
    g = _require(group)
    what = "recv"
    _check_tensor(tensor, what, "tensor")
    peer = None if src is None and group_src is None else _peer(g, what, "src", src, group_src)
    work = g.backend.recv(peer, _tag(tag))
    me = g.ranks[g.backend.rank]

    def after():
        source, data = work.result
        sent = bytes(data[:_HEADER]).decode(errors="replace").strip()
        if sent != _describe(tensor):
            raise ValueError(f"recv: rank {g.ranks[source]} sent a tensor {sent}, but rank {me} receives into "
                             f"{_describe(tensor)}: the dtype and shape must match")  # fmt: skip
        out = _Staged(tensor)
        out.arr[...] = data[_HEADER:].view(out.arr.dtype).reshape(out.arr.shape)
        out.finish()
        result.append(g.ranks[source])

    result: list[int] = []
    handle = Work([work], after, [tensor], what)
    handle._value = result
    return _RecvWork(handle)


class _RecvWork(Work):
    """``irecv``'s Work; ``source_rank()`` is the rank the message came from (as torch's)."""

    __slots__ = ("_inner",)

    def __init__(self, inner: Work) -> None:
        self._inner = inner

    def is_completed(self) -> bool:
        return self._inner.is_completed()

    def wait(self, timeout=None) -> bool:
        return self._inner.wait(timeout)

    def source_rank(self) -> int:
        self._inner.wait()
        return self._inner._value[0]

    def get_future(self):
        return self._inner.get_future()


def recv(tensor: Tensor, src: int | None = None, group=None, tag: int = 0, group_src: int | None = None) -> int:
    """Same as torch.distributed.recv: returns the sender's rank."""
    work = irecv(tensor, src, group, tag, group_src)
    return work.source_rank()


# ---- objects --------------------------------------------------------------------------------------------


def _pickle(obj) -> np.ndarray:
    f = io.BytesIO()
    pickle.Pickler(f).dump(obj)
    return np.frombuffer(f.getvalue(), dtype=np.uint8)


def _unpickle(data: np.ndarray):
    return pickle.loads(data.tobytes())


def _gather_bytes(g, data: np.ndarray, what: str) -> list[np.ndarray]:
    """Every rank's bytes, on every rank: their sizes first, then the bytes padded to the largest."""
    n = g.backend.world_size
    sizes = np.zeros((n, 8), dtype=np.uint8)
    mine = np.array([data.nbytes], dtype=np.int64).view(np.uint8)
    g.backend.allgather(mine, sizes, f"{what} (sizes)").wait()
    lengths = sizes.view(np.int64).reshape(-1)
    width = max(int(lengths.max()), 1)
    padded = np.zeros(width, dtype=np.uint8)
    padded[: data.nbytes] = data
    every = np.empty((n, width), dtype=np.uint8)
    g.backend.allgather(padded, every, f"{what} (bytes)").wait()
    return [every[r, : int(lengths[r])] for r in range(n)]


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Same as torch.distributed.all_gather_object: ``object_list[r]`` becomes rank r's ``obj``."""
    g = _require(group)
    n = g.backend.world_size
    if not isinstance(object_list, list) or len(object_list) != n:
        raise ValueError(f"all_gather_object: object_list must be a list of {n} entries (one per rank)")
    for r, data in enumerate(_gather_bytes(g, _pickle(obj), "all_gather_object")):
        object_list[r] = _unpickle(data)


def gather_object(obj, object_gather_list: list | None = None, dst: int = 0, group=None,
                  group_dst: int | None = None) -> None:  # fmt: skip
    """Same as torch.distributed.gather_object: on ``dst``, ``object_gather_list[r]`` becomes rank r's ``obj``."""
    from pyframe.distributed.collectives import _root

    g = _require(group)
    n = g.backend.world_size
    root = _root(g, "gather_object", "dst", dst, group_dst)
    if g.backend.rank == root and (not isinstance(object_gather_list, list) or len(object_gather_list) != n):
        raise ValueError(f"gather_object: object_gather_list must be a list of {n} entries on dst")
    every = _gather_bytes(g, _pickle(obj), f"gather_object to {g.ranks[root]}")
    if g.backend.rank == root:
        for r, data in enumerate(every):
            object_gather_list[r] = _unpickle(data)


def broadcast_object_list(object_list: list, src: int = 0, group=None, device=None,
                          group_src: int | None = None) -> None:  # fmt: skip
    """Same as torch.distributed.broadcast_object_list: every rank's ``object_list`` entries become rank
    ``src``'s (the lists have the same length on every rank)."""
    from pyframe.distributed.collectives import _root

    g = _require(group)
    root = _root(g, "broadcast_object_list", "src", src, group_src)
    if not isinstance(object_list, list):
        raise TypeError(f"broadcast_object_list: object_list must be a list, got {type(object_list).__name__}")
    desc = f"broadcast_object_list from {g.ranks[root]} of {len(object_list)}"
    data = _pickle(object_list) if g.backend.rank == root else np.zeros(0, dtype=np.uint8)
    size = np.array([data.nbytes], dtype=np.int64)
    g.backend.broadcast(size.view(np.uint8), root, desc + " (size)").wait()
    buf = data.copy() if g.backend.rank == root else np.empty(int(size[0]), dtype=np.uint8)
    g.backend.broadcast(buf, root, desc + " (bytes)").wait()
    if g.backend.rank != root:
        object_list[:] = _unpickle(buf)


def scatter_object_list(scatter_object_output_list: list, scatter_object_input_list: list | None = None,
                        src: int = 0, group=None, group_src: int | None = None) -> None:  # fmt: skip
    """Same as torch.distributed.scatter_object_list: ``output[0]`` becomes ``src``'s ``input[rank]``."""
    g = _require(group)
    n = g.backend.world_size
    objs = [None] * n
    if g.backend.rank == g.ranks.index(src if group_src is None else g.ranks[group_src]):
        if not isinstance(scatter_object_input_list, list) or len(scatter_object_input_list) != n:
            raise ValueError(f"scatter_object_list: the input list on src must have {n} entries")
        objs = list(scatter_object_input_list)
    broadcast_object_list(objs, src, group, group_src=group_src)
    with no_grad():
        scatter_object_output_list[0] = objs[g.backend.rank]
