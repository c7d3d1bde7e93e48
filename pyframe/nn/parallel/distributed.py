"""DistributedDataParallel: gradients averaged across ranks in buckets, overlapping backward.

As PyTorch's reducer: parameters go into buckets in reverse registration order (which approximates
the order backward produces their gradients), the first bucket small (1 MiB) so communication starts
early, the rest up to ``bucket_cap_mb``. A post-accumulate-grad hook on each parameter copies its
gradient into its bucket's flat buffer; when a bucket is full it is all-reduced without waiting, and
backward goes on computing the next gradients. When the last bucket has started, the hook waits for
all of them, divides by the world size (in the C core) and copies the averages back into ``.grad``,
so the optimizer step that follows sees averaged gradients.
"""

from __future__ import annotations

import contextlib
import time
import weakref
import zlib
from collections.abc import Iterator
from typing import Any

from pyframe import distributed as dist
from pyframe._grad_mode import is_grad_enabled, no_grad
from pyframe.nn.modules.module import Module
from pyframe.ops.creation import zeros
from pyframe.tensor import Tensor

__all__ = ["DistributedDataParallel"]

_MiB = 1 << 20
_FIRST_BUCKET_BYTES = _MiB  # torch's kDefaultFirstBucketBytes


class _Bucket:
    """One flat buffer holding several parameters' gradients, all-reduced as one message."""

    __slots__ = ("params", "flat", "wire", "views", "ready", "work")

    def __init__(self, params: list) -> None:
        self.params = params
        self.flat = zeros(sum(p._numel for p in params), dtype=params[0].dtype)
        self.wire = self.flat.numpy()  # the backend's view of the same memory
        self.views, offset = [], 0
        for p in params:
            self.views.append(self.flat[offset : offset + p._numel].view(p._shape))
            offset += p._numel
        self.ready: set[int] = set()  # slots whose gradient is in the buffer this iteration
        self.work = None

    @property
    def nbytes(self) -> int:
        return self.flat._numel * self.flat.dtype.itemsize


def _buckets_for(params: list, cap_bytes: int) -> list[_Bucket]:
    order = list(reversed(params))  # backward meets the last layers first
    buckets, current, size, limit = [], [], 0, min(_FIRST_BUCKET_BYTES, cap_bytes)
    for p in order:
        nbytes = p._numel * p.dtype.itemsize
        if current and (size + nbytes > limit or p.dtype is not current[0].dtype):
            buckets.append(_Bucket(current))
            current, size, limit = [], 0, cap_bytes
        current.append(p)
        size += nbytes
    buckets.append(_Bucket(current))
    return buckets


class DistributedDataParallel(Module):
    """Same as torch.nn.parallel.DistributedDataParallel, on the default process group.

    At construction rank 0's parameters and buffers are broadcast to every rank; during backward
    the gradients are averaged in buckets of up to ``bucket_cap_mb`` MiB (see the module docstring);
    with ``broadcast_buffers`` rank 0's buffers are broadcast before every forward. Differs: CPU only
    (``device_ids``/``output_device`` must be None); every parameter that requires grad must receive
    a gradient in every synchronised backward (``find_unused_parameters=True`` is not supported).
    ``last_sync_wait`` holds the seconds the last backward spent waiting for communication (the part
    that did not overlap backward)."""

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
        gradient_as_bucket_view: bool = False,
    ) -> None:
        super().__init__()
        g = dist._require(process_group)
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel wraps a pyframe.nn.Module, got {type(module).__name__}")
        if device_ids not in (None, []) or output_device is not None:
            raise ValueError("DistributedDataParallel runs on the CPU: device_ids and output_device must be None")
        if find_unused_parameters:
            raise NotImplementedError(
                "find_unused_parameters=True is not supported: every parameter that requires grad must get a gradient"
            )
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
        self.bucket_cap_mb = cap
        self.require_backward_grad_sync = True
        self.last_sync_wait = 0.0
        self._group = g
        self._world = g.backend.world_size
        self._sync_this_backward = False
        self._launched = 0

        layout = ";".join(f"{n}:{p.dtype.name}{list(p._shape)}" for n, p in module.named_parameters())
        dist._agree(g, "DistributedDataParallel (parameters)",
                    f"DDP over {len(params)} parameters, layout {zlib.crc32(layout.encode()):08x}")  # fmt: skip
        self._broadcast([*module.parameters(), *module.buffers()], "DistributedDataParallel (initial broadcast)")

        self._buckets = _buckets_for(params, int(cap * _MiB))
        self._hooks = []
        for b in self._buckets:
            for slot, p in enumerate(b.params):
                self._hooks.append(p.register_post_accumulate_grad_hook(self._hook(b, slot)))

    # ---- forward ---------------------------------------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if any(b.ready for b in self._buckets):
            missing = [n for n, p in self.module.named_parameters() if p.requires_grad and not self._got_grad(p)]
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a new one: these "
                f"parameters got no gradient in the last backward: {missing[:10]}. Every parameter that requires "
                "grad must take part in the loss (or set requires_grad=False on the unused ones)"
            )
        if self.broadcast_buffers and self._world > 1:
            buffers = list(self.module.buffers())
            if buffers:
                self._broadcast(buffers, "DistributedDataParallel (buffer broadcast)")
        self._sync_this_backward = self.require_backward_grad_sync and is_grad_enabled()
        return self.module(*args, **kwargs)

    def _got_grad(self, p: Tensor) -> bool:
        for b in self._buckets:
            for slot, q in enumerate(b.params):
                if q is p:
                    return slot in b.ready
        return True

    def _broadcast(self, tensors: list, what: str) -> None:
        if self._world == 1:
            return
        backend = self._group.backend
        works = [backend.broadcast(t.detach().numpy(), 0) for t in tensors if t._numel]
        for w in works:
            dist._wait(self._group, w, what)
        for t in tensors:
            t._bump()

    # ---- backward: the bucket machinery -------------------------------------------------------------

    def _hook(self, b: _Bucket, slot: int):
        ref = weakref.ref(self)  # the parameters must not keep a dropped wrapper alive

        def on_grad(p: Tensor) -> None:
            self = ref()
            if self is None or not self._sync_this_backward:
                return  # no_sync(): gradients accumulate locally
            if slot in b.ready:
                raise RuntimeError(
                    "Expected to mark a variable ready only once: backward ran twice through this parameter "
                    "before the gradients were synchronised (call backward once per forward)"
                )
            with no_grad():
                b.views[slot].copy_(p.grad)
            b.ready.add(slot)
            if len(b.ready) == len(b.params):
                b.work = self._group.backend.allreduce(b.wire, "sum")
                self._launched += 1
                if self._launched == len(self._buckets):
                    self._finalize()
                    return
            for other in self._buckets:  # let the transport progress the messages in flight
                if other.work is not None:
                    other.work.is_completed()

        return on_grad

    def _finalize(self) -> None:
        t0 = time.perf_counter()
        try:
            for b in self._buckets:
                dist._wait(self._group, b.work, "DistributedDataParallel (gradient all-reduce)")
        finally:
            self.last_sync_wait = time.perf_counter() - t0
        with no_grad():
            for b in self._buckets:
                b.flat._bump()
                if self._world > 1:
                    b.flat.div_(self._world)
                for p, view in zip(b.params, b.views, strict=True):
                    p.grad.copy_(view)
                b.ready.clear()
                b.work = None
        self._launched = 0
        self._sync_this_backward = False

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

    @property
    def bucket_sizes(self) -> list[int]:
        """**pyframe**: the bytes of each gradient bucket, in the order they are all-reduced."""
        return [b.nbytes for b in self._buckets]
