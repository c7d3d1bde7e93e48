"""Same as torch.distributed.algorithms.ddp_comm_hooks.default_hooks.

A hook is ``hook(state, bucket) -> Future``: ``state`` is the process group (or None for the default one),
``bucket`` a :class:`~pyframe.nn.parallel.distributed.GradBucket` whose ``buffer()`` holds the summed-so-far
local gradients of its parameters; the future's value is the tensor DDP copies back into ``.grad`` (averaged)."""

from __future__ import annotations

from pyframe import distributed as dist
from pyframe._dtype import bfloat16, float16

__all__ = ["allreduce_hook", "fp16_compress_hook", "bf16_compress_hook"]


def _size(state) -> int:
    return dist.get_world_size(state)


def allreduce_hook(process_group, bucket) -> dist.Future:
    """Same as torch's: divide by the world size, then all-reduce (SUM) asynchronously."""
    buf = bucket.buffer()
    buf.div_(_size(process_group))
    return dist.all_reduce(buf, group=process_group, async_op=True).get_future().then(lambda fut: fut.value()[0])


def _compress_hook(process_group, bucket, dtype) -> dist.Future:
    buf = bucket.buffer()
    compressed = buf.to(dtype).div_(_size(process_group))

    def decompress(fut):
        buf.copy_(fut.value()[0])
        return buf

    return dist.all_reduce(compressed, group=process_group, async_op=True).get_future().then(decompress)


def fp16_compress_hook(process_group, bucket) -> dist.Future:
    """Same as torch's: the bucket is cast to float16 (half the bytes on the wire), divided by the world size,
    all-reduced, and cast back into the bucket."""
    return _compress_hook(process_group, bucket, float16)


def bf16_compress_hook(process_group, bucket) -> dist.Future:
    """Same as torch's: the bucket is cast to bfloat16 (float32's range in half the bytes), divided by the world
    size, all-reduced, and cast back into the bucket."""
    return _compress_hook(process_group, bucket, bfloat16)
