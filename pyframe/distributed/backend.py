"""What a process-group backend provides, and the built-in one-process backend.

A backend moves bytes between processes; pyframe's process-group layer (``pyframe.distributed``)
checks arguments, keeps tensors' bookkeeping and does any arithmetic in the C core. Backends come
from plugins through the ``pyframe_distributed_backends`` hookspec; the MPI one is the
``pyframe-mpi`` distribution under ``plugins/mpi``.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

__all__ = ["Backend", "Work", "DistError", "DistBackendError", "DistTimeoutError", "SingleBackend", "REDUCE_OPS"]

# what ``Backend.allreduce`` must support (AVG is SUM then a division in the C core)
REDUCE_OPS = ("sum", "product", "max", "min")


class DistError(RuntimeError):
    """Same as torch.distributed.DistError: a distributed operation failed."""


class DistBackendError(DistError):
    """Same as torch.distributed.DistBackendError: the backend failed, or the ranks disagree."""


class DistTimeoutError(DistBackendError):
    """**pyframe**: a collective did not complete within the process group's ``timeout`` (a rank died,
    hangs, or skipped the call)."""


class Work(Protocol):
    """A started operation. ``wait`` blocks until it completes and raises ``DistTimeoutError`` once
    the backend's timeout has passed."""

    def is_completed(self) -> bool: ...

    def wait(self) -> None: ...


class Backend(Protocol):
    """The contract a backend plugin implements. Buffers are C-contiguous NumPy arrays sharing the
    tensors' memory; every operation works in place and returns a :class:`Work` without waiting
    (the caller waits). All ranks call the same operations in the same order with buffers of the
    same size and dtype (pyframe checks this before each user-level collective)."""

    name: str
    rank: int
    world_size: int

    def allreduce(self, buf: np.ndarray, op: str) -> Work:
        """Reduce ``buf`` over all ranks in place; ``op`` is one of :data:`REDUCE_OPS`."""

    def broadcast(self, buf: np.ndarray, src: int) -> Work:
        """Overwrite ``buf`` on every rank with rank ``src``'s."""

    def allgather(self, send: np.ndarray, recv: np.ndarray) -> Work:
        """``recv`` (shape ``(world_size, *send.shape)``) gets every rank's ``send``, in rank order."""

    def barrier(self) -> Work: ...

    def shutdown(self) -> None:
        """Release the transport; after a failed operation, end the whole job rather than wait on it."""


class _Done:
    """A Work that completed when it was made."""

    __slots__ = ()

    def is_completed(self) -> bool:
        return True

    def wait(self) -> None:
        return None


DONE = _Done()


class SingleBackend:
    """The built-in backend for a world of one process: every collective is the identity. Needs no
    transport, so ``init_process_group("single")`` works everywhere at no import cost."""

    name = "single"
    rank = 0
    world_size = 1

    def __init__(self, timeout: float = 0.0) -> None:
        self.timeout = timeout

    def allreduce(self, buf: np.ndarray, op: str) -> Work:
        return DONE

    def broadcast(self, buf: np.ndarray, src: int) -> Work:
        return DONE

    def allgather(self, send: np.ndarray, recv: np.ndarray) -> Work:
        recv[0] = send  # interop copy of the caller's bytes, no arithmetic
        return DONE

    def barrier(self) -> Work:
        return DONE

    def shutdown(self) -> None:
        return None
