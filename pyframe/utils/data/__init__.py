"""Datasets, samplers and the DataLoader. Same as torch.utils.data."""

import sys

from pyframe.utils.data._worker import *  # noqa: F403
from pyframe.utils.data.collate import *  # noqa: F403
from pyframe.utils.data.dataloader import *  # noqa: F403
from pyframe.utils.data.dataset import *  # noqa: F403
from pyframe.utils.data.distributed import *  # noqa: F403
from pyframe.utils.data.sampler import *  # noqa: F403

_MODULES = ("_worker", "collate", "dataloader", "dataset", "distributed", "sampler")
__all__ = sorted(name for module in _MODULES for name in sys.modules[f"pyframe.utils.data.{module}"].__all__)
