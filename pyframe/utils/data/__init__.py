"""Datasets, samplers and the DataLoader. Same as torch.utils.data."""

from pyframe.utils.data import _worker as _worker
from pyframe.utils.data import collate as _collate
from pyframe.utils.data import dataloader as _dataloader
from pyframe.utils.data import dataset as _dataset
from pyframe.utils.data import distributed as _distributed
from pyframe.utils.data import sampler as _sampler
from pyframe.utils.data._worker import *  # noqa: F403
from pyframe.utils.data.collate import *  # noqa: F403
from pyframe.utils.data.dataloader import *  # noqa: F403
from pyframe.utils.data.dataset import *  # noqa: F403
from pyframe.utils.data.distributed import *  # noqa: F403
from pyframe.utils.data.sampler import *  # noqa: F403

__all__ = [
    *_worker.__all__,
    *_collate.__all__,
    *_dataloader.__all__,
    *_dataset.__all__,
    *_distributed.__all__,
    *_sampler.__all__,
]
