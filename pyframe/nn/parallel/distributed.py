"""DistributedDataParallel: gradients averaged across ranks in buckets, overlapping backward.

As PyTorch's reducer: parameters go into buckets in reverse registration order (which approximates
the order backward produces their gradients), the first bucket small (1 MiB) so communication starts
early, the rest up to ``bucket_cap_mb``. A post-accumulate-grad hook on each parameter copies its
gradient, scaled by 1/world size (one pass, in the C core, as torch's ``mul_out``), into its bucket's flat
buffer. Buckets are all-reduced strictly in index order: a full bucket waits for the ones before it, so which
bucket is summed with which never depends on the order in which a rank's backward met its layers (ranks may
take different branches). Each all-reduce goes to the backend's communication thread and backward goes on;
after the last bucket the hook waits for them in order, copying each one's averages back into ``.grad`` as soon
as it is done (while the later ones are still being reduced).
"""

from __future__ import annotations

import contextlib
import time
import weakref
import zlib
from collections.abc import Iterator
from typing import Any

from pyframe._grad_mode import is_grad_enabled, no_grad
from pyframe.distributed.process_group import _agree_on, _require
from pyframe.nn.modules.module import Module
from pyframe.ops.creation import zeros
from pyframe.ops.elementwise import mul
from pyframe.tensor import Tensor

__all__ = ["DistributedDataParallel", "GradBucket"]

_MiB = 1 << 20
_FIRST_BUCKET_BYTES = _MiB  # torch's kDefaultFirstBucketBytes


class _Bucket:
    """One flat buffer holding several parameters' gradients, all-reduced as one message."""

    __slots__ = ("index", "params", "flat", "wire", "views", "ready", "work", "future", "desc")

    def __init__(self, index: int, params: list) -> None:
        self.index, self.params = index, params
        self.flat = zeros(sum(p._numel for p in params), dtype=params[0].dtype)
        self.wire = self.flat.numpy()  # the backend's view of the same memory
        self.views, offset = [], 0
        for p in params:
            self.views.append(self.flat[offset : offset + p._numel].view(p._shape))
            offset += p._numel
        self.ready: set[int] = set()  # slots whose gradient is in the buffer this iteration
        self.work = self.future = None
        self.desc: str | None = None  # the first bucket's says what the whole backward will send (_buckets_for)

    @property
    def nbytes(self) -> int:
        return self.flat._numel * self.flat.dtype.itemsize


class GradBucket:
    """Same as torch.distributed.GradBucket: what a communication hook receives."""

    __slots__ = ("_bucket", "_last")

    def __init__(self, bucket: _Bucket, last: bool) -> None:
        self._bucket, self._last = bucket, last

    def index(self) -> int:
        """Same as torch.distributed.GradBucket.index: the bucket's position (buckets are launched in index order)."""
        return self._bucket.index

    def buffer(self) -> Tensor:
        """Same as torch.distributed.GradBucket.buffer: the flat tensor holding the bucket's gradients; a hook
        reduces it
        (the gradients are views of it).
        """
        return self._bucket.flat

    def gradients(self) -> list[Tensor]:
        """Same as torch.distributed.GradBucket.gradients: the gradients in the bucket, as views of ``buffer()``."""
        return list(self._bucket.views)

    def parameters(self) -> list[Tensor]:
        """Same as torch.distributed.GradBucket.parameters: the parameters whose gradients the bucket holds."""
        return list(self._bucket.params)

    def is_last(self) -> bool:
        """Same as torch.distributed.GradBucket.is_last: whether this is the last bucket of the backward pass."""
        return self._last


def _buckets_for(params: list, cap_bytes: int) -> list[_Bucket]:
    order = list(reversed(params))  # backward meets the last layers first
    groups, current, size, limit = [], [], 0, min(_FIRST_BUCKET_BYTES, cap_bytes)
    for p in order:
        nbytes = p._numel * p.dtype.itemsize
        if current and (size + nbytes > limit or p.dtype is not current[0].dtype):
            groups.append(current)
            current, size, limit = [], 0, cap_bytes
        current.append(p)
        size += nbytes
    groups.append(current)
    buckets = [_Bucket(i, g) for i, g in enumerate(groups)]
    # One agreement check per backward, on its first bucket: it names every bucket, and the others follow in index
    # order inside the same backward on every rank (the layout was agreed at construction), so checking each again
    # would only add a round trip per bucket.
    sizes = ",".join(f"{b.flat.dtype.name}[{b.flat._numel}]" for b in buckets)
    total = sum(b.flat._numel for b in buckets)
    buckets[0].desc = (f"DistributedDataParallel gradient buckets: {len(buckets)} holding {total} elements, "
                       f"layout {zlib.crc32(sizes.encode()):08x}")  # fmt: skip
    return buckets


def _tensors_in(obj, out: list) -> list:
    if isinstance(obj, Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _tensors_in(x, out)
    elif isinstance(obj, dict):
        for x in obj.values():
            _tensors_in(x, out)
    return out


def _reachable_leaves(outputs: list) -> set[int]:
    """ids of the AccumulateGrad nodes the autograd graph of ``outputs`` reaches."""
    seen, found = set(), set()
    stack = [t.grad_fn if t.grad_fn is not None else (t._grad_edge or (None,))[0] for t in outputs if t.requires_grad]
    while stack:
        n = stack.pop()
        if n is None or id(n) in seen:
            continue
        seen.add(id(n))
        if n.name == "AccumulateGrad":
            found.add(id(n))
        stack.extend(e[0] for e in n.next if e is not None)
    return found


class DistributedDataParallel(Module):
    """Same as torch.nn.parallel.DistributedDataParallel, on a process group (default: the world).

    At construction the ranks check they wrap the same parameters, then rank 0's parameters (and, with
    ``broadcast_buffers``, buffers) are broadcast; during backward the gradients are averaged in buckets
    of up to ``bucket_cap_mb`` MiB, launched in index order; with ``broadcast_buffers`` rank 0's buffers are
    broadcast before every forward that will be followed by a synchronised backward (not under no_grad:
    evaluating on one rank through the wrapper works). ``find_unused_parameters``, ``gradient_as_bucket_view``,
    ``register_comm_hook``, ``no_sync`` and ``join`` as torch. Differs: CPU only (``device_ids`` and
    ``output_device`` must be None, and ``dim``, the dimension inputs are scattered along across
    devices, must be 0). ``last_sync_wait`` holds the seconds the last backward spent waiting for
    communication (the part that did not overlap backward)."""

    def __init__(
        self,
        module: Module,
        device_ids=None,
        output_device=None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        process_group=None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__()
        g = _require(process_group)
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps a pyframe.nn.Module, got {type(module).__name__}")
        if device_ids not in (None, []) or output_device is not None:
            raise ValueError("DistributedDataParallel runs on the CPU: device_ids and output_device must be None")
        if dim != 0:
            raise ValueError(f"dim={dim!r}: dim is the dimension inputs are scattered along across device_ids; "
                             "on the CPU (no device_ids) nothing is scattered, so dim must be 0")  # fmt: skip
        if kwargs:
            raise TypeError(f"DistributedDataParallel got unexpected keyword arguments {sorted(kwargs)}")
        cap = 25 if bucket_cap_mb is None else bucket_cap_mb
        if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not cap > 0:
            raise ValueError(f"bucket_cap_mb must be a positive number of MiB, got {bucket_cap_mb!r}")
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError(
                "DistributedDataParallel is not needed when a module doesn't have any parameter that requires a "
                "gradient."
            )
        for name, p in module.named_parameters():
            if p.requires_grad and not p.is_contiguous():
                raise ValueError(f"DistributedDataParallel needs contiguous parameters; {name!r} is not")
        self.module = module
        self.dim = dim
        self.broadcast_buffers = bool(broadcast_buffers)
        self.find_unused_parameters = bool(find_unused_parameters)
        self.gradient_as_bucket_view = bool(gradient_as_bucket_view)
        self.static_graph = bool(static_graph)
        self.bucket_cap_mb = cap
        self.process_group = process_group
        self.require_backward_grad_sync = True
        self.last_sync_wait = 0.0
        self._group = g
        self._world = g.backend.world_size
        self._sync_this_backward = False
        self._next = 0  # the next bucket to launch: strictly in index order
        self._unused: list[tuple[_Bucket, int]] = []
        self._unused_pending = False
        self._comm_hook = None
        self._comm_state = None
        self._joining = False  # inside join(): each synchronised forward first tells the joined ranks
        self._divisor = self._world

        layout = ";".join(f"{n}:{p.dtype.name}{list(p._shape)}" for n, p in module.named_parameters())
        desc = f"DDP over {len(params)} parameters, layout {zlib.crc32(layout.encode()):08x}"
        _agree_on(g, "DistributedDataParallel (parameters)", desc)
        states = [*module.parameters(), *(module.buffers() if self.broadcast_buffers else ())]
        self._broadcast(states, "DistributedDataParallel (initial broadcast)")

        self._buckets = _buckets_for(params, int(cap * _MiB))
        self._slot = {id(p): (b, slot) for b in self._buckets for slot, p in enumerate(b.params)}
        self._hooks = []
        for b in self._buckets:
            for slot, p in enumerate(b.params):
                self._hooks.append(p.register_post_accumulate_grad_hook(self._hook(b, slot)))

    # ---- forward ---------------------------------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self._next or any(b.ready for b in self._buckets):
            missing = [n for n, p in self.module.named_parameters() if p.requires_grad and not self._got_grad(p)]
            self._reset()
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one: these "
                f"parameters got no gradient in the last backward: {missing[:10]}. Pass "
                "find_unused_parameters=True to DistributedDataParallel, or make every parameter that requires "
                "grad take part in the loss (or set requires_grad=False on the unused ones)"
            )
        sync = self.require_backward_grad_sync and is_grad_enabled()
        if sync and self._joining:
            self._notify_join(1)
        if sync and self.broadcast_buffers and self._world > 1:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast(buffers, "DistributedDataParallel (buffer broadcast)")
        self._sync_this_backward = sync
        out = self.module(*args, **kwargs)
        if sync and self.find_unused_parameters:
            reached = _reachable_leaves(_tensors_in(out, []))
            self._unused = [(b, slot) for b in self._buckets for slot, p in enumerate(b.params)
                            if p._grad_edge is None or id(p._grad_edge[0]) not in reached]  # fmt: skip
            self._unused_pending = True
        return out

    def _got_grad(self, p: Tensor) -> bool:
        b, slot = self._slot.get(id(p), (None, 0))
        return b is None or slot in b.ready

    def _broadcast(self, tensors: list, what: str) -> None:
        if self._world == 1:
            return
        backend = self._group.backend
        works = [backend.broadcast(t.detach().numpy(), 0, f"{what} {t.dtype.name}[{t._numel}]", True)
                 for t in tensors if t._numel]  # fmt: skip
        for w in works:
            w.wait()
        for t in tensors:
            t._bump()

    # ---- backward: the bucket machinery -------------------------------------------------------------

    def _hook(self, b: _Bucket, slot: int):
        ref = weakref.ref(self)  # the parameters must not keep a dropped wrapper alive

        def on_grad(p: Tensor) -> None:
            self = ref()
            if self is None or not self._sync_this_backward:
                return  # no_sync(): gradients accumulate locally
            if self._unused_pending:
                self._unused_pending = False
                with no_grad():
                    for ub, us in self._unused:
                        ub.views[us].zero_()
                        self._ready(ub, us)
            if slot in b.ready:
                raise RuntimeError(
                    "Expected to mark a variable ready only once: backward ran twice through this parameter "
                    "before the gradients were synchronised (call backward once per forward)"
                )
            view = b.views[slot]
            # averaged as torch's reducer does: scaled by 1/world while copied into the bucket (one pass over the
            # gradient, no division after the all-reduce); a comm hook gets the plain gradients and averages itself
            scale = 1.0 / self._divisor if self._comm_hook is None and self._divisor > 1 else None
            with no_grad():
                if p.grad is not view:
                    if scale is None:
                        view.copy_(p.grad)
                    else:
                        mul(p.grad, scale, out=view)
                elif scale is not None:
                    view.mul_(scale)
            self._ready(b, slot)

        return on_grad

    def _ready(self, b: _Bucket, slot: int) -> None:
        b.ready.add(slot)
        if len(b.ready) == len(b.params):
            n = len(self._buckets)
            while self._next < n and len(self._buckets[self._next].ready) == len(self._buckets[self._next].params):
                self._launch(self._buckets[self._next])
                self._next += 1
            if self._next == n:
                self._finalize()

    def _launch(self, b: _Bucket) -> None:
        if self._comm_hook is not None:
            b.future = self._comm_hook(self._comm_state, GradBucket(b, b.index == len(self._buckets) - 1))
        else:
            b.work = self._group.backend.allreduce(b.wire, "sum", b.desc, True)

    def _finalize(self) -> None:
        # Each bucket's averages go back into .grad as soon as its all-reduce is done, while the later buckets are
        # still being reduced on the communication thread: the copies fill time this thread would spend waiting.
        # (With find_unused_parameters, which gradients to write is known only once every rank's map is in.)
        now = time.perf_counter
        waited = 0.0
        early = not self.find_unused_parameters
        try:
            for b in self._buckets:
                t0 = now()
                if b.future is not None:
                    value = b.future.wait()
                    if value is not b.flat:
                        with no_grad():
                            b.flat.copy_(value.reshape(-1))
                else:
                    b.work.wait()
                waited += now() - t0
                if early:
                    self._copy_back(b, None)
            if not early:
                t0 = now()
                used = self._globally_used()
                waited += now() - t0
                for b in self._buckets:
                    self._copy_back(b, used)
        except BaseException:
            self._reset()
            raise
        finally:
            self.last_sync_wait = waited
        self._reset()

    def _copy_back(self, b: _Bucket, used: dict | None) -> None:
        """Bucket ``b``'s averaged gradients into ``.grad`` (views of the bucket with ``gradient_as_bucket_view``)."""
        with no_grad():
            b.flat._bump()
            for slot, (p, view) in enumerate(zip(b.params, b.views, strict=True)):
                if used is not None and not used[(b.index, slot)]:
                    continue  # no rank used it: its gradient stays as it was (None), as torch
                if self.gradient_as_bucket_view:
                    p.grad = view
                elif p.grad is None:
                    p.grad = view.clone()
                else:
                    p.grad.copy_(view)

    def _globally_used(self) -> dict:
        from pyframe.ops.creation import ones

        unused = {(b.index, s) for b, s in self._unused}
        keys = [(b.index, s) for b in self._buckets for s in range(len(b.params))]
        flags = ones(len(keys), dtype=dist_int())
        wire = flags.numpy()
        for i, k in enumerate(keys):
            if k in unused:
                wire[i] = 0
        self._group.backend.allreduce(wire, "max", f"DistributedDataParallel (used parameters)[{len(keys)}]").wait()
        return {k: bool(wire[i]) for i, k in enumerate(keys)}

    def _reset(self) -> None:
        for b in self._buckets:
            b.ready.clear()
            b.work = b.future = None
        self._next = 0
        self._sync_this_backward = False
        self._unused_pending = False
        self._unused = []

    def __del__(self) -> None:
        for h in self.__dict__.get("_hooks", ()):
            h.remove()

    # ---- torch's API around it ------------------------------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Same as torch's ``DistributedDataParallel.no_sync``: backwards of forwards run inside it
        accumulate gradients locally; the first synchronised backward after it averages the sums."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state: object, hook) -> None:
        """Same as torch's: ``hook(state, bucket) -> Future`` replaces the all-reduce of each bucket (see
        ``pyframe.distributed.algorithms.ddp_comm_hooks.default_hooks``); the future's value (the averaged
        bucket) is copied into the gradients. Register once, before the first backward."""
        if self._comm_hook is not None:
            raise RuntimeError("register_comm_hook or register_builtin_comm_hook can only be called once.")
        if not callable(hook):
            raise TypeError(f"register_comm_hook: hook must be callable, got {type(hook).__name__}")
        self._comm_state, self._comm_hook = state, hook

    def join(self, divide_by_initial_world_size: bool = True, enable: bool = True,
             throw_on_early_termination: bool = False):  # fmt: skip
        """Same as torch's ``DistributedDataParallel.join``: a context manager for training with uneven inputs
        (see ``pyframe.nn.parallel.join``)."""
        from pyframe.nn.parallel.join import Join

        return Join(
            [self], enable, throw_on_early_termination, divide_by_initial_world_size=divide_by_initial_world_size
        )

    def _notify_join(self, active: int) -> int:
        """The per-iteration all-reduce of how many ranks still train (1 from each active rank, 0 from each
        joined one); sets the divisor for this iteration's gradients."""
        from pyframe.ops.creation import tensor

        flag = tensor([active], dtype=dist_int())
        self._group.backend.allreduce(flag.numpy(), "sum", "DistributedDataParallel.join (ranks still training)").wait()
        count = int(flag.numpy()[0])
        if self._join_throw:
            if not active and count:
                raise RuntimeError(f"Rank {self._group.backend.rank} exhausted all inputs.")
            if active and count < self._world:
                raise RuntimeError("Detected at least one rank that exhausted inputs. Throwing across all ranks.")
        self._divisor = self._world if self._divide_initial or count == 0 else count
        return count

    _divide_initial = True
    _join_throw = False  # Join(throw_on_early_termination=True): the count above raises once a rank has joined

    @property
    def bucket_sizes(self) -> list[int]:
        """**pyframe**: the bytes of each gradient bucket, in the order they are all-reduced."""
        return [b.nbytes for b in self._buckets]


def dist_int():
    from pyframe import _dtype

    return _dtype.int32
