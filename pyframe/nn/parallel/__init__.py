"""Same as torch.nn.parallel: ``DistributedDataParallel`` on ``pyframe.distributed``, ``SyncBatchNorm``, and
``DataParallel`` as torch's behaves without accelerators."""

from pyframe.nn.parallel.data_parallel import DataParallel, data_parallel
from pyframe.nn.parallel.distributed import DistributedDataParallel, GradBucket
from pyframe.nn.parallel.join import Join
from pyframe.nn.parallel.sync_batchnorm import SyncBatchNorm

__all__ = ["DataParallel", "DistributedDataParallel", "GradBucket", "Join", "SyncBatchNorm", "data_parallel"]
