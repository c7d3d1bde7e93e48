"""Datasets: TensorDataset (items, batches, strided rows, gradients, bad input), Subset, ConcatDataset,
StackDataset and random_split."""

from __future__ import annotations

import pytest

import pyframe as pf
from pyframe.utils.data import (
    ConcatDataset,
    DataLoader,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from tests.data import numbered


def test_tensor_dataset_items_and_batches():
    ds = numbered()
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
        numbered(5).collated_batch([0, 5])


def test_subset_concat_stack():
    ds = numbered(10)
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
    ds = numbered(10)
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
