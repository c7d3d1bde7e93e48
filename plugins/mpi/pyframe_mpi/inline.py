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
same. Whenever asynchronous work is queued or the group has failed, the prepared call hands over to the executor
(``MPIBackend.allreduce``), which keeps issue order and raises what failed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyframe_mpi.engine import CHECK_BYTES, LANES, Op, fusable, lanes

__all__ = ["prepare_allreduce"]


def prepare_allreduce(backend, buf: np.ndarray, op: str, desc: str) -> Callable[[], None]:
    """A callable that all-reduces ``buf`` (C-contiguous, a dtype MPI reduces natively) in place with ``op`` on
    ``backend``'s communicator, checked against the other ranks with ``desc``, and returns when done, failing as
    the executor's operations do (``DistBackendError`` on every rank on a mismatch; the job ended by the watchdog
    when a rank it waits for left or the timeout passed)."""
    eng = backend.engine
    n = backend.size
    record = Op(backend, desc, "all_reduce", None)  # what a long wait names (the watchdog's)
    checked = n > 1 and eng.check and desc is not None
    fused = checked and op == "sum" and fusable(buf, n)
    parts = _check_parts(backend, desc, buf.dtype if fused else np.dtype(np.int64)) if checked else None
    if eng.direct is not None and buf.size < 1 << 31:
        return _direct_call(backend, buf, op, record, parts, fused)
    return _mpi4py_call(backend, buf, op, record, parts, fused)


def _handed_over(backend, buf: np.ndarray, op: str, desc: str) -> None:
    backend.allreduce(buf, op, desc).wait()


def _direct_call(backend, buf: np.ndarray, op: str, record: Op, parts: tuple | None, fused: bool):
    """The call through ``direct.c``: one C call per all-reduce, the check's copies and comparison included."""
    from pyframe_mpi.direct import CODES, OPS

    eng, MPI = backend.engine, backend._mpi
    ffi, lib = eng.direct
    rec = ffi.new("struct pf_allreduce *")
    keep = [buf]  # what the record points into lives as long as the callable (run.keep)
    rec.comm = MPI._handleof(backend.comm)
    rec.data, rec.count, rec.type, rec.op = ffi.from_buffer(buf), buf.size, CODES[buf.dtype.name], OPS[op]
    if parts is not None:
        msg, _, first, expected = parts
        keep += [msg, first, expected]
        rec.ctl = MPI._handleof(backend.ctl)
        rec.msg, rec.msg_count, rec.msg_type = ffi.from_buffer(msg), msg.size, CODES[msg.dtype.name]
        rec.lanes, rec.expected, rec.lanes_bytes = ffi.from_buffer(first), ffi.from_buffer(expected), first.nbytes
        rec.fused = fused
    call = lib.pf_allreduce_run if parts is not None else lib.pf_allreduce_plain
    desc = record.desc

    def failed(rc: int) -> None:
        if rec.stage:
            backend.committed += 1
        if rc == lib.PF_MISMATCH:
            eng.mismatch(record)
        if rc == lib.PF_BAD_RECORD:
            raise ValueError(f"all_reduce: the prepared call's record was refused by the C path: {desc}")
        raise MPI.Exception(rc)

    def run() -> None:
        if eng.pending or eng.failed is not None:
            return _handed_over(backend, buf, op, desc)
        backend.issued += 1
        record.seq = backend.issued
        eng.inflight = record  # while the call blocks, the watchdog ends the job if a rank it needs left
        try:
            rc = call(rec)
        finally:
            eng.inflight = None
        if rc:
            failed(rc)
        backend.committed += 1

    run.keep = keep  # type: ignore[attr-defined]
    return run


def _mpi4py_call(backend, buf: np.ndarray, op: str, record: Op, parts: tuple | None, fused: bool):
    """The same through mpi4py (when ``direct.c`` was not built or does not drive mpi4py's MPI)."""
    eng, MPI = backend.engine, backend._mpi
    mpi_op, in_place = backend._ops[op], MPI.IN_PLACE
    data_call = backend.comm.Allreduce
    desc = record.desc

    def handed_over() -> None:
        _handed_over(backend, buf, op, desc)

    if parts is None:

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

    msg, head, first, expected = parts
    check_call, sum_op = backend.ctl.Allreduce, MPI.SUM
    # the per-call copies and the comparison on memoryviews of bytes: a third of NumPy's cost at these sizes
    head_b, first_b = memoryview(head).cast("B"), memoryview(first).cast("B")
    if fused:
        flat = memoryview(buf.reshape(-1)).cast("B")
        slot = memoryview(msg[LANES : LANES + buf.size]).cast("B")

        def run() -> None:
            if eng.pending or eng.failed is not None:
                return handed_over()
            head_b[:] = first_b
            slot[:] = flat
            backend.issued += 1
            record.seq = backend.issued
            eng.inflight = record
            try:
                check_call(in_place, msg, sum_op)  # check and data in one message
            finally:
                eng.inflight = None
            backend.committed += 1  # every rank is in this collective (the same one or not): it counts as done
            if head_b != expected:
                eng.mismatch(record)
            flat[:] = slot

        return run

    def run() -> None:
        if eng.pending or eng.failed is not None:
            return handed_over()
        head_b[:] = first_b
        backend.issued += 1
        record.seq = backend.issued
        eng.inflight = record
        try:
            check_call(in_place, msg, sum_op)
            backend.committed += 1
            if head_b != expected:
                eng.mismatch(record)
            data_call(in_place, buf, mpi_op)
        finally:
            eng.inflight = None

    return run


def _check_parts(backend, desc: str, dtype: np.dtype) -> tuple:
    """The check message for ``desc`` in ``dtype`` on ``backend`` (its lanes refilled by each call), the view of its
    lanes, the lanes, and the bytes they sum to when the ranks agree: made once per description (a large tensor's
    call is prepared again each time; this part is not)."""
    cache = backend.check_parts
    key = (desc, dtype.char)
    got = cache.get(key)
    if got is None:
        if len(cache) > 256:
            cache.clear()
        msg = np.zeros(CHECK_BYTES // dtype.itemsize, dtype=dtype)
        first = np.array(lanes(desc), dtype=dtype)
        got = cache[key] = (msg, msg[:LANES], first, (first * backend.size).tobytes())
    return got
