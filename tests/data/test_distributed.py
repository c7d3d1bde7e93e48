"""DistributedSampler: shares, padding, drop_last, epochs, against torch's where orders are fixed."""

from __future__ import annotations

import pytest

import pyframe.distributed as dist
from pyframe.utils.data import DataLoader, TensorDataset
from pyframe.utils.data.distributed import DistributedSampler


def shares(n: int, world: int, **kw) -> list[list[int]]:
    return [list(DistributedSampler(range(n), num_replicas=world, rank=r, **kw)) for r in range(world)]


@pytest.mark.parametrize("n", [0, 1, 7, 10, 12])
@pytest.mark.parametrize("drop_last", [False, True])
def test_ranks_partition_the_dataset(n, drop_last):
    world = 3
    parts = shares(n, world, shuffle=True, seed=5, drop_last=drop_last)
    sizes = {len(p) for p in parts}
    assert len(sizes) == 1  # every rank gets the same count: none waits for another
    got = [i for p in parts for i in p]
    if drop_last:
        assert len(got) == len(set(got)) == (n // world) * world
    else:
        assert set(got) == set(range(n))  # every sample, some repeated as padding
        assert len(got) == -(-n // world) * world
    assert len(DistributedSampler(range(n), num_replicas=world, rank=0, drop_last=drop_last)) == sizes.pop()


@pytest.mark.parametrize(("n", "world", "drop_last"), [(10, 3, False), (10, 3, True), (2, 5, False), (9, 2, False)])
def test_unshuffled_order_matches_torch(n, world, drop_last):
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchSampler

    for r in range(world):
        ours = DistributedSampler(range(n), num_replicas=world, rank=r, shuffle=False, drop_last=drop_last)
        theirs = TorchSampler(range(n), num_replicas=world, rank=r, shuffle=False, drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    del torch


def test_shuffle_is_shared_by_ranks_and_changes_with_the_epoch():
    a = DistributedSampler(range(40), num_replicas=2, rank=0, seed=1)
    b = DistributedSampler(range(40), num_replicas=2, rank=1, seed=1)
    first = list(a), list(b)
    assert not set(first[0]) & set(first[1])  # one permutation split between the ranks
    assert list(a) == first[0]  # the same order until set_epoch
    a.set_epoch(1)
    b.set_epoch(1)
    assert list(a) != first[0] and not set(a) & set(b)
    assert first[0] != list(range(0, 40, 2))


def test_defaults_come_from_the_process_group_and_feed_a_dataloader():
    import pyframe

    with pytest.raises(ValueError, match="init_process_group"):
        DistributedSampler(range(4))
    dist.init_process_group("single")
    try:
        ds = TensorDataset(pyframe.arange(6))
        sampler = DistributedSampler(ds, shuffle=False)
        assert (sampler.num_replicas, sampler.rank) == (1, 0)
        batches = [b[0].tolist() for b in DataLoader(ds, batch_size=4, sampler=sampler)]
        assert batches == [[0, 1, 2, 3], [4, 5]]
    finally:
        dist.destroy_process_group()


def test_bad_arguments():
    with pytest.raises(ValueError, match=r"Invalid rank 2, rank should be in the interval \[0, 1\]"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(ValueError, match="Invalid rank -1"):
        DistributedSampler(range(4), num_replicas=2, rank=-1)
    with pytest.raises(ValueError, match="num_replicas must be a positive int"):
        DistributedSampler(range(4), num_replicas=0, rank=0)
    with pytest.raises(TypeError, match="needs a dataset with __len__"):
        DistributedSampler(iter(range(4)), num_replicas=1, rank=0)
    with pytest.raises(TypeError, match="seed must be an int"):
        DistributedSampler(range(4), num_replicas=1, rank=0, seed=1.5)
