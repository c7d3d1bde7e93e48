"""Samplers: which dataset indices a DataLoader visits, and in which batches. Same as
torch.utils.data's; random orders come from ``pyframe.ops.random`` (``randperm``, ``randint``,
``weighted_sample``) driven by a ``pyframe.Generator``."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar

from pyframe import _dtype
from pyframe.ops import random as pf_random
from pyframe.ops.random import Generator
from pyframe.ops.random import _default as default_generator
from pyframe.tensor import Tensor

__all__ = [
    "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
    "BatchSampler",
]  # fmt: skip

T_co = TypeVar("T_co", covariant=True)


def _generator(generator) -> Generator:
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"generator must be a pyframe.Generator, got {type(generator).__name__}")
    return generator


def randperm(n: int, generator: Generator | None = None) -> Tensor:
    """A random permutation of ``0 .. n - 1`` as an int64 tensor: ``pyframe.randperm``."""
    return pf_random.randperm(n, generator=_generator(generator))


def _fresh_generator(generator) -> Generator:
    """``generator`` itself, or (as torch's samplers do) a new one seeded from the global
    generator, so ``pyframe.manual_seed`` fixes the order without a generator argument."""
    if generator is not None:
        return _generator(generator)
    seed, offset = default_generator.take(1)
    return Generator().manual_seed((seed * 0x9E3779B97F4A7C15 + offset) & 0x7FFFFFFFFFFFFFFF)


def _check_count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value!r}")
    return value


class Sampler(Generic[T_co]):
    """Same as torch.utils.data.Sampler: iterates dataset indices (or batches of them);
    subclasses define ``__iter__`` and, when they know it, ``__len__``."""

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")


class SequentialSampler(Sampler[int]):
    """Same as torch.utils.data.SequentialSampler: ``0 .. len(data_source) - 1`` in order."""

    def __init__(self, data_source: Sequence) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """Same as torch.utils.data.RandomSampler: a fresh permutation per pass (whole permutations
    repeated and cut to ``num_samples``), or ``num_samples`` uniform draws with replacement.
    The orders differ from torch's (another random stream), not their distribution."""

    def __init__(
        self, data_source: Sequence, replacement: bool = False, num_samples: int | None = None, generator=None
    ) -> None:
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement!r}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = None if generator is None else _generator(generator)
        if num_samples is not None:
            _check_count("num_samples", num_samples)

    @property
    def num_samples(self) -> int:
        """Same as torch's RandomSampler.num_samples: how many indices an epoch draws (``len(data_source)`` unless
        given).
        """
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n, k = len(self.data_source), self.num_samples
        gen = _fresh_generator(self.generator)
        if n == 0:
            if k and self._num_samples is not None:
                raise ValueError("RandomSampler cannot draw samples from an empty data source")
            return iter(())
        if self.replacement:
            return _chunked_draws(n, k, gen)
        return itertools.islice(itertools.chain.from_iterable(_permutations(n, gen)), k)

    def __len__(self) -> int:
        return self.num_samples


def _permutations(n: int, gen: Generator) -> Iterator[list[int]]:
    while True:
        yield randperm(n, gen).tolist()


def _chunked_draws(n: int, k: int, gen: Generator) -> Iterator[int]:
    # uniform ints in [0, n), drawn 32 at a time like torch, so a loader that stops early
    # has not paid for all of them
    for start in range(0, k, 32):
        yield from pf_random.randint(0, n, (min(32, k - start),), generator=gen).tolist()


class SubsetRandomSampler(Sampler[int]):
    """Same as torch.utils.data.SubsetRandomSampler: ``indices`` in a random order."""

    def __init__(self, indices: Sequence[int], generator=None) -> None:
        self.indices = indices
        self.generator = None if generator is None else _generator(generator)

    def __iter__(self) -> Iterator[int]:
        order = randperm(len(self.indices), self.generator).tolist()
        return (self.indices[i] for i in order)

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler[int]):
    """Same as torch.utils.data.WeightedRandomSampler: ``num_samples`` indices drawn with
    probabilities proportional to ``weights`` (finite, non-negative, positive sum)."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True, generator=None) -> None:
        from pyframe.ops.creation import tensor

        _check_count("num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement!r}")
        w = weights.detach().to(_dtype.float64) if isinstance(weights, Tensor) else tensor(weights, _dtype.float64)
        if w.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(w._shape)}")
        self.weights = w.contiguous()
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = None if generator is None else _generator(generator)
        if not replacement and num_samples > w._numel:
            raise ValueError(f"cannot draw num_samples={num_samples} without replacement from {w._numel} weights")

    def __iter__(self) -> Iterator[int]:
        out = pf_random.weighted_sample(self.weights, self.num_samples, self.replacement, _generator(self.generator))
        return iter(out.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list[int]]):
    """Same as torch.utils.data.BatchSampler: lists of ``batch_size`` indices from ``sampler``
    (the last one shorter unless ``drop_last``)."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int, drop_last: bool) -> None:
        _check_count("batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last!r}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        it, size = iter(self.sampler), self.batch_size
        while batch := list(itertools.islice(it, size)):
            if len(batch) < size and self.drop_last:
                return
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else (n + self.batch_size - 1) // self.batch_size
