"""Joining and splitting: cat (its one-C-call path for contiguous inputs and the general strided one), stack,
split/chunk/unbind, hstack/vstack/dstack/column_stack, tensor_split, meshgrid, cartesian_prod and block_diag
against NumPy and torch: values, gradients, promotion and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    npy,
    pf,
    random_array,
)
from tests._tables import torch_case_table_test

torch = pytest.importorskip("torch")


def _pair(shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return pyframe.tensor(a), torch.tensor(a)


@pytest.mark.parametrize(
    ("shapes", "dim"),
    [
        ([(40, 50), (40, 50)], 0),
        ([(4, 5), (4, 3), (4, 0), (4, 7)], 1),
        ([(2, 3, 4), (2, 1, 4)], 1),
        ([(2, 3, 4), (2, 3, 1)], -1),
        ([(0,), (3,)], 0),
        ([(2, 0, 3), (2, 0, 3)], 2),
        ([(2, 5), (3, 5)], 0),
        ([(3,), (4,)], 0),
        ([(1, 2, 3), (0, 2, 3)], 0),
    ],
)
def test_cat_of_contiguous_inputs_matches_torch(shapes, dim):
    pf_parts, t_parts = zip(*(_pair(s, i) for i, s in enumerate(shapes)), strict=True)
    got = pyframe.cat(list(pf_parts), dim)
    assert tuple(got.shape) == tuple(torch.cat(t_parts, dim).shape)
    np.testing.assert_array_equal(got.numpy(), torch.cat(t_parts, dim).numpy())
    # a transposed input takes the general path: same result
    if len(shapes[0]) == 2 and shapes[0][0] == shapes[0][1]:
        return
    strided = [p.transpose(0, -1).contiguous().transpose(0, -1) for p in pf_parts]
    np.testing.assert_array_equal(pyframe.cat(strided, dim).numpy(), got.numpy())


def test_cat_lean_path_keeps_checks_and_gradients():
    a, b = pyframe.randn(2, 3), pyframe.randn(3, 3)
    with pytest.raises(RuntimeError, match="sizes of tensors must match"):
        pyframe.cat([a, b], 1)
    with pytest.raises(TypeError, match="expected Tensors"):
        pyframe.cat((a, 1.0))
    w = pyframe.randn(2, 3, requires_grad=True)
    out = pyframe.cat([a, w], 0)
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.ones((2, 3), np.float32))
    mixed = pyframe.cat([a, a.double()], 0)
    assert mixed.dtype == pyframe.float64
    with pyframe.no_grad():  # two inputs joined inline: no graph under no_grad, one with grad
        assert not pyframe.cat((a, w), 0).requires_grad
    assert pyframe.cat((a, w), 0).grad_fn is not None
    with pytest.raises(RuntimeError, match="sizes of tensors must match"):
        pyframe.cat((a, pyframe.randn(2, 4)), 0)


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_cat_and_stack(dim, rng):
    arrays = [random_array(rng, s, "float32") for s in ((2, 3, 4), (2, 3, 4), (2, 3, 4))]
    ts = [pf(a) for a in arrays]
    np.testing.assert_array_equal(npy(pyframe.cat(ts, dim)), np.concatenate(arrays, dim))
    np.testing.assert_array_equal(npy(pyframe.stack(ts, dim)), np.stack(arrays, dim))
    np.testing.assert_array_equal(npy(pyframe.stack(ts, dim=-1)), np.stack(arrays, -1))
    # views as inputs, sizes differing along dim
    parts = [ts[0].T, ts[1].T[..., :1], ts[2].T[..., 1::2]]
    np.testing.assert_array_equal(
        npy(pyframe.cat(parts, -1)), np.concatenate([arrays[0].T, arrays[1].T[..., :1], arrays[2].T[..., 1::2]], -1)
    )


def test_cat_promotes_and_skips_legacy_empty():
    out = pyframe.cat([pyframe.tensor([1, 2], dtype=pyframe.int32), pyframe.tensor([0.5])])
    assert out.dtype == pyframe.float32 and out.tolist() == [1.0, 2.0, 0.5]
    out = pyframe.cat([pyframe.zeros(0), pyframe.ones(2, 2)])
    assert out.shape == (2, 2)
    assert pyframe.cat([pyframe.ones(0, 3), pyframe.ones(2, 3)]).shape == (2, 3)
    assert pyframe.concat((pyframe.ones(1), pyframe.zeros(1))).tolist() == [1.0, 0.0]


def test_split_chunk_unbind():
    t = pyframe.arange(10).reshape(5, 2)
    parts = t.split(2)
    assert [p.shape[0] for p in parts] == [2, 2, 1]
    assert [p.tolist() for p in pyframe.split(t, [1, 4])] == [[[0, 1]], [[2, 3], [4, 5], [6, 7], [8, 9]]]
    assert [p.shape for p in t.split(1, dim=1)] == [(5, 1), (5, 1)]
    assert [p.shape[0] for p in t.chunk(2)] == [3, 2]
    assert [p.shape[0] for p in t.chunk(4)] == [2, 2, 1]  # torch: chunks of ceil(5 / 4), so only 3
    assert [p.shape[0] for p in pyframe.arange(6).chunk(4)] == [2, 2, 2]
    assert [p.shape[0] for p in pyframe.arange(3).chunk(5)] == [1, 1, 1]
    rows = t.unbind()
    assert len(rows) == 5 and rows[3].tolist() == [6, 7]
    cols = pyframe.unbind(t, 1)
    assert cols[1].tolist() == [1, 3, 5, 7, 9]
    for p in parts + rows:  # all views
        assert p._storage is t._storage
    assert pyframe.zeros(0, 2).split(2)[0].shape == (0, 2)


# ---- against torch: name -> (function of the library and the inputs, input arrays) ----------------------

RNG = np.random.default_rng(5)


def arr(*shape):
    return RNG.uniform(-2.0, 2.0, shape)


TORCH_CASES = {
    "hstack": (lambda L, a, b: L.hstack([a, b]), (arr(2, 3), arr(2, 1))),
    "hstack_1d": (lambda L, a, b: L.hstack((a, b)), (arr(3), arr(2))),
    "vstack": (lambda L, a, b: L.vstack([a, b]), (arr(3), arr(2, 3))),
    "dstack": (lambda L, a, b: L.dstack([a, b]), (arr(2, 3), arr(2, 3))),
    "column_stack": (lambda L, a, b: L.column_stack([a, b]), (arr(3), arr(3, 2))),
    "tensor_split": (
        lambda L, a: L.cat([p * (i + 1) for i, p in enumerate(L.tensor_split(a, 3, dim=1))], 1),
        (arr(2, 7),),
    ),
    "tensor_split_idx": (lambda L, a: L.tensor_split(a, [1, 4], dim=0)[1], (arr(6, 2),)),
    "meshgrid_ij": (
        lambda L, a, b: L.meshgrid(a, b, indexing="ij")[0] * L.meshgrid(a, b, indexing="ij")[1],
        (arr(3), arr(2)),
    ),
    "meshgrid_xy": (
        lambda L, a, b: L.meshgrid(a, b, indexing="xy")[0] - L.meshgrid(a, b, indexing="xy")[1],
        (arr(3), arr(2)),
    ),
    "cartesian_prod": (lambda L, a, b: L.cartesian_prod(a, b), (arr(3), arr(2))),
    "block_diag": (lambda L, a, b: L.block_diag(a, b), (arr(2, 2), arr(1, 3))),
}  # fmt: skip


test_matches_torch_values_and_gradients = torch_case_table_test(TORCH_CASES)


def test_tensor_split_and_meshgrid_bad_input():
    with pytest.raises(RuntimeError, match="larger than 0"):
        pyframe.tensor_split(pyframe.zeros(4), 0)
    with pytest.raises(ValueError, match="indexing"):
        pyframe.meshgrid(pyframe.zeros(2), indexing="yx")


def test_split_refuses_non_int_sizes():
    with pytest.raises(TypeError, match="must be an int or a list of ints, got nan"):
        pyframe.zeros(3).split(math.nan)
