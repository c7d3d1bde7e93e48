"""torch.distributed's collectives on tensors, with ``Work`` and ``Future``.

Each call checks its arguments locally, describes itself (collective, op, dtype, shape, root) for the
backend's agreement check, and hands NumPy views of the tensors' memory to the backend. A tensor the
transport cannot take as it is (not contiguous; float16 and bfloat16 in a reduction, summed in float32; bool,
reduced as bytes) goes through a staging copy that is written back when the operation completes."""

from __future__ import annotations

import enum
from collections.abc import Callable
from datetime import timedelta

import numpy as np

from pyframe._dtype import int16
from pyframe._grad_mode import no_grad
from pyframe.distributed import process_group as _pg
from pyframe.distributed.process_group import ProcessGroup, _agree_on, _require  # noqa: F401 - _agree_on for DDP
from pyframe.tensor import Tensor

__all__ = [
    "ReduceOp", "Work", "Future", "all_reduce", "broadcast", "all_gather", "all_gather_into_tensor", "reduce_scatter",
    "reduce_scatter_tensor", "reduce", "gather", "scatter", "all_to_all", "all_to_all_single", "barrier",
    "monitored_barrier",
]  # fmt: skip


class ReduceOp(enum.Enum):
    """Same as torch.distributed.ReduceOp: SUM, AVG, PRODUCT, MAX, MIN and the bitwise BAND, BOR, BXOR."""

    SUM = "sum"
    AVG = "avg"
    PRODUCT = "product"
    MAX = "max"
    MIN = "min"
    BAND = "band"
    BOR = "bor"
    BXOR = "bxor"


_NATIVE = ("float32", "float64", "int8", "uint8", "int16", "int32", "int64")  # reduced by the transport as they are
_HALF = ("float16", "bfloat16")  # reduced in float32 (rounded once at the end); moved as their 2-byte words
_BOOL_OPS = {"sum": "bor", "avg": None, "product": "band", "max": "bor", "min": "band",
             "band": "band", "bor": "bor", "bxor": "bxor"}  # fmt: skip


# ---- Work and Future ----------------------------------------------------------------------------------


def _secs(timeout) -> float | None:
    if timeout is None:
        return None
    return timeout.total_seconds() if isinstance(timeout, timedelta) else float(timeout)


class Work:
    """Same as torch.distributed.Work: what ``async_op=True`` returns. ``wait(timeout=None)`` finishes the
    operation (and what follows it: AVG's division, copies out of staging buffers), returns True, and raises
    ``DistTimeoutError`` if ``timeout`` passes first."""

    __slots__ = ("_works", "_after", "_done", "_value", "_what")

    def __init__(self, works: list, after: Callable[[], None] | None, value, what: str) -> None:
        self._works, self._after, self._done, self._value, self._what = works, after, False, value, what

    def is_completed(self) -> bool:
        """Same as torch.distributed.Work.is_completed: whether the operation has finished (does not block)."""
        return self._done or all(w.is_completed() for w in self._works)

    def is_success(self) -> bool:
        """Same as torch.distributed.Work.is_success: True once the operation has completed (a failure raises from
        ``wait``).
        """
        return self.is_completed()

    def wait(self, timeout=None) -> bool:
        """Same as torch.distributed.Work.wait: blocks until the operation completes and returns True.

        Args:
            timeout: seconds or a ``timedelta``; default the process group's. Past it, ``DistTimeoutError``.
        """
        if not self._done:
            seconds = _secs(timeout)
            for w in self._works:
                w.wait(seconds)
            self._done = True
            if self._after is not None:
                self._after()
        return True

    def result(self) -> list:
        """Same as torch.distributed.Work.result: waits, then the operation's output tensors (a list)."""
        self.wait()
        return self._value

    def get_future(self) -> Future:
        """Same as torch's ``Work.get_future``: a Future of the output tensors (a list)."""
        return Future(_work=self)


class Future:
    """Same as torch.futures.Future, enough for communication hooks: ``wait()``, ``value()``, ``done()``,
    ``then(callback)`` (``callback(fut)``'s return value is the new future's value), ``set_result``."""

    __slots__ = ("_work", "_parent", "_fn", "_value", "_has_value")

    def __init__(self, _work: Work | None = None, _parent: Future | None = None, _fn=None) -> None:
        self._work, self._parent, self._fn, self._value, self._has_value = _work, _parent, _fn, None, False

    def done(self) -> bool:
        """Same as torch.futures.Future.done: whether the value is available (does not block)."""
        if self._has_value:
            return True
        if self._work is not None:
            return self._work.is_completed()
        return self._parent is not None and self._parent.done()

    def set_result(self, value) -> None:
        """Same as torch.futures.Future.set_result: sets the value (what ``wait`` returns)."""
        self._value, self._has_value = value, True

    def wait(self):
        """Same as torch.futures.Future.wait: blocks until the value is available and returns it."""
        if not self._has_value:
            if self._work is not None:
                self.set_result(self._work.result())
            elif self._parent is not None:
                self._parent.wait()
                self.set_result(self._fn(self._parent))
            else:
                raise RuntimeError("Future.wait(): the future has no result and nothing will set one")
        return self._value

    def value(self):
        """Same as torch.futures.Future.value: the value (waiting for it if needed)."""
        return self.wait()

    def then(self, callback: Callable) -> Future:
        """Same as torch.futures.Future.then: a new Future whose value is ``callback(self)``, computed when waited on
        (torch runs the callback as soon as this future completes).
        """
        return Future(_parent=self, _fn=callback)


# ---- staging tensors for the transport ----------------------------------------------------------------


def _describe(t: Tensor) -> str:
    return f"{t.dtype.name}{list(t._shape)}"


def _check_tensor(t, what: str, argname: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: {argname} must be a pyframe.Tensor, got {type(t).__name__}")
    return t


class _Staged:
    """A tensor as the transport sees it: ``arr`` is its memory when possible, else a copy; ``finish()``
    writes a copy back (``out=True``)."""

    __slots__ = ("tensor", "staged", "arr", "out")

    def __init__(self, t: Tensor, reduce: bool = False, out: bool = True) -> None:
        self.tensor, self.out = t, out
        name = t.dtype.name
        if reduce and name in _HALF:
            self.staged = t.detach().float()  # half sums in float32, rounded once at the end
        elif not t.is_contiguous():
            self.staged = t.detach().contiguous()
        else:
            self.staged = None
        src = self.staged if self.staged is not None else t.detach()
        if src.dtype.name == "bfloat16":  # NumPy has no bfloat16: the transport moves its bits as int16 words
            src = src.view(int16)
        arr = src.numpy()
        if not reduce or name == "bool":
            arr = arr.reshape(-1).view(np.uint8)  # data movement is bytes: any dtype, bool reduced bytewise
        self.arr = arr

    def finish(self) -> None:
        t = self.tensor
        if not self.out:
            return
        if self.staged is not None:
            with no_grad():
                t.detach().copy_(self.staged)
        else:
            t._bump()  # the backend wrote the storage behind autograd's back


def _wire_op(op, t: Tensor, what: str) -> str:
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{what}: op must be a pyframe.distributed.ReduceOp, got {op!r}")
    name = t.dtype.name
    if name == "bool":
        wire = _BOOL_OPS[op.value]
        if wire is None:
            raise TypeError(f"{what}: ReduceOp.AVG needs a floating dtype, got bool")
        return wire
    if name not in (*_NATIVE, *_HALF):
        raise TypeError(f"{what}: dtype {name} is not supported; allowed: {[*_NATIVE, *_HALF, 'bool']}")
    if op is ReduceOp.AVG and not t.dtype.is_floating_point:
        raise TypeError(f"{what}: ReduceOp.AVG needs a floating dtype, got {name}")
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and t.dtype.is_floating_point:
        raise TypeError(f"{what}: Cannot use ReduceOp.{op.name} with non-integral dtype {name}")
    return "sum" if op is ReduceOp.AVG else op.value


def _root(g: ProcessGroup, what: str, argname: str, rank, group_rank) -> int:
    """The group rank of a root given as a global rank (``src``/``dst``) or a group rank (``group_src``)."""
    n = len(g.ranks)
    if group_rank is not None:
        if isinstance(group_rank, bool) or not isinstance(group_rank, int) or not 0 <= group_rank < n:
            raise ValueError(f"{what}: group_{argname} must be a rank in [0, {n}), got {group_rank!r}")
        return group_rank
    if isinstance(rank, bool) or not isinstance(rank, int) or rank not in g.ranks:
        raise ValueError(f"{what}: {argname} must be a rank of the group {g.ranks}, got {rank!r}")
    return g.ranks.index(rank)


def _finish(work, what: str, stages: list[_Staged], value, async_op: bool, extra: Callable | None = None):
    def after():
        for s in stages:
            s.finish()
        if extra is not None:
            extra()

    handle = Work([work], after, value, what)
    if async_op:
        return handle
    handle.wait()
    return None


def _same(what: str, t: Tensor, items, n: int, argname: str) -> list:
    if not isinstance(items, (list, tuple)) or len(items) != n:
        got = len(items) if isinstance(items, (list, tuple)) else type(items).__name__
        raise ValueError(f"{what}: {argname} must be a list of {n} tensors (one per rank), got {got}")
    for i, x in enumerate(items):
        if not isinstance(x, Tensor) or x._shape != t._shape or x.dtype is not t.dtype:
            got = _describe(x) if isinstance(x, Tensor) else type(x).__name__
            raise ValueError(f"{what}: {argname}[{i}] is {got}; every entry must be {_describe(t)} like tensor")
    return list(items)


def _stack(items: list, t: Tensor) -> Tensor:
    from pyframe.ops.join import stack

    with no_grad():
        return stack([x.detach() for x in items])


def _unstack(out: Tensor, items: list) -> Callable[[], None]:
    def copy_rows():
        with no_grad():
            for i, x in enumerate(items):
                x.detach().copy_(out[i])

    return copy_rows


# ---- the collectives -----------------------------------------------------------------------------------


# The last synchronous all_reduce on the default group of a tensor the transport takes as it is (a native dtype,
# contiguous), prepared by the backend: a loop reducing the same tensor (a loss, a metric, a small buffer) pays only
# the backend's call. Kept while the tensor keeps its memory and layout; only this small (it keeps the tensor alive).
_last: list = [None] * 9  # tensor, storage, address, shape, strides, op, group, prepared call, AVG's divisor
_LAST_BYTES = 1 << 20


def _prepared(backend, arr, wire: str, desc: str) -> Callable[[], None]:
    prepare = getattr(backend, "prepare_allreduce", None)
    if prepare is not None:
        return prepare(arr, wire, desc)
    return lambda: backend.allreduce(arr, wire, desc).wait()


def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False):
    """Same as torch.distributed.all_reduce: reduce ``tensor`` over all ranks, in place. float16 is summed
    in float32; non-contiguous tensors go through a contiguous copy."""
    c = _last
    if (c[0] is tensor and c[5] is op and not async_op and c[6] is _pg._world and (group is None or group is c[6])
            and c[1] is tensor._storage and c[2] == tensor._ptr and c[3] is tensor._shape
            and c[4] is tensor._strides):  # fmt: skip
        c[7]()
        tensor._storage.version += 1  # written behind autograd's back
        if c[8]:
            with no_grad():
                tensor.detach().div_(c[8])
        return None
    g = _require(group)
    what = "all_reduce"
    _check_tensor(tensor, what, "tensor")
    wire = _wire_op(op, tensor, what)
    n = g.backend.world_size
    desc = f"all_reduce {op.name} {_describe(tensor)}"
    divisor = n if op is ReduceOp.AVG and n > 1 else 0
    if not async_op and tensor.dtype.name in _NATIVE and tensor.is_contiguous():
        run = _prepared(g.backend, (tensor.detach() if tensor.requires_grad else tensor).numpy(), wire, desc)
        if g is _pg._world and tensor._numel * tensor.dtype.itemsize <= _LAST_BYTES:
            c[:] = tensor, tensor._storage, tensor._ptr, tensor._shape, tensor._strides, op, g, run, divisor
        run()
        tensor._bump()
        if divisor:
            with no_grad():
                tensor.detach().div_(divisor)
        return None
    s = _Staged(tensor, reduce=True)

    def avg():
        if divisor:
            with no_grad():
                tensor.detach().div_(divisor)

    work = g.backend.allreduce(s.arr, wire, desc, async_op)
    return _finish(work, what, [s], [tensor], async_op, avg)


def broadcast(tensor: Tensor, src: int = 0, group=None, async_op: bool = False, group_src: int | None = None):
    """Same as torch.distributed.broadcast: every rank's ``tensor`` becomes rank ``src``'s (a global rank)."""
    g = _require(group)
    what = "broadcast"
    _check_tensor(tensor, what, "tensor")
    root = _root(g, what, "src", src, group_src)
    s = _Staged(tensor)
    work = g.backend.broadcast(s.arr, root, f"broadcast from {g.ranks[root]} {_describe(tensor)}", async_op)
    return _finish(work, what, [s], [tensor], async_op)


def all_gather(tensor_list: list, tensor: Tensor, group=None, async_op: bool = False):
    """Same as torch.distributed.all_gather: ``tensor_list[r]`` receives rank r's ``tensor``."""
    from pyframe.ops.creation import empty

    g = _require(group)
    what = "all_gather"
    _check_tensor(tensor, what, "tensor")
    n = g.backend.world_size
    items = _same(what, tensor, tensor_list, n, "tensor_list")
    send = _Staged(tensor, out=False)
    out = empty((n, *tensor._shape), dtype=tensor.dtype)
    work = g.backend.allgather(send.arr, out.numpy().reshape(n, -1).view(np.uint8), f"all_gather {_describe(tensor)}",
                               async_op)  # fmt: skip
    return _finish(work, what, [], items, async_op, _unstack(out, items))


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group=None, async_op: bool = False):
    """Same as torch.distributed.all_gather_into_tensor: ``output_tensor`` (``world_size`` times the input's
    first dimension, or a leading dimension of ``world_size``) receives every rank's input, in rank order."""
    g = _require(group)
    what = "all_gather_into_tensor"
    _check_tensor(input_tensor, what, "input_tensor")
    _check_tensor(output_tensor, what, "output_tensor")
    n = g.backend.world_size
    if output_tensor.dtype is not input_tensor.dtype or output_tensor._numel != n * input_tensor._numel:
        raise ValueError(f"{what}: output_tensor must hold {n} x input ({input_tensor.dtype.name}, "
                         f"{n * input_tensor._numel} elements), got {_describe(output_tensor)}")  # fmt: skip
    send, recv = _Staged(input_tensor, out=False), _Staged(output_tensor)
    work = g.backend.allgather(send.arr, recv.arr.reshape(n, -1), f"{what} {_describe(input_tensor)}", async_op)
    return _finish(work, what, [recv], [output_tensor], async_op)


def reduce_scatter(output: Tensor, input_list: list, op: ReduceOp = ReduceOp.SUM, group=None, async_op=False):
    """Same as torch.distributed.reduce_scatter: rank r's ``output`` is the reduction of every rank's
    ``input_list[r]``."""
    g = _require(group)
    what = "reduce_scatter"
    _check_tensor(output, what, "output")
    n = g.backend.world_size
    items = _same(what, output, input_list, n, "input_list")
    return _reduce_scatter(g, what, output, _stack(items, output), op, async_op)


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM, group=None, async_op=False):  # noqa: A002
    """Same as torch.distributed.reduce_scatter_tensor: ``input`` holds ``world_size`` chunks along its first
    dimension; rank r's ``output`` is the reduction of every rank's chunk r."""
    g = _require(group)
    what = "reduce_scatter_tensor"
    _check_tensor(output, what, "output")
    _check_tensor(input, what, "input")
    n = g.backend.world_size
    if input.dtype is not output.dtype or input._numel != n * output._numel:
        raise ValueError(f"{what}: input must hold {n} x output ({output.dtype.name}, {n * output._numel} "
                         f"elements), got {_describe(input)}")  # fmt: skip
    return _reduce_scatter(g, what, output, input.detach().reshape(n, *output._shape), op, async_op)


def _reduce_scatter(g, what, output, stacked, op, async_op):
    wire = _wire_op(op, output, what)
    n = g.backend.world_size
    send = _Staged(stacked, reduce=True, out=False)
    recv = _Staged(output, reduce=True)

    def avg():
        if op is ReduceOp.AVG and n > 1:
            with no_grad():
                output.detach().div_(n)

    desc = f"{what} {op.name} {_describe(output)}"
    work = g.backend.reduce_scatter(send.arr.reshape(n, -1), recv.arr.reshape(-1), wire, desc, async_op)
    return _finish(work, what, [recv], [output], async_op, avg)


def reduce(tensor: Tensor, dst: int = 0, op: ReduceOp = ReduceOp.SUM, group=None, async_op: bool = False,
           group_dst: int | None = None):  # fmt: skip
    """Same as torch.distributed.reduce: rank ``dst``'s ``tensor`` becomes the reduction; the others' are
    left as they were."""
    g = _require(group)
    what = "reduce"
    _check_tensor(tensor, what, "tensor")
    wire = _wire_op(op, tensor, what)
    root = _root(g, what, "dst", dst, group_dst)
    mine = g.backend.rank == root
    s = _Staged(tensor, reduce=True, out=mine)
    n = g.backend.world_size

    def avg():
        if mine and op is ReduceOp.AVG and n > 1:
            with no_grad():
                tensor.detach().div_(n)

    if not mine and s.staged is None:  # MPI may use a non-root's buffer as scratch: keep the caller's intact
        s.staged = tensor.detach().clone()
        s.arr = s.staged.numpy() if tensor.dtype.name != "bool" else s.staged.numpy().view(np.uint8)
    desc = f"reduce {op.name} to {g.ranks[root]} {_describe(tensor)}"
    work = g.backend.reduce(s.arr, root, wire, desc, async_op)
    return _finish(work, what, [s], [tensor], async_op, avg)


def gather(tensor: Tensor, gather_list: list | None = None, dst: int = 0, group=None, async_op: bool = False,
           group_dst: int | None = None):  # fmt: skip
    """Same as torch.distributed.gather: on rank ``dst``, ``gather_list[r]`` receives rank r's ``tensor``;
    the other ranks pass no ``gather_list``."""
    from pyframe.ops.creation import empty

    g = _require(group)
    what = "gather"
    _check_tensor(tensor, what, "tensor")
    root = _root(g, what, "dst", dst, group_dst)
    n = g.backend.world_size
    send = _Staged(tensor, out=False)
    if g.backend.rank == root:
        items = _same(what, tensor, gather_list, n, "gather_list")
        out = empty((n, *tensor._shape), dtype=tensor.dtype)
        recv, after = out.numpy().reshape(n, -1).view(np.uint8), _unstack(out, items)
    else:
        if gather_list not in (None, []):
            raise ValueError(f"{what}: gather_list must be None on rank {g.ranks[g.backend.rank]}, which is not dst")
        items, recv, after = None, None, None
    work = g.backend.gather(send.arr, recv, root, f"gather to {g.ranks[root]} {_describe(tensor)}", async_op)
    return _finish(work, what, [], items, async_op, after)


def scatter(tensor: Tensor, scatter_list: list | None = None, src: int = 0, group=None, async_op: bool = False,
            group_src: int | None = None):  # fmt: skip
    """Same as torch.distributed.scatter: rank r's ``tensor`` receives rank ``src``'s ``scatter_list[r]``."""
    g = _require(group)
    what = "scatter"
    _check_tensor(tensor, what, "tensor")
    root = _root(g, what, "src", src, group_src)
    n = g.backend.world_size
    recv = _Staged(tensor)
    if g.backend.rank == root:
        send = _Staged(_stack(_same(what, tensor, scatter_list, n, "scatter_list"), tensor), out=False)
        send_arr = send.arr.reshape(n, -1)
    else:
        if scatter_list not in (None, []):
            raise ValueError(f"{what}: scatter_list must be None on rank {g.ranks[g.backend.rank]}, which is not src")
        send_arr = None
    work = g.backend.scatter(send_arr, recv.arr, root, f"scatter from {g.ranks[root]} {_describe(tensor)}", async_op)
    return _finish(work, what, [recv], [tensor], async_op)


def all_to_all(output_tensor_list: list, input_tensor_list: list, group=None, async_op: bool = False):
    """Same as torch.distributed.all_to_all: rank r's ``output_tensor_list[s]`` receives rank s's
    ``input_tensor_list[r]`` (all of one shape and dtype here)."""
    from pyframe.ops.creation import empty

    g = _require(group)
    what = "all_to_all"
    n = g.backend.world_size
    if not isinstance(input_tensor_list, (list, tuple)) or not input_tensor_list:
        raise ValueError(f"{what}: input_tensor_list must be a list of {n} tensors")
    first = _check_tensor(input_tensor_list[0], what, "input_tensor_list[0]")
    ins = _same(what, first, input_tensor_list, n, "input_tensor_list")
    outs = _same(what, first, output_tensor_list, n, "output_tensor_list")
    send = _Staged(_stack(ins, first), out=False)
    out = empty((n, *first._shape), dtype=first.dtype)
    work = g.backend.alltoall(send.arr.reshape(n, -1), out.numpy().reshape(n, -1).view(np.uint8),
                              f"all_to_all {_describe(first)}", async_op)  # fmt: skip
    return _finish(work, what, [], outs, async_op, _unstack(out, outs))


def _splits(sizes, rows: int, n: int, what: str, argname: str) -> list[int]:
    if sizes is None:
        if rows % n:
            raise ValueError(f"{what}: without {argname} the first dimension ({rows}) must be divisible by the "
                             f"world size {n}")  # fmt: skip
        return [rows // n] * n
    sizes = list(sizes)
    if len(sizes) != n or any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in sizes):
        raise ValueError(f"{what}: {argname} must be {n} non-negative ints (one per rank), got {sizes}")
    if sum(sizes) != rows:
        raise ValueError(f"{what}: {argname} {sizes} must add up to the first dimension, {rows}")
    return sizes


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes=None, input_split_sizes=None,  # noqa: A002
                      group=None, async_op: bool = False):  # fmt: skip
    """Same as torch.distributed.all_to_all_single: ``input`` is cut along its first dimension into
    ``input_split_sizes`` rows (default: ``world_size`` equal chunks); chunk r goes to rank r, and ``output``
    holds, in rank order, the ``output_split_sizes[r]`` rows rank r sent here. The split sizes are first compared
    across ranks, as part of the operation: what a rank sends must be what its peer expects, else ``ValueError`` on
    every rank (from ``wait()`` with ``async_op=True``, which returns at once: the sizes and then the data move on
    the communication thread)."""
    from math import prod

    g = _require(group)
    what = "all_to_all_single"
    n = g.backend.world_size
    _check_tensor(input, what, "input")
    _check_tensor(output, what, "output")
    if (input.dtype is not output.dtype or not input._shape or not output._shape
            or input._shape[1:] != output._shape[1:]):  # fmt: skip
        raise ValueError(f"{what}: input and output must have one dtype and the same shape after the first "
                         f"dimension, got {_describe(input)} and {_describe(output)}")  # fmt: skip
    ins = _splits(input_split_sizes, input._shape[0], n, what, "input_split_sizes")
    outs = _splits(output_split_sizes, output._shape[0], n, what, "output_split_sizes")
    rows = f"{input.dtype.name} rows{list(input._shape[1:])}"
    send, recv = _Staged(input, out=False), _Staged(output)
    row_bytes = prod(input._shape[1:]) * input.dtype.itemsize
    work = g.backend.alltoallv(send.arr.reshape(-1), ins, recv.arr.reshape(-1), outs, f"{what} {rows}", async_op,
                               row_bytes)  # fmt: skip
    return _finish(work, what, [recv], [output], async_op)


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Same as torch.distributed.barrier: returns once every rank has called it (bounded by the timeout)."""
    g = _require(group)
    work = g.backend.barrier("barrier", async_op)
    return _finish(work, "barrier", [], None, async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks: bool = False):
    """Same as torch.distributed.monitored_barrier: a barrier that raises after ``timeout`` (default: the
    group's), naming the rank that did not arrive when the backend can tell."""
    g = _require(group)
    g.backend.barrier("monitored_barrier", True).wait(_secs(timeout))
