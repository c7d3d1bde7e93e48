"""DistributedSampler: each rank of a data-parallel job visits its own share of a dataset."""

from __future__ import annotations

import math
from collections.abc import Iterator

from pyframe.ops.random import Generator
from pyframe.utils.data.sampler import Sampler, T_co, randperm

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler[T_co]):
    """Same as torch.utils.data.distributed.DistributedSampler.

    Rank ``rank`` of ``num_replicas`` (default: the default process group's) takes every
    ``num_replicas``-th index of one order shared by all ranks, starting at ``rank``: a shuffle seeded
    by ``seed + epoch`` (call ``set_epoch`` before each epoch, as in torch), or ``0 .. len - 1``. Without
    ``drop_last`` the order is padded with its own first indices so that every rank gets the same
    number of samples (no rank waits for another in a collective); with it the tail is dropped.
    Differs: the shuffle comes from pyframe's generator, so its order is not torch's."""

    def __init__(
        self,
        dataset,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            from pyframe import distributed as dist

            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if isinstance(num_replicas, bool) or not isinstance(num_replicas, int) or num_replicas < 1:
            raise ValueError(f"num_replicas must be a positive int, got {num_replicas!r}")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < num_replicas:
            raise ValueError(f"Invalid rank {rank!r}, rank should be in the interval [0, {num_replicas - 1}]")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {type(seed).__name__}")
        try:
            n = len(dataset)
        except TypeError:
            raise TypeError(f"DistributedSampler needs a dataset with __len__, got {type(dataset).__name__}") from None
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.shuffle = bool(shuffle)
        self.seed = seed
        self.drop_last = bool(drop_last)
        if self.drop_last and n % num_replicas:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)  # the largest equal share
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self) -> Iterator[T_co]:
        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad and indices:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[: self.total_size]
        return iter(indices[self.rank : self.total_size : self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Same as torch's: the shuffle of the next ``__iter__`` is seeded by ``seed + epoch``."""
        self.epoch = epoch
