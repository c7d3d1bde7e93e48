"""Datasets, samplers and the DataLoader. Same as torch.utils.data."""

from pyframe.utils.data._worker import WorkerInfo, get_worker_info
from pyframe.utils.data.collate import default_collate, default_convert
from pyframe.utils.data.dataloader import DataLoader
from pyframe.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from pyframe.utils.data.distributed import DistributedSampler
from pyframe.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "DistributedSampler", "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
    "WeightedRandomSampler", "WorkerInfo", "default_collate", "default_convert", "get_worker_info", "random_split",
]  # fmt: skip
