"""``DataLoader``: batches from a dataset, in the main process or in worker processes.
Same as torch.utils.data.DataLoader."""

from __future__ import annotations

import contextlib
import functools
import itertools
import multiprocessing
import multiprocessing.connection
import os
import queue
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pyframe.ops.random import Generator, randint
from pyframe.tensor import Tensor
from pyframe.utils.data import _worker
from pyframe.utils.data._worker import WorkerInfo, get_worker_info  # noqa: F401 - torch.utils.data.dataloader's names
from pyframe.utils.data.collate import default_collate, default_convert
from pyframe.utils.data.dataset import Dataset, IterableDataset, Subset, TensorDataset
from pyframe.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

# how often a waiting parent checks that its workers are still alive
_POLL_SECONDS = 1.0


class _InfiniteConstantSampler(Sampler[None]):
    """The "indices" of an iterable dataset: ``None`` forever; the fetcher decides the end."""

    def __iter__(self) -> Iterator[None]:
        return itertools.repeat(None)


class _Fetcher:
    """Turns one index (or list of indices) from the sampler into one collated batch."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool, batch_size) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.batch_size = batch_size
        self.iterable = isinstance(dataset, IterableDataset)
        if self.iterable:
            self.it = iter(dataset)
        # the fast path: a TensorDataset batch under the default collate is one C gather per
        # tensor, also through Subsets (what random_split returns): their indices are mapped first
        self.gather, self.index_maps = None, []
        if collate_fn is default_collate:
            source = dataset
            while isinstance(source, Subset):
                indices = source.indices
                self.index_maps.append(indices.tolist() if isinstance(indices, Tensor) else indices)
                source = source.dataset
            if isinstance(source, TensorDataset):
                self.gather = source
        getitems = getattr(dataset, "__getitems__", None)
        self.getitems = getitems if callable(getitems) else None

    def fetch(self, index):
        if self.iterable:
            if not self.auto_collation:
                return self.collate_fn(next(self.it))
            batch = list(itertools.islice(self.it, self.batch_size))
            if not batch or (self.drop_last and len(batch) < self.batch_size):
                raise StopIteration
            return self.collate_fn(batch)
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.gather is not None:
            for indices in self.index_maps:
                index = [indices[i] for i in index]
            return self.gather.collated_batch(index)
        data = self.getitems(index) if self.getitems else [self.dataset[i] for i in index]
        return self.collate_fn(data)


def _make_fetcher(dataset, auto_collation, collate_fn, drop_last, batch_size) -> _Fetcher:
    return _Fetcher(dataset, auto_collation, collate_fn, drop_last, batch_size)


class DataLoader:
    """Same as torch.utils.data.DataLoader.

    What differs: ``pin_memory`` is accepted and does nothing (there is no accelerator);
    ``in_order=False`` is accepted and batches still come in order; shuffled orders differ
    from torch's (pyframe's counter-based generator), their distribution does not. Workers
    run pyframe with one thread each; a worker that dies makes iteration raise a
    ``RuntimeError`` within about a second instead of hanging."""

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context=None,
        generator: Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError(
                f"num_workers option should be non-negative; use num_workers=0 to disable multiprocessing "
                f"(got {num_workers!r})"
            )
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise ValueError(f"timeout option should be non-negative, got {timeout!r}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing. let num_workers > 0 to "
                "enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (
            isinstance(prefetch_factor, bool) or not isinstance(prefetch_factor, int) or prefetch_factor < 0
        ):
            raise ValueError(f"prefetch_factor option should be a non-negative int, got {prefetch_factor!r}")
        if num_workers > 0 and prefetch_factor == 0:  # torch refuses it when iterating; nothing would be loaded
            raise ValueError("prefetch_factor must be greater than 0 when num_workers > 0 (each worker loads that "
                             "many batches ahead), got 0")  # fmt: skip
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        if generator is not None and not isinstance(generator, Generator):
            raise TypeError(f"generator must be a pyframe.Generator, got {type(generator).__name__}")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise TypeError(f"worker_init_fn must be callable, got {type(worker_init_fn).__name__}")
        if collate_fn is not None and not callable(collate_fn):
            raise TypeError(f"collate_fn must be callable, got {type(collate_fn).__name__}")

        if isinstance(dataset, IterableDataset):
            if shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, got {shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, got {sampler}")
            if batch_sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified batch_sampler option, got {batch_sampler}"
                )
        elif not (hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__")) and sampler is None:
            raise TypeError(
                f"DataLoader needs a map-style dataset (__getitem__ and __len__) or an IterableDataset, "
                f"got {type(dataset).__name__}"
            )
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size, drop_last = None, False
        elif batch_size is None:
            if drop_last:
                raise ValueError(
                    "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
                )
        elif isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size!r}")

        if sampler is None:
            if isinstance(dataset, IterableDataset):
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        # the options under torch's attribute names: what is read, how it is batched, who loads it
        self.dataset, self.sampler, self.batch_sampler, self.generator = dataset, sampler, batch_sampler, generator
        self.batch_size, self.drop_last = batch_size, drop_last
        self.collate_fn = collate_fn or (default_collate if batch_sampler is not None else default_convert)
        self.num_workers, self.prefetch_factor, self.timeout = num_workers, prefetch_factor, timeout
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.persistent_workers, self.in_order = persistent_workers, in_order
        self.pin_memory, self.pin_memory_device = pin_memory, pin_memory_device
        self._iterator = None

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _fetcher_factory(self):
        return functools.partial(
            _make_fetcher, self.dataset, self._auto_collation, self.collate_fn, self.drop_last, self.batch_size
        )

    def __iter__(self) -> Iterator:
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None:
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset()
            return self._iterator
        return _MultiProcessIter(self)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # a TypeError when the dataset has no length, as torch
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)

    def __del__(self) -> None:
        it = self.__dict__.get("_iterator")
        if it is not None:
            it._shutdown()


class _SingleProcessIter:
    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._index_iter = iter(loader._index_sampler)
        self._fetcher = loader._fetcher_factory()()

    def __iter__(self) -> _SingleProcessIter:
        return self

    def __next__(self):
        return self._fetcher.fetch(next(self._index_iter))

    def __len__(self) -> int:
        return len(self._loader)


def _base_seed(generator: Generator | None) -> int:
    return int(randint(0, 1 << 62, (), generator=generator).item())


class _MultiProcessIter:
    """Keeps ``prefetch_factor`` batches per worker in flight and hands them out in order."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        ctx = loader.multiprocessing_context
        if ctx is None:
            ctx = multiprocessing.get_context()
        elif isinstance(ctx, str):
            ctx = multiprocessing.get_context(ctx)
        self._data_queue = ctx.Queue()
        self._index_queues = []
        self._workers = []
        self._closed = False
        self._owner_pid = os.getpid()  # a forked child inherits this object but not its workers
        make_fetcher = loader._fetcher_factory()
        seed = _base_seed(loader.generator)
        for wid in range(self._num_workers):
            q = ctx.Queue()
            q.cancel_join_thread()  # never wait at exit to flush indices a dead worker won't read
            w = ctx.Process(
                target=_worker.worker_loop,
                args=(make_fetcher, q, self._data_queue, seed, loader.worker_init_fn, wid, self._num_workers,
                      loader.dataset, os.getpid()),
                daemon=True,
            )  # fmt: skip
            w.start()
            self._index_queues.append(q)
            self._workers.append(w)
        self._start_epoch()

    def _start_epoch(self) -> None:
        self._sampler_iter = iter(self._loader._index_sampler)
        self._send_idx = self._rcvd_idx = 0
        self._tasks: dict[int, list] = {}  # task -> [worker id] or [worker id, batch]
        self._active = [True] * self._num_workers
        self._next_worker = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch * self._num_workers):
            self._put_index()

    def _reset(self) -> None:
        """A new epoch on the same (persistent) workers: they restart their iterators and
        acknowledge; batches still in flight from the last epoch are dropped."""
        if self._closed:
            raise RuntimeError("the DataLoader's persistent workers were shut down after an error")
        for wid, q in enumerate(self._index_queues):
            q.put(_worker.ResumeIteration(wid))
        acks = 0
        while acks < self._num_workers:
            idx, _ = self._get()
            acks += isinstance(idx, _worker.ResumeIteration)
        self._start_epoch()

    def _put_index(self) -> None:
        if not any(self._active):
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        wid = next(self._next_worker)
        while not self._active[wid]:
            wid = next(self._next_worker)
        self._index_queues[wid].put((self._send_idx, index))
        self._tasks[self._send_idx] = [wid]
        self._send_idx += 1

    def __iter__(self) -> _MultiProcessIter:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def __next__(self):
        while True:
            # skip tasks sent to workers whose iterable dataset has ended
            while self._rcvd_idx < self._send_idx:
                task = self._tasks[self._rcvd_idx]
                if len(task) == 2 or self._active[task[0]]:
                    break
                del self._tasks[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            task = self._tasks[self._rcvd_idx]
            if len(task) == 2:
                del self._tasks[self._rcvd_idx]
                self._rcvd_idx += 1
                self._put_index()
                return self._deliver(task[1])
            idx, data = self._get()
            if isinstance(idx, _worker.ResumeIteration):
                continue
            if isinstance(data, _worker.IterableStop):  # its pending tasks are skipped above
                self._active[data.worker_id] = False
                continue
            if idx != self._rcvd_idx:
                self._tasks[idx].append(data)
                continue
            del self._tasks[idx]
            self._rcvd_idx += 1
            self._put_index()
            return self._deliver(data)

    @staticmethod
    def _deliver(data):
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        return data

    def _get(self):
        """The next (task, batch) from any worker; raises instead of waiting forever when a
        worker died or ``timeout`` passed."""
        start = time.monotonic()
        while True:
            wait = _POLL_SECONDS
            if self._timeout > 0:
                wait = min(wait, max(self._timeout - (time.monotonic() - start), 0.0))
            try:
                idx, payload = self._data_queue.get(timeout=wait)
            except queue.Empty:
                self._raise_if_a_worker_died()
            else:
                try:
                    return idx, _worker.unpickled(payload)
                except Exception as e:
                    # a batch's tensor storage travels as a file descriptor fetched from the worker that sent it:
                    # a worker that exited after sending cannot hand it over. Its exit is the error to report (as
                    # torch does), once the process is reaped (its sockets close a moment before it can be)
                    ended = multiprocessing.connection.wait([w.sentinel for w in self._workers], _POLL_SECONDS)
                    for w in self._workers:
                        if w.sentinel in ended:
                            w.join(timeout=_POLL_SECONDS)
                    self._raise_if_a_worker_died(e)
                    raise
            if self._timeout > 0 and time.monotonic() - start >= self._timeout:
                self._shutdown()
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds waiting for a batch")

    def _raise_if_a_worker_died(self, cause: BaseException | None = None) -> None:
        dead = [w for w in self._workers if not w.is_alive()]
        if dead:
            self._shutdown()
            codes = ", ".join(f"pid {w.pid}: exit code {w.exitcode}" for w in dead)
            raise RuntimeError(
                f"DataLoader worker(s) exited unexpectedly ({codes}); a negative code is the signal "
                "that killed it (e.g. -9: SIGKILL, often out of memory)"
            ) from cause

    def _shutdown(self) -> None:
        if self._closed or os.getpid() != self._owner_pid:
            return
        self._closed = True
        for q in self._index_queues:
            with contextlib.suppress(OSError, ValueError):  # a queue already broken by a dead worker
                q.put(None)
        deadline = time.monotonic() + 1.0  # idle workers leave at once; a busy one is terminated
        for w in self._workers:
            w.join(timeout=max(deadline - time.monotonic(), 0.0))
            if w.is_alive():
                w.terminate()
                w.join(timeout=1.0)
        for q in (*self._index_queues, self._data_queue):
            q.cancel_join_thread()
            q.close()

    def __del__(self) -> None:
        if not self.__dict__.get("_closed", True):
            self._shutdown()
