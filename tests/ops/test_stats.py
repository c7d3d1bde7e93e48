"""Arranging/selecting helpers (hstack, movedim, tensor_split, rot90, diff, meshgrid, scatter,
index_fill, ...) and composed reductions (median, nansum, count_nonzero, ...) against torch."""

import numpy as np
import pytest

import pyframe

RNG = np.random.default_rng(5)


def arr(*shape):
    return RNG.uniform(-2.0, 2.0, shape)


IDX = np.array([[1, 0, 2], [0, 2, 1]])
CASES = {
    "hstack": (lambda L, a, b: L.hstack([a, b]), (arr(2, 3), arr(2, 1))),
    "hstack_1d": (lambda L, a, b: L.hstack((a, b)), (arr(3), arr(2))),
    "vstack": (lambda L, a, b: L.vstack([a, b]), (arr(3), arr(2, 3))),
    "dstack": (lambda L, a, b: L.dstack([a, b]), (arr(2, 3), arr(2, 3))),
    "column_stack": (lambda L, a, b: L.column_stack([a, b]), (arr(3), arr(3, 2))),
    "movedim": (lambda L, a: L.movedim(a, (0, 1), (2, 0)), (arr(2, 3, 4),)),
    "moveaxis": (lambda L, a: a.moveaxis(-1, 0), (arr(2, 3, 4),)),
    "atleast_3d": (lambda L, a: L.atleast_3d(a), (arr(3),)),
    "broadcast_tensors": (
        lambda L, a, b: L.broadcast_tensors(a, b)[0] * 2 + L.broadcast_tensors(a, b)[1],
        (arr(3, 1), arr(4)),
    ),
    "tensor_split": (
        lambda L, a: L.cat([p * (i + 1) for i, p in enumerate(L.tensor_split(a, 3, dim=1))], 1),
        (arr(2, 7),),
    ),
    "tensor_split_idx": (lambda L, a: L.tensor_split(a, [1, 4], dim=0)[1], (arr(6, 2),)),
    "rot90": (lambda L, a: L.rot90(a, 1, [0, 1]), (arr(2, 3),)),
    "rot90_k3": (lambda L, a: a.rot90(-1, [1, 2]), (arr(2, 3, 4),)),
    "rot90_k2": (lambda L, a: L.rot90(a, 2), (arr(2, 3),)),
    "diff": (lambda L, a: L.diff(a, n=2, dim=0), (arr(5, 3),)),
    "diff_prepend": (lambda L, a, b: L.diff(a, prepend=b), (arr(2, 4), arr(2, 1))),
    "meshgrid_ij": (
        lambda L, a, b: L.meshgrid(a, b, indexing="ij")[0] * L.meshgrid(a, b, indexing="ij")[1],
        (arr(3), arr(2)),
    ),
    "meshgrid_xy": (
        lambda L, a, b: L.meshgrid(a, b, indexing="xy")[0] - L.meshgrid(a, b, indexing="xy")[1],
        (arr(3), arr(2)),
    ),
    "cartesian_prod": (lambda L, a, b: L.cartesian_prod(a, b), (arr(3), arr(2))),
    "take_along_dim": (lambda L, a: L.take_along_dim(a, L.tensor(IDX), dim=1), (arr(2, 3),)),
    "masked_select": (lambda L, a: L.masked_select(a, a > 0), (arr(3, 4),)),
    "scatter_src": (lambda L, a, s: L.scatter(a, 1, L.tensor(IDX), s), (arr(2, 3), arr(2, 3))),
    "scatter_value": (lambda L, a: a.scatter(0, L.tensor([[1, 0, 1]]), 2.5), (arr(2, 3),)),
    "scatter_add_reduce": (
        lambda L, a, s: L.scatter(a.detach(), 1, L.tensor(IDX), s.detach(), reduce="add"),
        (arr(2, 3), arr(2, 3)),
    ),
    "index_fill": (lambda L, a: a.index_fill(1, L.tensor([0, 2]), -1.0), (arr(2, 3),)),
    "index_copy": (lambda L, a, s: a.index_copy(0, L.tensor([2, 0]), s), (arr(3, 2), arr(2, 2))),
    "block_diag": (lambda L, a, b: L.block_diag(a, b), (arr(2, 2), arr(1, 3))),
    "median": (lambda L, a: L.median(a), (arr(4, 3),)),
    "median_dim": (lambda L, a: a.median(dim=1).values, (arr(4, 5),)),
    "nanmedian_dim": (lambda L, a: L.nanmedian(L.where(a > 1.5, float("nan"), a), 0).values, (arr(6, 3),)),
    "nansum": (lambda L, a: L.nansum(L.where(a > 1, float("nan"), a), 1), (arr(3, 4),)),
    "nanmean": (lambda L, a: L.nanmean(L.where(a > 1, float("nan"), a)), (arr(3, 4),)),
    "var_mean": (lambda L, a: L.var_mean(a, 1)[0] + L.var_mean(a, 1)[1], (arr(3, 4),)),
    "std_mean": (lambda L, a: L.std_mean(a, correction=0)[0] * L.std_mean(a)[1], (arr(3, 4),)),
    "aminmax": (lambda L, a: L.aminmax(a, dim=0).max - L.aminmax(a, dim=0).min, (arr(3, 4),)),
}


def _run(lib, name):
    fn, arrays = CASES[name]
    inputs = [lib.tensor(a, requires_grad=True) for a in arrays]
    out = fn(lib, *inputs)
    if out.requires_grad:
        w = lib.tensor(np.linspace(-1, 1, out.numel()).reshape(tuple(out.shape)), dtype=out.dtype)
        (out * w).sum().backward()
    grads = [x.grad.numpy() if x.grad is not None else None for x in inputs]
    return out.detach().numpy(), grads


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch(name):
    torch = pytest.importorskip("torch")
    with np.errstate(all="ignore"):
        out, grads = _run(pyframe, name)
        tout, tgrads = _run(torch, name)
    np.testing.assert_allclose(out, tout, rtol=1e-6, atol=1e-7, equal_nan=True)
    for g, tg in zip(grads, tgrads, strict=True):
        if tg is None:
            assert g is None or not g.any()
        else:
            np.testing.assert_allclose(g, tg, rtol=1e-6, atol=1e-7)


def test_integer_helpers_match_torch():
    torch = pytest.importorskip("torch")
    a = np.array([[0, 3, 0], [2, 0, 1]])
    for fn in (
        lambda L: L.count_nonzero(L.tensor(a)),
        lambda L: L.count_nonzero(L.tensor(a), dim=1),
        lambda L: L.tril_indices(4, 3, -1),
        lambda L: L.triu_indices(3, 4, 1),
        lambda L: L.median(L.tensor(a), 1).indices,
        lambda L: L.diff(L.tensor([True, False, False])),
    ):
        np.testing.assert_array_equal(fn(pyframe).numpy(), fn(torch).numpy())
    assert pyframe.broadcast_shapes((3, 1), (4,)) == torch.broadcast_shapes((3, 1), (4,))
    assert pyframe.is_tensor(pyframe.zeros(1)) and not pyframe.is_tensor([1])
    assert pyframe.is_floating_point(pyframe.zeros(1)) and pyframe.numel(pyframe.zeros(2, 3)) == 6


def test_bad_input():
    with pytest.raises(RuntimeError, match="source .* and destination"):
        pyframe.movedim(pyframe.zeros(2, 3), (0, 1), 0)
    with pytest.raises(RuntimeError, match="larger than 0"):
        pyframe.tensor_split(pyframe.zeros(4), 0)
    with pytest.raises(RuntimeError, match="different"):
        pyframe.rot90(pyframe.zeros(2, 2), 1, [0, 0])
    with pytest.raises(ValueError, match="indexing"):
        pyframe.meshgrid(pyframe.zeros(2), indexing="yx")
    with pytest.raises(TypeError, match="bool"):
        pyframe.masked_select(pyframe.zeros(2), pyframe.tensor([1, 0]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        pyframe.take_along_dim(pyframe.zeros(2, 2), pyframe.tensor([0]), dim=0)
    with pytest.raises(TypeError, match="src"):
        pyframe.zeros(2).scatter_(0, pyframe.tensor([0]))
    with pytest.raises(RuntimeError, match="as many dims"):
        pyframe.zeros(2, 2).scatter(1, pyframe.tensor([0]), 1.0)
