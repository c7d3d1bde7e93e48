"""Embedding and one_hot (functional and modules) against torch: values, padding_idx and its zero gradient,
the constructor's checks and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from tests._oracle import compare_module, f64, leaf
from tests._tables import constructor_errors_test, reprs_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.mark.parametrize("padding_idx", [None, 2, -1])
def test_embedding_matches_torch(rng, padding_idx):
    idx = np.array([[0, 2, 4], [2, 2, 1]])
    w = f64(rng, 5, 3)
    pw, tw = leaf(w), torch.tensor(w, requires_grad=True)
    out = F.embedding(pf.tensor(idx), pw, padding_idx)
    tout = TF.embedding(torch.tensor(idx), tw, padding_idx)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy())
    cot = rng.standard_normal(tuple(tout.shape))
    out.backward(pf.tensor(cot))
    tout.backward(torch.tensor(cot))
    np.testing.assert_allclose(pw.grad.numpy(), tw.grad.numpy(), rtol=1e-12)


def test_embedding_bad_input():
    with pytest.raises(IndexError, match="index 5 is out of range for an embedding table of 5 rows"):
        F.embedding(pf.tensor([1, 5]), pf.randn(5, 2))
    with pytest.raises(IndexError, match="index -1"):
        F.embedding(pf.tensor([-1]), pf.randn(5, 2))
    with pytest.raises(TypeError, match="int64"):
        F.embedding(pf.tensor([1.0]), pf.randn(5, 2))


def test_embedding_module_matches_torch():
    idx = np.array([[1, 2, 0, 9], [2, 2, 5, 1]], dtype=np.int64)
    compare_module(lambda n: n.Embedding(10, 4), idx)
    compare_module(lambda n: n.Embedding(10, 4, padding_idx=2), idx)
    emb = nn.Embedding(10, 4, padding_idx=2)
    emb(pf.from_numpy(idx)).sum().backward()
    assert emb.padding_idx == 2 and float(emb.weight.grad[2].abs().sum()) == 0
    assert float(emb.weight.grad[1].sum()) == 8.0
    assert nn.Embedding(10, 4, padding_idx=-1).padding_idx == 9


def test_one_hot_matches_torch():
    idx = np.array([[0, 3], [2, 1]])
    np.testing.assert_array_equal(F.one_hot(pf.tensor(idx)).numpy(), TF.one_hot(torch.tensor(idx)).numpy())
    out = F.one_hot(pf.tensor(idx), 6)
    assert out.dtype == pf.int64 and tuple(out.shape) == (2, 2, 6)
    with pytest.raises(RuntimeError, match="smaller than num_classes=3"):
        F.one_hot(pf.tensor(idx), 3)
    with pytest.raises(RuntimeError, match="non-negative"):
        F.one_hot(pf.tensor([-1, 0]))
    with pytest.raises(TypeError, match="int64"):
        F.one_hot(pf.tensor([1.0]))


test_constructor_errors = constructor_errors_test(
    lambda: nn.Embedding(4, 2, padding_idx=4),
    lambda: nn.Embedding(4, 2, _weight=pf.ones(3, 2)),
)


test_reprs_match_torch = reprs_test(
    lambda n: n.Embedding(5, 2),
)
