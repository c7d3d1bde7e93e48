"""Composed reductions (median, nanmedian, nansum, nanmean, var_mean, std_mean, aminmax, count_nonzero) against
torch: values and gradients."""

import numpy as np
import pytest

import pyframe
from tests._tables import torch_case_table_test

# ---- against torch: name -> (function of the library and the inputs, input arrays) ----------------------

RNG = np.random.default_rng(45)


def arr(*shape):
    return RNG.uniform(-2.0, 2.0, shape)


TORCH_CASES = {
    "median": (lambda L, a: L.median(a), (arr(4, 3),)),
    "median_dim": (lambda L, a: a.median(dim=1).values, (arr(4, 5),)),
    "nanmedian_dim": (lambda L, a: L.nanmedian(L.where(a > 1.5, float("nan"), a), 0).values, (arr(6, 3),)),
    "nansum": (lambda L, a: L.nansum(L.where(a > 1, float("nan"), a), 1), (arr(3, 4),)),
    "nanmean": (lambda L, a: L.nanmean(L.where(a > 1, float("nan"), a)), (arr(3, 4),)),
    "var_mean": (lambda L, a: L.var_mean(a, 1)[0] + L.var_mean(a, 1)[1], (arr(3, 4),)),
    "std_mean": (lambda L, a: L.std_mean(a, correction=0)[0] * L.std_mean(a)[1], (arr(3, 4),)),
    "aminmax": (lambda L, a: L.aminmax(a, dim=0).max - L.aminmax(a, dim=0).min, (arr(3, 4),)),
}  # fmt: skip


test_matches_torch_values_and_gradients = torch_case_table_test(TORCH_CASES)


def test_count_nonzero_and_median_indices_match_torch():
    torch = pytest.importorskip("torch")
    a = np.array([[0, 3, 0], [2, 0, 1]])
    for fn in (
        lambda L: L.count_nonzero(L.tensor(a)),
        lambda L: L.count_nonzero(L.tensor(a), dim=1),
        lambda L: L.median(L.tensor(a), 1).indices,
    ):
        np.testing.assert_array_equal(fn(pyframe).numpy(), fn(torch).numpy())


def test_unbiased_in_dims_place_as_torch():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).normal(size=(3, 4))
    for fn in ("var", "std", "var_mean", "std_mean"):
        for flag in (True, False):
            ours = getattr(pyframe, fn)(pyframe.tensor(a), flag)
            theirs = getattr(torch, fn)(torch.tensor(a), flag)
            for o, t in zip(ours if isinstance(ours, tuple) else (ours,), theirs if isinstance(theirs, tuple)
                            else (theirs,), strict=True):  # fmt: skip
                np.testing.assert_allclose(o.numpy(), t.numpy(), rtol=1e-12)
