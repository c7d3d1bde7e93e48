"""Same as torch.distributed.algorithms.ddp_comm_hooks: ``default_hooks`` (``allreduce_hook``,
``fp16_compress_hook``, ``bf16_compress_hook``) for ``DistributedDataParallel.register_comm_hook``."""

from pyframe import _submodules
from pyframe.distributed.algorithms.ddp_comm_hooks import default_hooks

__all__ = ["default_hooks"]


# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
