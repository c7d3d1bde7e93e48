"""The lean synchronous all-reduce: one prepared call per (buffer, op, description), run on the calling thread.

A loop that all-reduces the same tensor (a metric, a loss, a small buffer) pays, per call, only what the MPI calls
need: no new operation record, no executor lock, no ``Work``. What does not change between calls is made once, when
the call is prepared: the check message (its lanes, and for a small SUM the slot its data rides in), the bytes the
summed lanes must equal, the bound MPI methods, the record the watchdog reads while the call blocks. The agreement
check stays on: it is the executor's message, byte for byte (``engine.check_message``), so a rank on this path and
a rank on the executor's pair and compare as usual.

The summed lanes equal ``world_size`` times this rank's own lanes exactly when every rank sent the same lanes
(if they are equal, each pair sums to ``n*h`` and ``n*h*h``; conversely ``n * (n*h*h) == (n*h)**2`` is the equality
case of Cauchy-Schwarz that ``engine.agreed`` tests): so one comparison of bytes decides, and every rank decides the
same. The check's size follows the calls the ranks agreed on (``engine.py``): a call runs here on the default size,
or on its own size once it has been checked twice in a row (a repeated SUM of up to 32 KB then rides in its own
check message). Otherwise, and whenever asynchronous work is queued or the group has failed, the prepared call hands
over to the executor (``MPIBackend.allreduce``), which takes any size, keeps issue order and raises what failed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyframe_mpi.engine import CHECK_BYTES, LANES, Op, fit_bytes, lanes, ride_bytes

__all__ = ["prepare_allreduce"]


def prepare_allreduce(backend, buf: np.ndarray, op: str, desc: str) -> Callable[[], None]:
    """A callable that all-reduces ``buf`` (C-contiguous, a dtype MPI reduces natively) in place with ``op`` on
    ``backend``'s communicator, checked against the other ranks with ``desc``, and returns when done, failing as
    the executor's operations do (``DistBackendError`` on every rank on a mismatch; the job ended by the watchdog
    when a rank it waits for left or the timeout passed)."""
    eng = backend.engine
    n = backend.size
    record = Op(backend, desc, "all_reduce", None)  # what a long wait names (the watchdog's)
    if not (n > 1 and eng.check and desc is not None):
        plans = None
    else:
        need = ride_bytes(buf, n) if op == "sum" else 0
        record.fit = fit_bytes(need)
        # the check on the default size (the data rides if it fits) and, for a SUM that asks for a larger size,
        # the check on its own size with the data riding: (parts, rides) each
        rides = 0 < need <= CHECK_BYTES
        plans = [(_check_parts(backend, desc, buf.dtype if rides else np.dtype(np.int64), CHECK_BYTES), rides)]
        if record.fit != CHECK_BYTES:
            plans.append((_check_parts(backend, desc, buf.dtype, record.fit), True))
    if eng.direct is not None and buf.size < 1 << 31:
        return _direct_call(backend, buf, op, record, plans)
    return _mpi4py_call(backend, buf, op, record, plans)


def _handed_over(backend, buf: np.ndarray, op: str, desc: str) -> None:
    backend.allreduce(buf, op, desc).wait()


def _direct_call(backend, buf: np.ndarray, op: str, record: Op, plans: list | None):
    """The call through ``direct.c``: one C call per all-reduce, the check's copies and comparison included."""
    from pyframe_mpi.direct import CODES, OPS

    eng, MPI = backend.engine, backend._mpi
    ffi, lib = eng.direct
    keep: list = [buf]  # what the records point into lives as long as the callable (run.keep)
    recs = []
    for parts, rides in plans or [(None, False)]:
        rec = ffi.new("struct pf_allreduce *")
        rec.comm = MPI._handleof(backend.comm)
        rec.data, rec.count, rec.type, rec.op = ffi.from_buffer(buf), buf.size, CODES[buf.dtype.name], OPS[op]
        if parts is not None:
            msg, _, first, expected = parts
            keep += [msg, first, expected]
            rec.ctl = MPI._handleof(backend.ctl)
            rec.msg, rec.msg_count, rec.msg_type = ffi.from_buffer(msg), msg.size, CODES[msg.dtype.name]
            rec.lanes, rec.expected, rec.lanes_bytes = ffi.from_buffer(first), ffi.from_buffer(expected), first.nbytes
            rec.fused = rides
        keep.append(rec)
        recs.append(rec)
    desc, fit = record.desc, record.fit
    on_default = recs[0]
    on_own = recs[-1]  # the same record when the call asks for the default size

    def failed(rc: int, rec) -> None:
        if rec.stage:
            backend.committed += 1
        if rc == lib.PF_MISMATCH:
            eng.mismatch(record)
        if rc == lib.PF_BAD_RECORD:
            raise ValueError(f"all_reduce: the prepared call's record was refused by the C path: {desc}")
        raise MPI.Exception(rc)

    if plans is None:
        call = lib.pf_allreduce_plain

        def run() -> None:
            if eng.pending or eng.failed is not None:
                return _handed_over(backend, buf, op, desc)
            backend.issued += 1
            record.seq = backend.issued
            eng.inflight = record  # while the call blocks, the watchdog ends the job if a rank it needs left
            try:
                rc = call(on_default)
            finally:
                eng.inflight = None
            if rc:
                failed(rc, on_default)
            backend.committed += 1

    else:
        call = lib.pf_allreduce_run

        def run() -> None:
            if eng.pending or eng.failed is not None:
                return _handed_over(backend, buf, op, desc)
            if backend.steady == fit:  # the check is on this call's own size
                rec = on_own
            elif backend.check_bytes == CHECK_BYTES:
                rec = on_default
            else:  # another call's size: the executor's message takes any
                return _handed_over(backend, buf, op, desc)
            backend.issued += 1
            record.seq = backend.issued
            eng.inflight = record  # while the call blocks, the watchdog ends the job if a rank it needs left
            try:
                rc = call(rec)
            finally:
                eng.inflight = None
            if rc:
                failed(rc, rec)
            backend.committed += 1
            if backend.steady != fit:
                backend.note_fit(fit)

    run.keep = keep  # type: ignore[attr-defined]
    return run


def _mpi4py_call(backend, buf: np.ndarray, op: str, record: Op, plans: list | None):
    """The same through mpi4py (when ``direct.c`` was not built or does not drive mpi4py's MPI)."""
    eng, MPI = backend.engine, backend._mpi
    mpi_op, in_place = backend._ops[op], MPI.IN_PLACE
    data_call = backend.comm.Allreduce
    desc, fit = record.desc, record.fit

    def handed_over() -> None:
        _handed_over(backend, buf, op, desc)

    if plans is None:

        def run() -> None:
            if eng.pending or eng.failed is not None:
                return handed_over()
            backend.issued += 1
            backend.committed += 1
            record.seq = backend.issued
            eng.inflight = record
            try:
                data_call(in_place, buf, mpi_op)
            finally:
                eng.inflight = None

        return run

    # the per-call copies and the comparison on memoryviews of bytes: a third of NumPy's cost at these sizes
    flat = memoryview(buf.reshape(-1)).cast("B")
    ways = []
    for (msg, head, first, expected), rides in plans:
        slot = memoryview(msg[LANES : LANES + buf.size]).cast("B") if rides else None
        ways.append((msg, memoryview(head).cast("B"), memoryview(first).cast("B"), expected, slot))
    on_default, on_own = ways[0], ways[-1]
    check_call, sum_op = backend.ctl.Allreduce, MPI.SUM

    def run() -> None:
        if eng.pending or eng.failed is not None:
            return handed_over()
        if backend.steady == fit:  # the check is on this call's own size
            msg, head_b, first_b, expected, slot = on_own
        elif backend.check_bytes == CHECK_BYTES:
            msg, head_b, first_b, expected, slot = on_default
        else:  # another call's size: the executor's message takes any
            return handed_over()
        head_b[:] = first_b
        if slot is not None:
            slot[:] = flat
        backend.issued += 1
        record.seq = backend.issued
        eng.inflight = record
        try:
            check_call(in_place, msg, sum_op)  # with the data in it when it rides
            backend.committed += 1  # every rank is in this collective (the same one or not): it counts as done
            if head_b != expected:
                eng.mismatch(record)
            if slot is None:
                data_call(in_place, buf, mpi_op)
        finally:
            eng.inflight = None
        if slot is not None:
            flat[:] = slot
        if backend.steady != fit:
            backend.note_fit(fit)

    return run


def _check_parts(backend, desc: str, dtype: np.dtype, nbytes: int) -> tuple:
    """The check message of ``nbytes`` for ``desc`` in ``dtype`` on ``backend`` (its lanes refilled by each call),
    the view of its lanes, the lanes, and the bytes they sum to when the ranks agree: made once per description
    and size (a large tensor's call is prepared again each time; this part is not)."""
    cache = backend.check_parts
    key = (desc, dtype.char, nbytes)
    got = cache.get(key)
    if got is None:
        if len(cache) > 256:
            cache.clear()
        msg = np.zeros(nbytes // dtype.itemsize, dtype=dtype)
        first = np.array(lanes(desc), dtype=dtype)
        got = cache[key] = (msg, msg[:LANES], first, (first * backend.size).tobytes())
    return got
