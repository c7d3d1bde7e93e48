"""Datasets: the map-style and iterable protocols, tensor-backed, subset and concatenated
datasets, and ``random_split``. Same as torch.utils.data's."""

from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar

from pyframe import _dtype
from pyframe.ops.index import index_select
from pyframe.tensor import Tensor

__all__ = [
    "Dataset", "IterableDataset", "TensorDataset", "StackDataset", "ConcatDataset", "ChainDataset", "Subset",
    "random_split",
]  # fmt: skip

T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """Same as torch.utils.data.Dataset: a map from keys (usually ``0 .. len - 1``) to samples.
    Subclasses define ``__getitem__`` and usually ``__len__``; they may define
    ``__getitems__(indices)`` to fetch a whole batch at once (the DataLoader then calls it)."""

    def __getitem__(self, index) -> T_co:
        raise NotImplementedError(f"{type(self).__name__} must implement __getitem__")

    def __add__(self, other: Dataset[T_co]) -> ConcatDataset[T_co]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co], Iterable[T_co]):
    """Same as torch.utils.data.IterableDataset: a stream of samples defined by ``__iter__``.
    With worker processes each worker iterates its own copy; use ``get_worker_info()`` in
    ``__iter__`` to split the stream between them."""

    def __iter__(self) -> Iterator[T_co]:
        raise NotImplementedError(f"{type(self).__name__} must implement __iter__")

    def __add__(self, other: Dataset[T_co]) -> ChainDataset:
        return ChainDataset([self, other])


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Same as torch.utils.data.TensorDataset: sample ``i`` is ``tuple(t[i] for t in tensors)``.

    With the default collate, the DataLoader gathers a whole batch with one C ``index_select``
    per tensor (``collated_batch``), never looping over samples in Python."""

    def __init__(self, *tensors: Tensor) -> None:
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(f"TensorDataset takes tensors, got {type(t).__name__} at position {i}")
            if t.ndim == 0:
                raise ValueError(f"TensorDataset: tensor {i} is 0-d; every tensor needs a first (sample) dimension")
        n = tensors[0]._shape[0]
        if any(t._shape[0] != n for t in tensors):
            sizes = [t._shape[0] for t in tensors]
            raise ValueError(f"Size mismatch between tensors: first dimensions {sizes} must be equal")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def collated_batch(self, indices: Sequence[int] | Tensor) -> list[Tensor]:
        """What ``default_collate([self[i] for i in indices])`` returns, gathered in C: one
        ``index_select`` along dim 0 per tensor."""
        idx = _index_tensor(indices)
        return [index_select(t, 0, idx) for t in self.tensors]

    def __len__(self) -> int:
        return self.tensors[0]._shape[0]


def _index_tensor(indices) -> Tensor:
    from pyframe.ops.creation import tensor

    if isinstance(indices, Tensor):
        if indices.dtype is not _dtype.int64:
            raise TypeError(f"batch indices must be an int64 tensor, got {indices.dtype.name}")
        return indices.reshape(-1).contiguous()
    try:
        return tensor(indices, dtype=_dtype.int64)
    except (TypeError, ValueError) as e:
        raise TypeError(f"batch indices must be a list of ints: {e}") from None


class StackDataset(Dataset):
    """Same as torch.utils.data.StackDataset: samples of several datasets side by side, as a
    tuple (positional) or a dict (keywords)."""

    def __init__(self, *args: Dataset, **kwargs: Dataset) -> None:
        if args and kwargs:
            raise ValueError("StackDataset takes datasets as positional or as keyword arguments, not both")
        datasets = list(args) or list(kwargs.values())
        if not datasets:
            raise ValueError("StackDataset needs at least one dataset")
        n = len(datasets[0])
        if any(len(d) != n for d in datasets):
            raise ValueError(f"Size mismatch between datasets: {[len(d) for d in datasets]}")
        self._length = n
        self.datasets: tuple | dict = tuple(args) if args else dict(kwargs)

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self) -> int:
        return self._length


class ConcatDataset(Dataset[T_co]):
    """Same as torch.utils.data.ConcatDataset: map-style datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int):
        n = len(self)
        if idx < 0:
            if -idx > n:
                raise ValueError(f"absolute value of index {idx} should not exceed dataset length {n}")
            idx += n
        if idx >= n:
            raise IndexError(f"index {idx} is out of range for a ConcatDataset of {n} samples")
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Same as torch.utils.data.ChainDataset: iterable datasets one after another."""

    def __init__(self, datasets: Iterable[Dataset]) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only chains IterableDatasets, got {type(d).__name__}")
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self.datasets)


class Subset(Dataset[T_co]):
    """Same as torch.utils.data.Subset: the samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset: Dataset[T_co], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list:
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


def random_split(dataset: Dataset, lengths: Sequence[int | float], generator=None) -> list[Subset]:
    """Same as torch.utils.data.random_split: ``lengths`` are sizes summing to ``len(dataset)``,
    or fractions summing to 1 (floor of each share, the remainder dealt one by one from the
    first). ``generator`` is a ``pyframe.Generator`` (default: the global one)."""
    from pyframe.utils.data.sampler import randperm

    n = len(dataset)
    lengths = list(lengths)
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in lengths):
        raise TypeError(f"random_split: lengths must be ints or fractions, got {lengths!r}")
    if lengths and all(isinstance(x, float) or x in (0, 1) for x in lengths) and math.isclose(sum(lengths), 1):
        if any(x < 0 or x > 1 for x in lengths):
            raise ValueError(f"random_split: fractions must be between 0 and 1, got {lengths}")
        sizes = [math.floor(n * f) for f in lengths]
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(
                    f"Length of split at index {i} is 0. This might result in an empty dataset.", stacklevel=2
                )
        lengths = sizes
    if any(not isinstance(x, int) or x < 0 for x in lengths):
        raise ValueError(f"random_split: lengths must be non-negative ints or fractions summing to 1, got {lengths}")
    if sum(lengths) != n:
        raise ValueError(f"Sum of input lengths ({sum(lengths)}) does not equal the length of the input dataset ({n})")
    perm = randperm(n, generator).tolist()
    out, start = [], 0
    for size in lengths:
        out.append(Subset(dataset, perm[start : start + size]))
        start += size
    return out
