"""The DataLoader: shuffling with a generator, drop_last and len, custom collate, plain and iterable datasets,
bad arguments, worker processes (same batches in order, persistent, errors with their traceback, unpicklable
batches, killed workers, timeouts) and the generator."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

import pyframe as pf
from pyframe.utils.data import (
    DataLoader,
    Dataset,
    IterableDataset,
    TensorDataset,
    get_worker_info,
)
from tests.data import numbered

# ---- the loader --------------------------------------------------------------------------


def test_loader_shuffle_generator_drop_last_and_len():
    ds = numbered(20)
    loader = DataLoader(ds, batch_size=6, shuffle=True, drop_last=True, generator=pf.Generator().manual_seed(7))
    assert len(loader) == 3
    epoch1 = [b[1].tolist() for b in loader]
    epoch2 = [b[1].tolist() for b in loader]
    assert len(epoch1) == 3 and all(len(b) == 6 for b in epoch1) and epoch1 != epoch2
    again = DataLoader(ds, batch_size=6, shuffle=True, drop_last=True, generator=pf.Generator().manual_seed(7))
    assert [b[1].tolist() for b in again] == epoch1
    unbatched = list(DataLoader(ds, batch_size=None))
    assert len(unbatched) == 20 and unbatched[3][1].item() == 3


def test_loader_custom_collate_and_plainnumbered():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": float(i), "y": i * i}

    batches = list(DataLoader(Squares(), batch_size=2))
    assert batches[2]["y"].tolist() == [16] and batches[0]["x"].dtype == pf.float64
    got = list(DataLoader(numbered(4), batch_size=2, collate_fn=lambda items: len(items)))
    assert got == [2, 2]  # a custom collate sees the samples, not the gathered fast-path batch


def test_loader_bad_arguments():
    ds = numbered(4)
    cases = [
        (dict(batch_sampler=[[0]], batch_size=2), "mutually exclusive"),
        (dict(sampler=[0], shuffle=True), "mutually exclusive with shuffle"),
        (dict(num_workers=-1), "non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor"),
        (dict(num_workers=2, prefetch_factor=0), "greater than 0"),  # an epoch would load nothing
        (dict(persistent_workers=True), "num_workers > 0"),
        (dict(batch_size=0), "positive integer"),
        (dict(batch_size=None, drop_last=True), "mutually exclusive with drop_last"),
    ]
    for kwargs, msg in cases:
        with pytest.raises(ValueError, match=msg):
            DataLoader(ds, **kwargs)
    with pytest.raises(TypeError, match="pyframe.Generator"):
        DataLoader(ds, shuffle=True, generator=np.random.default_rng())
    with pytest.raises(TypeError, match="map-style"):
        DataLoader(object())


class _Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = get_worker_info()
        if info is None:
            return iter(range(self.n))
        return iter(range(info.id, self.n, info.num_workers))

    def __len__(self):
        return self.n


def test_iterable_dataset_single_process():
    assert [b.tolist() for b in DataLoader(_Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert [b.tolist() for b in DataLoader(_Stream(7), batch_size=3, drop_last=True)] == [[0, 1, 2], [3, 4, 5]]
    assert len(DataLoader(_Stream(7), batch_size=3)) == 3
    with pytest.raises(ValueError, match="shuffle"):
        DataLoader(_Stream(3), shuffle=True)


# ---- worker processes -------------------------------------------------------------------------


class _Boom(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            raise KeyError(f"no sample {i}")
        return i


class _Dies(Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        if i == 5:
            os._exit(7)
        return i


class _Slow(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        time.sleep(30)
        return i


def _record_init(worker_id):
    info = get_worker_info()
    assert info.id == worker_id and info.num_workers == 2
    os.environ["PYFRAME_TEST_WORKER"] = str(worker_id)


class _WhoAmI(Dataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return (i, int(os.environ.get("PYFRAME_TEST_WORKER", "-1")), pf.get_num_threads())


def test_workers_give_the_same_batches_in_order():
    ds = TensorDataset(pf.randn(50, 4), pf.arange(50))
    serial = [[t.tolist() for t in b] for b in DataLoader(ds, batch_size=8)]
    parallel = [[t.tolist() for t in b] for b in DataLoader(ds, batch_size=8, num_workers=2, prefetch_factor=1)]
    assert parallel == serial
    rows = [b for b in DataLoader(_WhoAmI(), batch_size=2, num_workers=2, worker_init_fn=_record_init)]
    assert [r[0].tolist() for r in rows] == [[0, 1], [2, 3], [4, 5]]
    assert [r[1].tolist() for r in rows] == [[0, 0], [1, 1], [0, 0]]  # round-robin, init_fn ran
    assert all(r[2].tolist() == [1, 1] for r in rows)  # one thread per worker


def test_workers_iterable_and_persistent():
    loader = DataLoader(_Stream(10), batch_size=3, num_workers=2, persistent_workers=True)
    first = sorted(x for b in loader for x in b.tolist())
    second = sorted(x for b in loader for x in b.tolist())
    assert first == second == list(range(10))
    partial = iter(loader)
    next(partial)  # a new epoch while batches are still in flight
    assert sorted(x for b in loader for x in b.tolist()) == list(range(10))


def test_worker_error_is_reraised_with_its_traceback():
    with pytest.raises(KeyError, match="(?s)in DataLoader worker process.*no sample 5"):
        list(DataLoader(_Boom(), batch_size=2, num_workers=2))


class _Unpicklable(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        return {"x": i, "f": lambda: i}


def test_unpicklable_batch_raises_instead_of_hanging():
    loader = DataLoader(_Unpicklable(), batch_size=2, num_workers=1, collate_fn=lambda items: items)
    with pytest.raises(Exception, match="cannot be pickled"):
        next(iter(loader))


def test_killed_worker_fails_fast():
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="exited unexpectedly.*exit code 7"):
        list(DataLoader(_Dies(), batch_size=2, num_workers=2))
    assert time.monotonic() - t0 < 20


def test_timeout():
    with pytest.raises(RuntimeError, match="timed out after 0.5 seconds"):
        next(iter(DataLoader(_Slow(), batch_size=2, num_workers=1, timeout=0.5)))


# ---- the generator ------------------------------------------------------------------------------


def test_generator():
    g = pf.Generator()
    assert g.manual_seed(11) is g and g.initial_seed() == 11
    state = g.get_state()
    a = pf.utils.data.sampler.randperm(30, g).tolist()
    g.set_state(state)
    assert pf.utils.data.sampler.randperm(30, g).tolist() == a


class _SendsThenDies(Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            os._exit(7)
        return pf.ones(3) * i


def test_worker_dead_before_its_sent_batch_is_read_is_reported_as_its_exit(monkeypatch):
    # with pyframe.multiprocessing's reductions (torch.multiprocessing's file-descriptor sharing) batch 0's storage
    # is fetched from the worker that sent it, which has exited by the time it is read
    from multiprocessing.reduction import ForkingPickler

    import pyframe.multiprocessing

    monkeypatch.setattr(ForkingPickler, "_extra_reducers", dict(ForkingPickler._extra_reducers))
    pyframe.multiprocessing.init_reductions()
    it = iter(DataLoader(_SendsThenDies(), batch_size=2, num_workers=1))
    time.sleep(1.0)
    with pytest.raises(RuntimeError, match="exited unexpectedly.*exit code 7"):
        next(it)
