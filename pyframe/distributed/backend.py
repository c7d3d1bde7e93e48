"""What a process-group backend provides, and the built-in one-process backend.

A backend moves bytes between processes; pyframe's process-group layer (``pyframe.distributed``)
checks arguments, keeps tensors' bookkeeping and does any arithmetic in the C core. Backends come
from plugins through the ``pyframe_distributed_backends`` hookspec; the MPI one is the
``pyframe-mpi`` distribution under ``plugins/mpi``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

__all__ = ["Backend", "Work", "DistError", "DistBackendError", "DistTimeoutError", "SingleBackend", "REDUCE_OPS",
           "split_mismatch"]  # fmt: skip

# what ``Backend.allreduce`` must support (AVG is SUM then a division in the C core)
REDUCE_OPS = ("sum", "product", "max", "min", "band", "bor", "bxor")


class DistError(RuntimeError):
    """Same as torch.distributed.DistError: a distributed operation failed."""


class DistBackendError(DistError):
    """Same as torch.distributed.DistBackendError: the backend failed, or the ranks disagree."""


class DistTimeoutError(DistBackendError):
    """**pyframe**: a collective did not complete within the process group's ``timeout`` (a rank died,
    hangs, or skipped the call)."""


class Work(Protocol):
    """A started operation. ``wait`` blocks until it completes (raising what it failed with) and raises
    ``DistTimeoutError`` once ``timeout`` seconds (default: the backend's) have passed."""

    def is_completed(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> None: ...


class Backend(Protocol):
    """The contract a backend plugin implements. Buffers are C-contiguous NumPy arrays sharing the
    tensors' memory (or staging copies pyframe made); every operation works in place and returns a
    :class:`Work`. Operations run in the order they are issued; ``async_op=False`` may complete before
    returning. ``desc`` describes the call (collective, op, dtype, shape, root) and must be equal on every
    rank: a backend compares it across ranks before moving data and raises ``DistBackendError`` naming
    what each rank passed when they differ. ``desc=None`` skips the comparison (DDP checks the first bucket of
    each backward, whose description names them all)."""

    name: str
    rank: int
    world_size: int

    def allreduce(self, buf: np.ndarray, op: str, desc: str, async_op: bool = False) -> Work:
        """Reduce ``buf`` over all ranks in place; ``op`` is one of :data:`REDUCE_OPS`."""

    def prepare_allreduce(self, buf: np.ndarray, op: str, desc: str) -> Callable[[], None]:
        """Optional: a callable that does ``allreduce(buf, op, desc).wait()`` each time it is called, with what
        does not change between calls made once (``all_reduce`` keeps it for a tensor reduced again)."""

    def broadcast(self, buf: np.ndarray, src: int, desc: str, async_op: bool = False) -> Work:
        """``buf`` on every rank becomes ``src``'s ``buf``."""

    def allgather(self, send: np.ndarray, recv: np.ndarray, desc: str, async_op: bool = False) -> Work:
        """``recv`` (shape ``(world_size, *send.shape)``) gets every rank's ``send``, in rank order."""

    def reduce_scatter(self, send: np.ndarray, recv: np.ndarray, op: str, desc: str, async_op: bool = False) -> Work:
        """``send`` has shape ``(world_size, *recv.shape)``; rank r's ``recv`` gets the reduction of row r."""

    def reduce(self, buf: np.ndarray, dst: int, op: str, desc: str, async_op: bool = False) -> Work:
        """``dst``'s ``buf`` gets the reduction (``op``) of every rank's ``buf``."""

    def gather(self, send: np.ndarray, recv: np.ndarray | None, dst: int, desc: str, async_op: bool = False) -> Work:
        """``dst``'s ``recv`` (shape ``(world_size, *send.shape)``; None elsewhere) gets every rank's ``send``."""

    def scatter(self, send: np.ndarray | None, recv: np.ndarray, src: int, desc: str, async_op: bool = False) -> Work:
        """Rank r's ``recv`` gets row r of ``src``'s ``send`` (shape ``(world_size, *recv.shape)``; None elsewhere)."""

    def alltoall(self, send: np.ndarray, recv: np.ndarray, desc: str, async_op: bool = False) -> Work:
        """Rank r's ``recv[q]`` gets rank q's ``send[r]`` (both of shape ``(world_size, ...)``)."""

    def alltoallv(self, send: np.ndarray, send_counts: list[int], recv: np.ndarray, recv_counts: list[int],
                  desc: str, async_op: bool = False, row_bytes: int = 1) -> Work:  # fmt: skip
        """Rows of ``row_bytes`` bytes: rank q's ``recv`` gets, after ``recv_counts[:q]`` rows, the ``recv_counts[q]``
        rows rank q sent here (its ``send_counts[r]`` rows after ``send_counts[:r]``). Every rank's counts are
        exchanged first, as part of the operation (so ``async_op=True`` returns at once): counts that disagree
        raise ``ValueError`` (:func:`split_mismatch`) on every rank and no data moves."""

    def barrier(self, desc: str = "barrier", async_op: bool = False) -> Work:
        """Completes once every rank has called it."""

    def send(self, payload: np.ndarray, dst: int, tag: int) -> Work:
        """Send ``payload`` (uint8) to ``dst``; completes when the buffer may be reused."""

    def recv(self, src: int | None, tag: int) -> Work:
        """Receive one message from ``src`` (None: any rank); ``work.result`` is ``(source, uint8 array)``."""

    def split(self, ranks: list[int]) -> Backend | None:
        """A backend over ``ranks`` (every rank calls it); None on a rank not in ``ranks``."""

    def shutdown(self, propagating: bool = False) -> None:
        """Let queued operations finish, tell the other ranks this one left, release the transport."""


class _Done:
    """A Work that completed when it was made."""

    __slots__ = ("result",)

    def __init__(self, result=None) -> None:
        self.result = result

    def is_completed(self) -> bool:
        return True

    def wait(self, timeout: float | None = None) -> None:
        return None


DONE = _Done()


def split_mismatch(what: str, table: list, ranks: list[int]) -> str | None:
    """What is wrong with an all-to-all's counts, or None: ``table[r]`` is group rank r's ``[send_counts,
    recv_counts]``, ``ranks`` the group's global ranks; what rank r sends to q must be what q expects from r."""
    n = len(table)
    bad = [f"rank {ranks[r]} sends {table[r][0][q]} rows to rank {ranks[q]}, which expects {table[q][1][r]}"
           for r in range(n) for q in range(n) if table[r][0][q] != table[q][1][r]]  # fmt: skip
    return f"{what}: the ranks' split sizes disagree: {'; '.join(bad)}" if bad else None


def _identity() -> None:
    return None


class SingleBackend:
    """The built-in backend for a world of one process: every collective is the identity or a copy.
    Needs no transport, so ``init_process_group("single")`` works everywhere at no import cost."""

    name = "single"
    rank = 0
    world_size = 1

    def __init__(self, timeout: float = 0.0) -> None:
        self.timeout = timeout

    def allreduce(self, buf, op, desc="", async_op=False) -> Work:
        return DONE

    def prepare_allreduce(self, buf, op, desc=""):
        return _identity  # one rank: every reduction is the identity

    def broadcast(self, buf, src, desc="", async_op=False) -> Work:
        return DONE

    def allgather(self, send, recv, desc="", async_op=False) -> Work:
        recv[0] = send  # interop copy of the caller's bytes, no arithmetic
        return DONE

    def reduce_scatter(self, send, recv, op, desc="", async_op=False) -> Work:
        recv[...] = send[0]
        return DONE

    def reduce(self, buf, dst, op, desc="", async_op=False) -> Work:
        return DONE

    def gather(self, send, recv, dst, desc="", async_op=False) -> Work:
        recv[0] = send
        return DONE

    def scatter(self, send, recv, src, desc="", async_op=False) -> Work:
        recv[...] = send[0]
        return DONE

    def alltoall(self, send, recv, desc="", async_op=False) -> Work:
        recv[...] = send
        return DONE

    def alltoallv(self, send, send_counts, recv, recv_counts, desc="", async_op=False, row_bytes=1) -> Work:
        bad = split_mismatch("all_to_all_single", [[list(send_counts), list(recv_counts)]], [0])
        if bad is not None:
            raise ValueError(bad)
        recv[:] = send
        return DONE

    def barrier(self, desc="barrier", async_op=False) -> Work:
        return DONE

    def send(self, payload, dst, tag) -> Work:
        raise ValueError("the 'single' backend has no other rank to send to")

    def recv(self, src, tag) -> Work:
        raise ValueError("the 'single' backend has no other rank to receive from")

    def split(self, ranks):
        return self if ranks == [0] else None

    def shutdown(self, propagating: bool = False) -> None:
        return None
