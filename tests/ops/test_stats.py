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


# quantiles, covariance, and the other compositions of this round: values and gradients against torch
MORE_TORCH_CASES = {
    "quantile": (lambda L, a: L.quantile(a, 0.3, dim=1, keepdim=True), (arr(4, 5),)),
    "quantile_q_tensor": (lambda L, a: L.quantile(a, L.tensor([0.0, 0.25, 1.0], dtype=a.dtype), 0), (arr(5, 3),)),
    "quantile_all": (lambda L, a: a.quantile(0.5), (arr(3, 4),)),
    "quantile_lower": (lambda L, a: L.quantile(a, 0.4, 1, interpolation="lower"), (arr(2, 6),)),
    "quantile_higher": (lambda L, a: L.quantile(a, 0.4, 1, interpolation="higher"), (arr(2, 6),)),
    "quantile_nearest": (lambda L, a: L.quantile(a, 0.5, 1, interpolation="nearest"), (arr(2, 5),)),
    "quantile_midpoint": (lambda L, a: L.quantile(a, 0.5, 1, interpolation="midpoint"), (arr(2, 6),)),
    "nanquantile": (lambda L, a: L.nanquantile(L.where(a > 1.2, float("nan"), a), 0.7, 0), (arr(6, 3),)),
    "cov": (lambda L, a: L.cov(a), (arr(3, 6),)),
    "cov_weights": (lambda L, a, w: L.cov(a, correction=0, fweights=L.tensor([1, 2, 1, 3]), aweights=w.abs()),
                    (arr(2, 4), arr(4))),
    "corrcoef": (lambda L, a: L.corrcoef(a), (arr(3, 7),)),
    "renorm": (lambda L, a: L.renorm(a, 2, 0, 1.5), (arr(4, 3),)),
    "renorm_p1": (lambda L, a: a.renorm(1, 1, 2.0), (arr(4, 3),)),
    "gradient": (lambda L, a: L.gradient(a)[1] + L.gradient(a, spacing=2.0, edge_order=2)[0], (arr(4, 5),)),
    "gradient_coords": (lambda L, a: L.gradient(a, spacing=(L.tensor([0.0, 0.5, 2.0, 2.5], dtype=a.dtype),),
                                                dim=0, edge_order=2)[0], (arr(4, 3),)),
    "sum_to_size": (lambda L, a: a.sum_to_size(3, 1), (arr(2, 3, 4),)),
    "combinations": (lambda L, a: L.combinations(a, 2) * 1.0 + L.combinations(a, 3, with_replacement=True).sum(),
                     (arr(4),)),
    "diff": (lambda L, a: L.diff(a, 2, 0), (arr(5, 3),)),
}  # fmt: skip

test_more_match_torch_values_and_gradients = torch_case_table_test(MORE_TORCH_CASES)


def test_quantile_cov_and_friends_refuse_what_torch_refuses():
    x = pyframe.tensor(arr(3, 4))
    for bad in (lambda: pyframe.quantile(x, 1.5), lambda: pyframe.quantile(pyframe.tensor([1, 2]), 0.5),
                lambda: pyframe.quantile(x, 0.5, interpolation="cubic"), lambda: pyframe.quantile(x[:0], 0.5),
                lambda: pyframe.cov(pyframe.ones(2, 2, 2)), lambda: pyframe.cov(x, fweights=pyframe.ones(4)),
                lambda: pyframe.renorm(pyframe.ones(3), 2, 0, 1.0), lambda: x.sum_to_size(2, 4),
                lambda: pyframe.gradient(x, edge_order=3), lambda: pyframe.combinations(x),
                lambda: pyframe.diff(x, -1)):  # fmt: skip
        with pytest.raises(RuntimeError):
            bad()
    assert pyframe.combinations(pyframe.tensor([1, 2]), 3).shape == (0, 3)
    nz = pyframe.nonzero_static(pyframe.tensor([[0, 1], [2, 0]]), size=3, fill_value=-5)
    assert nz.numpy().tolist() == [[0, 1], [1, 0], [-5, -5]]
    assert pyframe.argwhere(pyframe.tensor([0, 3, 0, 4])).numpy().tolist() == [[1], [3]]
    got = pyframe.unravel_index(pyframe.tensor([-1, 5, 0]), (2, 3))
    assert [g.numpy().tolist() for g in got] == [[1, 1, 0], [2, 2, 0]]
    with pytest.raises(ValueError, match="range"):
        pyframe.unravel_index(pyframe.tensor([6]), (2, 3))
