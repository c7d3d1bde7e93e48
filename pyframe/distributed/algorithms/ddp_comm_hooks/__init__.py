"""Same as torch.distributed.algorithms.ddp_comm_hooks: ``default_hooks`` (``allreduce_hook``,
``fp16_compress_hook``, ``bf16_compress_hook``) for ``DistributedDataParallel.register_comm_hook``."""

from pyframe.distributed.algorithms.ddp_comm_hooks import default_hooks

__all__ = ["default_hooks"]
