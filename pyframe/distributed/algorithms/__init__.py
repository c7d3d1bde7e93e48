"""Same as torch.distributed.algorithms: DDP communication hooks (``ddp_comm_hooks``)."""

from pyframe import _submodules

# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
