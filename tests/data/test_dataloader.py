"""pyframe.utils.data: datasets, samplers, collate and the DataLoader (with and without workers)."""

from __future__ import annotations

import collections
import os
import time

import numpy as np
import pytest

import pyframe as pf
from pyframe.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    StackDataset,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    get_worker_info,
    random_split,
)


def _dataset(n: int = 20) -> TensorDataset:
    x = pf.arange(n * 3, dtype=pf.float32).reshape(n, 3)
    return TensorDataset(x, pf.arange(n))


# ---- datasets ------------------------------------------------------------------------------


def test_tensor_dataset_items_and_batches():
    ds = _dataset()
    x, y = ds[4]
    assert x.tolist() == [12.0, 13.0, 14.0] and y.item() == 4 and len(ds) == 20
    batches = list(DataLoader(ds, batch_size=6))
    assert [b[1].tolist() for b in batches] == [list(range(i, min(i + 6, 20))) for i in range(0, 20, 6)]
    assert isinstance(batches[0], list) and batches[0][0].shape == (6, 3)
    assert batches[1][0].tolist() == ds.tensors[0][6:12].tolist()


def test_tensor_dataset_gathers_strided_rows_and_keeps_grad():
    base = pf.arange(40, dtype=pf.float32).reshape(10, 4)
    ds = TensorDataset(base[:, ::2], base.t().contiguous().t())  # strided within rows; strided dim 0
    xb, yb = next(iter(DataLoader(ds, batch_size=3, sampler=[7, 0, 9])))
    assert xb.tolist() == base[[7, 0, 9]][:, ::2].tolist() and yb.tolist() == base[[7, 0, 9]].tolist()
    w = pf.randn(5, 2, requires_grad=True)
    (b,) = next(iter(DataLoader(TensorDataset(w), batch_size=5)))
    b.sum().backward()
    assert w.grad.tolist() == [[1.0, 1.0]] * 5


def test_tensor_dataset_bad_input():
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(pf.zeros(3, 2), pf.zeros(4))
    with pytest.raises(TypeError, match="takes tensors"):
        TensorDataset([1, 2, 3])
    with pytest.raises(IndexError, match="index 5 is out of bounds"):
        _dataset(5).collated_batch([0, 5])


def test_subset_concat_stack():
    ds = _dataset(10)
    sub = Subset(ds, [9, 3, 5])
    assert len(sub) == 3 and sub[0][1].item() == 9
    assert [b[1].tolist() for b in DataLoader(sub, batch_size=2)] == [[9, 3], [5]]
    cat = ConcatDataset([sub, ds])
    assert len(cat) == 13 and cat[3][1].item() == 0 and cat[-1][1].item() == 9
    with pytest.raises(IndexError):
        cat[13]
    assert len(ds + sub) == 13
    nested = Subset(Subset(ds, [8, 6, 4, 2, 0]), pf.tensor([4, 1]))
    (xb, yb), (x0, y0) = next(iter(DataLoader(nested, batch_size=2))), nested[0]
    assert yb.tolist() == [0, 6] and xb[0].tolist() == x0.tolist() and y0.item() == 0
    st = StackDataset(a=ds, b=list(range(10, 20)))
    assert st[2]["b"] == 12 and len(st) == 10
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(ds, [1])


def test_random_split_lengths_and_fractions():
    ds = _dataset(10)
    a, b = random_split(ds, [7, 3], generator=pf.Generator().manual_seed(1))
    got = sorted(a.indices + b.indices)
    assert got == list(range(10)) and len(a) == 7
    a2, _ = random_split(ds, [7, 3], generator=pf.Generator().manual_seed(1))
    assert a2.indices == a.indices
    parts = random_split(range(11), [0.5, 0.3, 0.2])
    assert [len(p) for p in parts] == [6, 3, 2]  # floors 5, 3, 2; the remainder to the first
    with pytest.raises(ValueError, match="does not equal the length"):
        random_split(ds, [5, 6])
    with pytest.raises(TypeError, match="pyframe.Generator"):
        random_split(ds, [5, 5], generator=3)


# ---- samplers ------------------------------------------------------------------------------


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


# ---- collate -------------------------------------------------------------------------------

Point = collections.namedtuple("Point", "x y")


def _samples():
    return [
        {"img": np.full((2, 2), i, np.float32), "label": i, "w": 0.5 * i, "ok": i % 2 == 0, "name": f"s{i}",
         "pt": Point(i, np.float64(i)), "pair": (np.int32(i), [i, i + 1])}
        for i in range(3)
    ]  # fmt: skip


def test_default_collate_structure():
    b = default_collate(_samples())
    assert b["img"].shape == (3, 2, 2) and b["img"].dtype == pf.float32
    assert b["label"].dtype == pf.int64 and b["label"].tolist() == [0, 1, 2]
    assert b["w"].dtype == pf.float64 and b["ok"].dtype == pf.bool
    assert b["name"] == ["s0", "s1", "s2"]
    assert isinstance(b["pt"], Point) and b["pt"].y.dtype == pf.float64
    assert isinstance(b["pair"], list) and b["pair"][0].dtype == pf.int32
    assert [t.tolist() for t in b["pair"][1]] == [[0, 1, 2], [1, 2, 3]]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="found object"):
        default_collate([object(), object()])


def test_default_collate_matches_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = default_collate(_samples()), torch.utils.data.default_collate(_samples())
    for key in ours:
        o, t = ours[key], theirs[key]
        assert type(o).__name__ == type(t).__name__ or (isinstance(o, pf.Tensor) and isinstance(t, torch.Tensor))
        flat_o = o if isinstance(o, (list, tuple)) else [o]
        flat_t = t if isinstance(t, (list, tuple)) else [t]
        for a, c in zip(flat_o, flat_t, strict=True):
            if isinstance(a, pf.Tensor):
                assert str(a.dtype).split(".")[-1] == str(c.dtype).split(".")[-1]
                np.testing.assert_array_equal(a.numpy(), c.numpy())
            elif isinstance(a, list):
                assert [x.tolist() for x in a] == [x.tolist() for x in c]
            else:
                assert a == c


# ---- the loader --------------------------------------------------------------------------


def test_loader_shuffle_generator_drop_last_and_len():
    ds = _dataset(20)
    loader = DataLoader(ds, batch_size=6, shuffle=True, drop_last=True, generator=pf.Generator().manual_seed(7))
    assert len(loader) == 3
    epoch1 = [b[1].tolist() for b in loader]
    epoch2 = [b[1].tolist() for b in loader]
    assert len(epoch1) == 3 and all(len(b) == 6 for b in epoch1) and epoch1 != epoch2
    again = DataLoader(ds, batch_size=6, shuffle=True, drop_last=True, generator=pf.Generator().manual_seed(7))
    assert [b[1].tolist() for b in again] == epoch1
    unbatched = list(DataLoader(ds, batch_size=None))
    assert len(unbatched) == 20 and unbatched[3][1].item() == 3


def test_loader_custom_collate_and_plain_dataset():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": float(i), "y": i * i}

    batches = list(DataLoader(Squares(), batch_size=2))
    assert batches[2]["y"].tolist() == [16] and batches[0]["x"].dtype == pf.float64
    got = list(DataLoader(_dataset(4), batch_size=2, collate_fn=lambda items: len(items)))
    assert got == [2, 2]  # a custom collate sees the samples, not the gathered fast-path batch


def test_loader_bad_arguments():
    ds = _dataset(4)
    cases = [
        (dict(batch_sampler=[[0]], batch_size=2), "mutually exclusive"),
        (dict(sampler=[0], shuffle=True), "mutually exclusive with shuffle"),
        (dict(num_workers=-1), "non-negative"),
        (dict(prefetch_factor=2), "prefetch_factor"),
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
