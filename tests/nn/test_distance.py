"""Distances against torch: pairwise_distance and cosine_similarity (float64 forward and gradients), modules."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
from tests._oracle import compare_named, rand

torch = pytest.importorskip("torch")
TF = torch.nn.functional
rand2 = functools.partial(rand, scale=2.0)


A, B = rand2(4, 6, seed=1), rand2(4, 6, seed=2)


def test_distances_match_torch():
    compare_named("pairwise_distance", (A, B), grad=(0, 1))
    compare_named("pairwise_distance", (A, B), {"p": 1.0, "keepdim": True}, grad=(0, 1))
    compare_named("cosine_similarity", (A, B), grad=(0, 1))
    compare_named("cosine_similarity", (A, B[:1]), {"dim": -1}, grad=(0, 1))
    assert repr(nn.CosineSimilarity()) == repr(torch.nn.CosineSimilarity())
    np.testing.assert_allclose(nn.PairwiseDistance(p=3)(pf.tensor(A), pf.tensor(B)).numpy(),
                               torch.nn.PairwiseDistance(p=3)(torch.tensor(A), torch.tensor(B)).numpy())  # fmt: skip
