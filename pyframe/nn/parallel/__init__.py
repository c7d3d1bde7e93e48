"""Same as torch.nn.parallel: ``DistributedDataParallel`` on ``pyframe.distributed``, and ``SyncBatchNorm``."""

from pyframe.nn.parallel.distributed import DistributedDataParallel, GradBucket
from pyframe.nn.parallel.join import Join
from pyframe.nn.parallel.sync_batchnorm import SyncBatchNorm

__all__ = ["DistributedDataParallel", "GradBucket", "Join", "SyncBatchNorm"]
