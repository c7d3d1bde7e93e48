"""Same as torch.nn.parallel: ``DistributedDataParallel`` on ``pyframe.distributed``."""

from pyframe.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
