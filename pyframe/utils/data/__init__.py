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


def _torch_utils_paths() -> None:
    """torch's private package ``torch.utils.data._utils`` (``from torch.utils.data._utils.collate import
    default_collate`` in older programs): an alias module whose ``collate`` and ``worker`` are these modules."""
    import sys
    import types

    alias = types.ModuleType(f"{__name__}._utils", "torch.utils.data._utils: pyframe's collate and worker modules.")
    alias.collate, alias.worker = _collate, _worker
    sys.modules[alias.__name__] = alias
    sys.modules[f"{alias.__name__}.collate"], sys.modules[f"{alias.__name__}.worker"] = _collate, _worker
    globals()["_utils"] = alias


_torch_utils_paths()
