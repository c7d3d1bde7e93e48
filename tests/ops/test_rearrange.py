"""Rearranging: flip, roll, repeat, tile, repeat_interleave, rot90 and diff against NumPy and torch, float64
gradients and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    fd_gradcheck,
)
from tests._tables import torch_case_table_test

RNG = np.random.default_rng(0)


def test_flip_roll_repeat_tile_match_numpy():
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    x = pyframe.tensor(a)
    np.testing.assert_array_equal(pyframe.flip(x, (0, 2)).numpy(), np.flip(a, (0, 2)))
    np.testing.assert_array_equal(x.flip(1).numpy(), np.flip(a, 1))
    np.testing.assert_array_equal(x.flip(0, 1).numpy(), np.flip(a, (0, 1)))
    np.testing.assert_array_equal(pyframe.fliplr(x).numpy(), np.fliplr(a))
    np.testing.assert_array_equal(pyframe.roll(x, 1).numpy(), np.roll(a, 1))
    np.testing.assert_array_equal(pyframe.roll(x, (1, -5), (0, 2)).numpy(), np.roll(a, (1, -5), (0, 2)))
    np.testing.assert_array_equal(x.repeat(2, 1, 3).numpy(), np.tile(a, (2, 1, 3)))
    np.testing.assert_array_equal(x.repeat(2, 1, 1, 1).numpy(), np.tile(a, (2, 1, 1, 1)))
    np.testing.assert_array_equal(pyframe.tile(x, (2,)).numpy(), np.tile(a, 2))
    np.testing.assert_array_equal(x.repeat_interleave(2, dim=1).numpy(), np.repeat(a, 2, axis=1))
    np.testing.assert_array_equal(pyframe.repeat_interleave(x, 3).numpy(), np.repeat(a, 3))
    counts = np.array([0, 2, 1])
    np.testing.assert_array_equal(x.repeat_interleave(pyframe.tensor(counts), dim=1).numpy(),
                                  np.repeat(a, counts, axis=1))  # fmt: skip
    assert pyframe.repeat_interleave(pyframe.tensor([2, 0, 1])).tolist() == [0, 0, 2]
    assert pyframe.flatten(x, 1).shape == (2, 12) and pyframe.unflatten(x, 2, (2, -1)).shape == (2, 3, 2, 2)
    assert x.unflatten(1, (3, 1)).shape == (2, 3, 1, 4)
    y = x.repeat(1, 1, 1)
    y.zero_()
    assert x.abs().sum().item() > 0  # repeat copies


def test_rearrange_gradients():
    a = RNG.standard_normal((2, 3))
    fd_gradcheck(lambda x: pyframe.flip(x, (0, 1)), a)
    fd_gradcheck(lambda x: pyframe.roll(x, 2, 1), a)
    fd_gradcheck(lambda x: x.repeat(2, 3), a)
    fd_gradcheck(lambda x: x.repeat_interleave(pyframe.tensor([2, 0, 1]), dim=1), a)
    fd_gradcheck(lambda x: x.repeat_interleave(2), a)


def test_rearrange_bad_input():
    x = pyframe.ones(2, 3)
    with pytest.raises(ValueError, match="can not be smaller"):
        x.repeat(2)
    with pytest.raises(ValueError, match="same length"):
        pyframe.roll(x, (1, 2), 0)
    with pytest.raises(ValueError, match="same dim twice"):
        pyframe.flip(x, (0, 0))
    with pytest.raises(ValueError, match="don't multiply"):
        pyframe.unflatten(x, 1, (2, 2))
    with pytest.raises(ValueError, match="repeats"):
        x.repeat_interleave(pyframe.tensor([1, 2]), dim=1)


# ---- against torch: name -> (function of the library and the inputs, input arrays) ----------------------

RNG_TORCH = np.random.default_rng(25)


def arr(*shape):
    return RNG_TORCH.uniform(-2.0, 2.0, shape)


TORCH_CASES = {
    "rot90": (lambda L, a: L.rot90(a, 1, [0, 1]), (arr(2, 3),)),
    "rot90_k3": (lambda L, a: a.rot90(-1, [1, 2]), (arr(2, 3, 4),)),
    "rot90_k2": (lambda L, a: L.rot90(a, 2), (arr(2, 3),)),
    "diff": (lambda L, a: L.diff(a, n=2, dim=0), (arr(5, 3),)),
    "diff_prepend": (lambda L, a, b: L.diff(a, prepend=b), (arr(2, 4), arr(2, 1))),
}  # fmt: skip


test_matches_torch_values_and_gradients = torch_case_table_test(TORCH_CASES)


def test_rot90_bad_input_and_diff_of_bools():
    with pytest.raises(RuntimeError, match="different"):
        pyframe.rot90(pyframe.zeros(2, 2), 1, [0, 0])
    torch = pytest.importorskip("torch")
    fn = lambda L: L.diff(L.tensor([True, False, False]))  # noqa: E731
    np.testing.assert_array_equal(fn(pyframe).numpy(), fn(torch).numpy())


def test_repeat_interleave_checks_output_size_for_every_form_of_repeats():
    x = pyframe.tensor([1, 2])
    for repeats in (2, pyframe.tensor([1, 2])):
        with pytest.raises(ValueError, match="output_size"):
            pyframe.repeat_interleave(x, repeats, output_size=5)
    assert pyframe.repeat_interleave(x, 2, output_size=4).tolist() == [1, 1, 2, 2]
