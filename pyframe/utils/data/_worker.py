"""What runs inside a DataLoader worker process, and what it sends back.

A worker takes ``(task, indices)`` from its own index queue, fetches and collates that batch,
and puts ``(task, batch)`` on the loader's shared data queue; tensors cross the process
boundary pickled (their NumPy buffer). An exception becomes an ``ExceptionWrapper`` that the
parent re-raises with the worker's traceback. ``None`` on the index queue ends the worker;
so does the parent's death (checked while idle), so no worker outlives its loader.
"""

from __future__ import annotations

import os
import queue
import random
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.reduction import ForkingPickler
from typing import Any

from pyframe._backend import set_num_threads
from pyframe.ops.random import manual_seed
from pyframe.tensor import Tensor, from_numpy

__all__ = ["WorkerInfo", "get_worker_info"]

_worker_info: WorkerInfo | None = None


@dataclass(frozen=True)
class WorkerInfo:
    """Same as torch.utils.data's worker info: this worker's ``id`` (0 .. ``num_workers`` - 1),
    its ``seed`` and its copy of the ``dataset``."""

    id: int
    num_workers: int
    seed: int
    dataset: Any


def get_worker_info() -> WorkerInfo | None:
    """Same as torch.utils.data.get_worker_info: the WorkerInfo inside a DataLoader worker
    process, ``None`` in the main process."""
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, carried to the parent with its formatted traceback."""

    def __init__(self, where: str) -> None:
        exc_type, exc, _ = sys.exc_info()
        self.exc_type = exc_type
        self.message = f"Caught {exc_type.__name__} {where}.\nOriginal {traceback.format_exc()}"

    def reraise(self):
        msg = self.message
        if self.exc_type is KeyError:  # KeyError quotes its argument; keep the traceback readable
            msg = KeyError(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:  # an exception type that needs other arguments
            raise RuntimeError(msg) from None
        raise exc


@dataclass(frozen=True)
class IterableStop:
    """A worker's iterable dataset is exhausted."""

    worker_id: int


@dataclass(frozen=True)
class ResumeIteration:
    """A new epoch for persistent workers: restart the dataset iterator, then acknowledge."""

    worker_id: int = -1


def _rebuild_tensor(arr, requires_grad: bool) -> Tensor:
    t = from_numpy(arr)  # the unpickled array is this process's own: no copy
    t.requires_grad = requires_grad
    return t


def _reduce_tensor(t: Tensor):
    return _rebuild_tensor, (t.detach().numpy(), t.requires_grad)


# Between processes (multiprocessing's queues only; plain pickle is unchanged) a tensor
# travels as its NumPy buffer and is rebuilt over it, skipping the copy of Tensor.__reduce_ex__.
ForkingPickler.register(Tensor, _reduce_tensor)


def _pickled(data, worker_id: int) -> bytes:
    """The batch pickled here rather than in the queue's feeder thread, where a batch that
    cannot be pickled would only print a traceback and leave the parent waiting forever."""
    try:
        return bytes(ForkingPickler.dumps(data))
    except Exception:
        error = ExceptionWrapper(
            f"in DataLoader worker process {worker_id} while sending a batch that cannot be pickled"
        )
    try:
        return bytes(ForkingPickler.dumps(error))
    except Exception:  # an exception type pickle cannot find by name
        error.exc_type = RuntimeError
        return bytes(ForkingPickler.dumps(error))


def unpickled(payload):
    """The parent's side of ``_pickled``."""
    return ForkingPickler.loads(payload) if isinstance(payload, bytes) else payload


def worker_loop(
    make_fetcher, index_queue, data_queue, base_seed: int, init_fn, worker_id: int, num_workers: int,
    dataset, parent_pid: int,
) -> None:  # fmt: skip
    global _worker_info
    import numpy as np

    set_num_threads(1)  # the workers share the machine's cores with each other and the parent
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(seed % (1 << 32))
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)

    init_error = None
    fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = make_fetcher()
    except Exception:
        init_error = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
    exhausted = False
    try:
        while True:
            try:
                task = index_queue.get(timeout=2.0)
            except queue.Empty:
                if os.getppid() != parent_pid:  # the loader's process is gone
                    break
                continue
            if task is None:
                break
            if isinstance(task, ResumeIteration):
                exhausted = False
                if init_error is None:
                    try:
                        fetcher = make_fetcher()
                    except Exception:
                        init_error = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
                data_queue.put((ResumeIteration(worker_id), None))
                continue
            idx, index = task
            if init_error is not None:
                data, init_error = init_error, None
            elif exhausted:
                data = IterableStop(worker_id)
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    data, exhausted = IterableStop(worker_id), True
                except Exception:
                    data = ExceptionWrapper(f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, _pickled(data, worker_id)))
            del data
    except KeyboardInterrupt:
        pass
    # leave without flushing batches nobody will read (the parent is shutting us down)
    data_queue.cancel_join_thread()
    data_queue.close()
