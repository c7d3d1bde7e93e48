"""The machinery under the ``"mpi"`` backend: one executor per process, running operations in the order
they were issued, and a notice channel through which a rank that leaves tells the others.

Every collective is two steps, both run by the executor, in issue order:

1. **the check**: a fixed-size ``MPI_Allreduce`` (SUM, ``CHECK_BYTES``) on a control communicator whose lanes
   say whether every rank is in the same collective with the same arguments (see ``CHECK_BYTES`` below). On a
   mismatch every rank gathers every rank's description and raises; the data step is skipped on every rank, so
   the group stays usable. A small SUM all-reduce travels inside the check's message: check and data in one
   round trip.
2. **the data**: once every rank has passed the check they are all committed to the same call, so it is a
   blocking, fused MPI call (``MPI_Allreduce``, ...), where Open MPI uses its best algorithms.

Both are blocking MPI calls (the cheapest Open MPI has: its non-blocking collectives cost twice as much for a
small message; and a blocking and a non-blocking collective never pair, so every rank uses the same kind). A
blocking MPI call cannot be interrupted, so a watchdog thread watches it: a rank it needs that left (the notices
say so, with how many collectives it finished), or the group's timeout passing, ends the job with a message
naming why, as no rank waiting in that collective could ever return.

A synchronous call made while nothing is queued runs on the calling thread (no hand-off latency); anything
else (``async_op=True``, DDP's buckets) goes to the communication thread, so it progresses while Python
computes. MPI calls release the GIL and yield the core while idle (see ``yield_when_idle``). MPI is initialised
with ``MPI_THREAD_MULTIPLE``.
"""

from __future__ import annotations

import collections
import ctypes
import os
import sys
import threading
import time
import zlib
from typing import Any

import numpy as np

from pyframe_mpi.direct import attach

_TICK = 0.25  # the watchdog's period: how late past the failure or the deadline a blocked call ends the job
_NOTICE_TAG = 7
_NOTICE_LEN = 2 + 2 * 64  # reason, number of pairs, then (communicator id, committed collectives) pairs
_DESC_BYTES = 200

# why a rank left: the code sent in its notice, and what the other ranks' errors say
REASONS = {
    1: "called destroy_process_group()",
    2: "exited without calling destroy_process_group() (its script ended, returned early or called sys.exit)",
    3: "called destroy_process_group() while an exception was propagating",
}


_ERRORS: tuple = ()


def _errors():
    global _ERRORS
    if not _ERRORS:
        from pyframe.distributed.backend import DistBackendError, DistTimeoutError

        _ERRORS = (DistBackendError, DistTimeoutError)
    return _ERRORS


def yield_when_idle() -> None:
    """Turn on Open MPI's ``mpi_yield_when_idle``: a thread waiting inside an MPI call yields its core at every
    idle poll instead of spinning.

    A rank runs two threads (Python and the communication thread); a spinning communication thread would take a
    core from the computation it should hide behind. On a core with nothing else to run the yield returns at once,
    and on a busy machine a waiting rank that yields lets the rank it waits for run sooner (measured: small
    collectives faster with it, not slower). Set through the run-time switch of the already loaded
    ``libopen-pal``, so it holds also when the script imported mpi4py (and started MPI) first; given as the MCA
    variable as well. ``OMPI_MCA_mpi_yield_when_idle=0`` keeps Open MPI's spinning."""
    if os.environ.get("OMPI_MCA_mpi_yield_when_idle", "1") == "0":  # noqa: SIM112 - Open MPI's own name
        return
    os.environ["OMPI_MCA_mpi_yield_when_idle"] = "1"  # noqa: SIM112 - read by MPI_Init if it has not run yet
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "libopen-pal" in line})
        for path in paths:
            fn = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY).opal_progress_set_yield_when_idle
            fn.argtypes, fn.restype = [ctypes.c_bool], None
            fn(True)
    except (OSError, AttributeError):
        pass  # another MPI, or no such symbol: the MCA variable is all there is


# The check message: every rank all-reduces (SUM) the same number of bytes on the control communicator, whatever it
# checks, so ranks in different calls still pair byte for byte (never a truncation or a hang, only lanes that
# disagree). It opens with LANES values in the message's dtype: PAIRS pairs (h, h*h) of 7-bit pieces of the call's
# description hash, then a 1 from every rank. The ranks agree exactly when n * sum(h*h) == sum(h)**2 for every
# pair (equality in Cauchy-Schwarz: every h equal) and the last lane sums to n; all sums stay exact integers in
# float32 up to MAX_FUSED_RANKS ranks. A SUM all-reduce that fits rides in the same message after the lanes (one
# round trip for check and data); other calls send zeros there and move their data after the check.
# The size: CHECK_BYTES (1 KB of data after the lanes in any fused dtype), except after the same larger SUM
# all-reduce (up to MAX_CHECK_BYTES) was checked twice in a row on the communicator: then the next check is that
# call's size (``MPIBackend.note_fit``), so a loop reducing a 16 KB tensor makes one round trip per call instead of
# two. Every rank knows the size without a message: it follows from the calls the ranks agreed on. The message's
# size is most of a small collective's cost (2 ranks, Open MPI's shared memory, per call: 1 KB 1.78 us, 1,176 B
# 1.85 us, 2 KB 2.25 us, 256 B 0.96 us), so the default stays small.
PAIRS = 9
LANES = 2 * PAIRS + 1
CHECK_BYTES = 1024 + 8 * LANES
MAX_CHECK_BYTES = (32 << 10) + 8 * LANES  # measured: riding pays up to 32 KB (the copies in and out cost more above)
MAX_FUSED_RANKS = 1024
FUSED_DTYPES = ("float32", "float64", "int32", "int64")
_LANE_CACHE: dict[str, list[int]] = {}


def lanes(desc: str) -> list[int]:
    """The check lanes of ``desc`` (cached)."""
    out = _LANE_CACHE.get(desc)
    if out is None:
        if len(_LANE_CACHE) > 4096:
            _LANE_CACHE.clear()
        data = desc.encode()
        h = zlib.crc32(data) << 32 | zlib.adler32(data)
        out = []
        for i in range(PAIRS):
            v = (h >> (7 * i)) & 127
            out += [v, v * v]
        out.append(1)
        _LANE_CACHE[desc] = out
    return out


_MESSAGES: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def check_message(desc: str, dtype, nbytes: int = CHECK_BYTES, payload: np.ndarray | None = None) -> np.ndarray:
    """``nbytes`` of ``dtype``: the lanes of ``desc``, then ``payload`` (if any), then zeros. The array is reused by
    the next call with the same description and size (operations run one at a time)."""
    key = (desc, np.dtype(dtype).char, nbytes)
    got = _MESSAGES.get(key)
    if got is None:
        if len(_MESSAGES) > 1024:
            _MESSAGES.clear()
        msg = np.zeros(nbytes // np.dtype(dtype).itemsize, dtype=dtype)
        msg[:LANES] = lanes(desc)
        got = _MESSAGES[key] = (msg, msg[:LANES].copy())
    msg, first = got
    msg[:LANES] = first  # the last all-reduce left sums here (what lies after the payload is never read)
    if payload is not None:
        msg[LANES : LANES + payload.size] = payload.reshape(-1)
    return msg


def agreed(msg: np.ndarray, n: int) -> bool:
    """Whether the summed lanes say every one of the ``n`` ranks sent the same description."""
    v = msg[:LANES].tolist()
    if v[-1] != n:
        return False
    return all(n * v[2 * i + 1] == v[2 * i] * v[2 * i] for i in range(PAIRS))


def ride_bytes(buf: np.ndarray, ranks: int) -> int:
    """The bytes of a check message a SUM all-reduce of ``buf`` rides in (the lanes, then the data, rounded up to 8
    bytes so every fused dtype divides it), or 0 when it cannot ride (its dtype, or too many ranks)."""
    if buf.dtype.name not in FUSED_DTYPES or ranks > MAX_FUSED_RANKS:
        return 0
    return (LANES * buf.dtype.itemsize + buf.nbytes + 7) // 8 * 8


def fit_bytes(need: int) -> int:
    """The check size a call needing ``need`` bytes (``ride_bytes``; 0 for any other call) asks for when repeated:
    its own size between CHECK_BYTES and MAX_CHECK_BYTES, otherwise CHECK_BYTES."""
    return need if CHECK_BYTES < need <= MAX_CHECK_BYTES else CHECK_BYTES


class Op:
    """One operation: what it is (for the check and for messages) and the blocking MPI call(s) to run; for a SUM
    all-reduce, ``fused``, the buffer that rides in the check message when ``need`` bytes fit in it (``run`` is then
    skipped), and ``fit``, the check size it asks for when repeated (see ``fit_bytes``)."""

    __slots__ = ("comm", "seq", "desc", "what", "run", "fused", "need", "fit", "event", "error")

    def __init__(self, comm: Any, desc: str, what: str, run, fused: np.ndarray | None = None) -> None:
        self.comm, self.desc, self.what, self.run, self.fused = comm, desc, what, run, fused
        self.need = 0 if fused is None else ride_bytes(fused, comm.size)
        self.fit = fit_bytes(self.need)
        self.seq = 0
        self.event: threading.Event | None = None  # made when the operation is queued (inline ones need none)
        self.error: BaseException | None = None


class Engine:
    """One per process: the executor (inline or on its thread), the notices, the job-ending hooks."""

    def __init__(self, MPI) -> None:
        self.MPI = MPI
        self.world = MPI.COMM_WORLD
        self.rank, self.size = self.world.Get_rank(), self.world.Get_size()
        self.lock = threading.Lock()  # guards pending, queue, left
        self.cv = threading.Condition(self.lock)
        self.queue: collections.deque[Op] = collections.deque()
        self.pending = 0
        self.thread: threading.Thread | None = None
        self.comms: dict[int, Any] = {}  # live communicators by id (the same ids on every rank)
        self.next_id = 0
        self.left: dict[int, tuple[int, dict[int, int]]] = {}  # world rank -> (reason, {comm id: committed})
        self.failed: str | None = None
        # the operation whose blocking MPI call runs (one at a time; its seq tells one call from the next): what
        # the watchdog watches
        self.inflight: Op | None = None
        self.notice_lock = threading.Lock()
        self.notices = self.world.Dup()
        self.notices.Set_errhandler(MPI.ERRORS_RETURN)
        self.notice_buf = np.zeros(_NOTICE_LEN, dtype=np.int64)
        self.notice_req = self.notices.Irecv(self.notice_buf, source=MPI.ANY_SOURCE, tag=_NOTICE_TAG)
        self.status = MPI.Status()
        self.watcher: threading.Thread | None = None
        # the agreement check before every collective; PYFRAME_DISTRIBUTED_CHECK=0 turns it off (one round trip
        # less per collective; a mismatch then hangs or reduces garbage, as raw MPI does)
        self.check = os.environ.get("PYFRAME_DISTRIBUTED_CHECK", "1") != "0"
        # (ffi, lib) of the C extension that runs a prepared all-reduce in one call (direct.py), or None
        self.direct = attach(self.MPI, self.world)
        yield_when_idle()
        if self.size > 1:
            self.watcher = threading.Thread(target=self._watch, name="pyframe-mpi-watchdog", daemon=True)
            self.watcher.start()
            # started now, not by the first asynchronous call: starting a thread waits for it to run, which took
            # 5-11 ms on the loaded machine (the first async_op=True call should return at once)
            self._start_thread()

    def _start_thread(self) -> None:
        self.thread = threading.Thread(target=self._loop, name="pyframe-mpi-comm", daemon=True)
        self.thread.start()

    # ---- notices ------------------------------------------------------------------------------------

    def poll_notices(self) -> None:
        if not self.notice_lock.acquire(blocking=False):
            return  # another thread is waiting on the notices and handles them
        try:
            while self.notice_req is not None and self.notice_req.Test(self.status):
                self._take_notice()
        finally:
            self.notice_lock.release()

    def _take_notice(self) -> None:
        """Record the notice just received (``notice_buf``, ``status``) and post the next receive; holds
        ``notice_lock``."""
        buf = self.notice_buf
        if buf[0] != 0:
            pairs = {int(buf[2 + 2 * i]): int(buf[3 + 2 * i]) for i in range(int(buf[1]))}
            with self.lock:
                self.left[self.status.Get_source()] = (int(buf[0]), pairs)
        self.notice_req = self.notices.Irecv(self.notice_buf, source=self.MPI.ANY_SOURCE, tag=_NOTICE_TAG)

    def announce(self, reason: int) -> None:
        """Tell every other rank that this one leaves every live communicator, with how many collectives it
        committed to on each: a rank waiting for a later one knows it will never come."""
        if self.size == 1:
            return
        live = list(self.comms.values())[-64:]
        msg = np.zeros(_NOTICE_LEN, dtype=np.int64)
        msg[0], msg[1] = reason, len(live)
        for i, c in enumerate(live):
            msg[2 + 2 * i], msg[3 + 2 * i] = c.id, c.committed
        reqs = [self.notices.Isend(msg, dest=r, tag=_NOTICE_TAG) for r in range(self.size) if r != self.rank]
        deadline = time.monotonic() + 2.0
        while not self.MPI.Request.Testall(reqs) and time.monotonic() < deadline:
            time.sleep(1e-4)

    def doomed(self, op: Op) -> str | None:
        """Why ``op`` can never complete: a rank it needs left after fewer collectives on its communicator."""
        c = op.comm
        for r, (reason, counts) in self.left.items():
            n = counts.get(c.id)
            if r in c.world_ranks and n is not None and n < op.seq:
                return (f"rank {r} {REASONS.get(reason, 'left')} after {n} collectives on this group, while rank "
                        f"{self.rank} waits in {op.what} (collective #{op.seq} of the group)")  # fmt: skip
        return None

    # ---- running operations ---------------------------------------------------------------------------

    def submit(self, op: Op, async_op: bool) -> Op:
        c = op.comm
        c.issued += 1
        op.seq = c.issued
        with self.lock:
            inline = not async_op and self.pending == 0
            if not inline:
                op.event = threading.Event()
                self.pending += 1
                self.queue.append(op)
                if self.thread is None:
                    self._start_thread()
                self.cv.notify()
        if inline:
            self.execute(op)
        return op

    def _loop(self) -> None:
        while True:
            with self.lock:
                while not self.queue:
                    self.cv.wait()
                op = self.queue.popleft()
            if op is None:
                return
            self.execute(op)
            with self.lock:
                self.pending -= 1
            op.event.set()

    def stop_thread(self, seconds: float) -> bool:
        """Let the queued operations finish (at most ``seconds``), then end the thread; False if it is stuck."""
        t = self.thread
        if t is None:
            return True
        with self.lock:
            self.queue.append(None)
            self.cv.notify()
        t.join(seconds)
        if t.is_alive():
            return False
        self.thread = None
        return True

    def execute(self, op: Op) -> None:
        DistBackendError, _ = _errors()
        try:
            if self.failed is not None:
                raise DistBackendError(f"{op.what}: the process group failed earlier ({self.failed})")
            c = op.comm
            self.inflight = op
            rode = False
            if c.size > 1 and op.desc is not None and self.check:
                rode = self._check(op)
            else:
                c.committed += 1
            if op.run is not None and not rode:
                op.run()
        except BaseException as e:  # noqa: BLE001 - delivered to whoever waits on the operation
            op.error = e
        finally:
            self.inflight = None

    def _check(self, op: Op) -> bool:
        """The check of ``op`` on its communicator's current check size; True if its data rode in the message (it
        is done), False if its data is still to move; raises on a mismatch."""
        c = op.comm
        size = c.check_bytes
        rides = 0 < op.need <= size
        buf = op.fused if rides else None
        msg = check_message(op.desc, np.int64 if buf is None else buf.dtype, size, buf)
        c.ctl.Allreduce(self.MPI.IN_PLACE, msg, op=self.MPI.SUM)
        c.committed += 1  # every rank is in this collective (the same one or not): it counts as done
        if not agreed(msg, c.size):
            self.mismatch(op)
        if c.steady != op.fit:
            c.note_fit(op.fit)
        if buf is not None:
            buf.reshape(-1)[:] = msg[LANES : LANES + buf.size]
        return rides

    def mismatch(self, op: Op) -> None:
        """The check said the ranks disagree (every rank learns it from the same sums): gather every rank's
        description and raise ``DistBackendError`` naming what each called."""
        DistBackendError, _ = _errors()
        c = op.comm
        c.reset_fit()  # every rank saw the same sums: every rank starts over from the default check size
        mine = np.frombuffer(op.desc.encode("ascii", "replace")[:_DESC_BYTES].ljust(_DESC_BYTES), dtype=np.uint8)
        every = np.empty((c.size, _DESC_BYTES), dtype=np.uint8)
        self.inflight = op
        try:
            c.ctl.Allgather(mine, every)
        finally:
            self.inflight = None
        lines = "; ".join(
            f"rank {c.world_ranks[r]}: {bytes(row).decode('ascii', 'replace').strip()}" for r, row in enumerate(every)
        )
        raise DistBackendError(
            f"{op.what}: the ranks called different collectives or passed tensors that differ: {lines}"
        )

    # ---- the watchdog: MPI's blocking calls have no timeout and cannot be interrupted ------------------------

    def _watch(self) -> None:
        """Every ``_TICK`` seconds, while the executor is inside a blocking MPI call: take the notices of ranks
        that left; if one of them left before the collective the call waits in, or the group's timeout has
        passed, the call can never return, so end the job naming why (the other ranks' calls cannot return
        either)."""
        seen, since = (None, 0), 0.0
        while True:
            time.sleep(_TICK)
            op = self.inflight
            if op is None:
                continue
            now = time.monotonic()
            if (op, op.seq) != seen:  # a new call: its timeout counts from now (within a tick of its start)
                seen, since = (op, op.seq), now
            self.poll_notices()
            why = self.doomed(op)
            if why is not None:
                self.failed = why
                self.abort(f"{op.what}: {why}; ending the job")
            elif now - since > op.comm.timeout and self.inflight is op:
                self.failed = f"{op.what} timed out"
                self.abort(
                    f"MPI {op.what} did not complete within the process group's timeout of {op.comm.timeout:g} s "
                    f"on rank {self.rank}: another rank died, hangs, or did not call the same collective; ending "
                    "the job"
                )

    # ---- ending the job ---------------------------------------------------------------------------------

    def abort(self, message: str) -> None:
        err = sys.__stderr__ or sys.stderr  # not a capture that would print only after we return (we do not)
        err.write(f"pyframe-mpi: {message}\n")
        err.flush()
        sys.stdout.flush()
        self.world.Abort(1)
