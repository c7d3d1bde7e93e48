"""Samplers: RandomSampler as a seeded permutation, SubsetRandomSampler, WeightedRandomSampler, BatchSampler
against torch."""

from __future__ import annotations

import collections

import pytest

import pyframe as pf
from pyframe.utils.data import (
    BatchSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def test_random_sampler_is_a_seeded_permutation():
    ds = range(50)
    order = list(RandomSampler(ds, generator=pf.Generator().manual_seed(3)))
    assert sorted(order) == list(range(50)) and order != list(range(50))
    assert order == list(RandomSampler(ds, generator=pf.Generator().manual_seed(3)))
    pf.manual_seed(5)
    first = list(RandomSampler(ds))
    pf.manual_seed(5)
    assert list(RandomSampler(ds)) == first  # the global seed fixes the order too
    long = list(RandomSampler(range(4), num_samples=10))
    assert len(long) == 10 and sorted(long[:4]) == [0, 1, 2, 3] and sorted(long[4:8]) == [0, 1, 2, 3]
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=300))
    assert len(drawn) == 300 and set(drawn) == {0, 1, 2}
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(ds, num_samples=0)


def test_subset_and_weighted_samplers():
    idx = [10, 20, 30, 40]
    assert sorted(SubsetRandomSampler(idx)) == idx
    w = WeightedRandomSampler([0.0, 1.0, 3.0, 0.0], 4000, generator=pf.Generator().manual_seed(0))
    counts = collections.Counter(w)
    assert set(counts) == {1, 2} and abs(counts[2] / 4000 - 0.75) < 0.04 and len(w) == 4000
    no_rep = list(WeightedRandomSampler([1, 2, 3, 4, 5], 5, replacement=False))
    assert sorted(no_rep) == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="positive weights"):
        list(WeightedRandomSampler([1.0, 0.0, 0.0], 2, replacement=False))
    with pytest.raises(ValueError, match="finite and >= 0"):
        list(WeightedRandomSampler([1.0, -1.0], 2))
    with pytest.raises(ValueError, match="1d"):
        WeightedRandomSampler([[1.0, 2.0]], 2)


def test_batch_sampler_matches_torch():
    torch = pytest.importorskip("torch")
    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, True), (2, 5, False)]:
        ours = BatchSampler(SequentialSampler(range(n)), bs, drop)
        theirs = torch.utils.data.BatchSampler(torch.utils.data.SequentialSampler(range(n)), bs, drop)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(3), 0, False)
