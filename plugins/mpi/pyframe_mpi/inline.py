"""The lean synchronous all-reduce: one prepared call per (buffer, op, description), run on the calling thread.

A loop that all-reduces the same tensor (a metric, a loss, a small buffer) pays, per call, only what the MPI call
needs: no operation record, no executor lock, no ``Work``. Everything that does not change between calls is made
once, when the call is prepared: the check message (its lanes, and for a small SUM the slot its data rides in),
the bytes the summed lanes must equal, the bound MPI methods, the reusable record a long wait and an error
message name. The agreement check stays on: it is the same message, byte for byte, as the executor's
(``engine.check_message``), so a rank on this path and a rank on the executor's pair and compare as usual.

The summed lanes equal ``world_size`` times this rank's own lanes exactly when every rank sent the same lanes
(if they are equal, each pair sums to ``n*h`` and ``n*h*h``; conversely ``n * (n*h*h) == (n*h)**2`` is the equality
case of Cauchy-Schwarz that ``engine.agreed`` tests): so one comparison of bytes decides, and every rank decides the
same. Whenever asynchronous work is queued, the group has failed, or the call is not of this kind, the prepared
call hands over to the executor (``MPIBackend.allreduce``), which keeps issue order.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from pyframe_mpi.engine import CHECK_BYTES, LANES, Op, fusable, lanes

__all__ = ["prepare_allreduce"]


def prepare_allreduce(backend, buf: np.ndarray, op: str, desc: str) -> Callable[[], None]:
    """A callable that all-reduces ``buf`` (C-contiguous, a dtype MPI reduces natively) in place with ``op`` on
    ``backend``'s communicator, checked against the other ranks with ``desc``, and returns when done (raising as
    the executor would: ``DistBackendError`` on a mismatch, a rank that left, or a failed group)."""
    eng, MPI = backend.engine, backend._mpi
    mpi_op, in_place = backend._ops[op], MPI.IN_PLACE
    data_call = backend.comm.Allreduce
    n = backend.size

    def handed_over() -> None:
        backend.allreduce(buf, op, desc).wait()

    if n == 1 or not eng.check or desc is None:

        def run() -> None:
            if eng.pending or eng.failed is not None:
                return handed_over()
            backend.issued += 1
            backend.committed += 1
            data_call(in_place, buf, mpi_op)

        return run

    fused = op == "sum" and fusable(buf, n)
    msg, head, first, expected, record = _check_parts(backend, desc, buf.dtype if fused else np.dtype(np.int64))
    check_call, sum_op, wait = backend.ctl.Iallreduce, MPI.SUM, eng.wait_request

    def checked() -> bool:
        """Post the check (``head`` and the message's data slot filled by the caller), wait, say if agreed."""
        backend.issued += 1
        record.seq = backend.issued
        req = check_call(in_place, msg, sum_op)
        if not req.Test():
            wait(req, record)
        backend.committed += 1  # every rank is in this collective (the same one or not): it counts as done
        return head.tobytes() == expected

    if fused:
        flat = buf.reshape(-1)
        slot = msg[LANES : LANES + flat.size]

        def run() -> None:
            if eng.pending or eng.failed is not None:
                return handed_over()
            head[:] = first
            slot[:] = flat
            if not checked():
                eng.mismatch(record)
            flat[:] = slot

        return run

    def run() -> None:
        if eng.pending or eng.failed is not None:
            return handed_over()
        head[:] = first
        if not checked():
            eng.mismatch(record)
        data_call(in_place, buf, mpi_op)

    return run


def _check_parts(backend, desc: str, dtype: np.dtype) -> tuple:
    """The check message for ``desc`` in ``dtype`` on ``backend`` (its lanes refilled by each call), the view of its
    lanes, the lanes, the bytes they sum to when the ranks agree, and the record a wait or an error names: made once
    per description (a large tensor's call is prepared again each time; this part is not)."""
    cache = backend.check_parts
    key = (desc, dtype.char)
    got = cache.get(key)
    if got is None:
        if len(cache) > 256:
            cache.clear()
        msg = np.zeros(CHECK_BYTES // dtype.itemsize, dtype=dtype)
        first = np.array(lanes(desc), dtype=dtype)
        got = cache[key] = (msg, msg[:LANES], first, (first * backend.size).tobytes(),
                            Op(backend, desc, "all_reduce", None))  # fmt: skip
    return got
