"""Padding (F.pad's modes and the padding modules) against torch: values, gradients and bad input."""

from __future__ import annotations

import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from tests._oracle import compare, f64
from tests._tables import module_float64_table_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional


@pytest.mark.parametrize(
    "padding, mode, value",
    [((1, 2), "constant", 0.5), ((1, 0, 2, 1), "constant", None), ((-1, 2, 0, -1), "constant", 0.0),
     ((2, 1, 1, 2), "reflect", None), ((2, 3, 1, 0), "replicate", None), ((1, 2, 2, 1), "circular", None),
     ((-1, 2, 3, -2), "reflect", None), ((-2, 5, 6, -3), "replicate", None), ((-1, 2, 1, -2), "circular", None),
     ((3, -2, -1, 3), "circular", None)],
)  # fmt: skip
def test_pad_matches_torch(rng, padding, mode, value):
    kw = {"value": value} if value is not None else {}
    compare(lambda x: F.pad(x, padding, mode, **kw), lambda x: TF.pad(x, padding, mode, **kw), f64(rng, 2, 3, 4, 5))


def test_pad_bad_input():
    with pytest.raises(ValueError, match="divisible by 2"):
        F.pad(pf.randn(2, 3), (1,))
    with pytest.raises(ValueError, match="padding length 6 and input of dimension 2"):
        F.pad(pf.randn(2, 3), (1, 1, 1, 1, 1, 1))
    with pytest.raises(ValueError, match="negative output size"):
        F.pad(pf.randn(2, 3), (-2, -2))
    with pytest.raises(ValueError, match="should be less than the corresponding input dimension"):
        F.pad(pf.randn(2, 3), (3, 0), mode="reflect")
    with pytest.raises(ValueError, match="wrapping around more than once"):
        F.pad(pf.randn(2, 3), (4, 0), mode="circular")
    with pytest.raises(ValueError, match="output size would be 0"):
        F.pad(pf.randn(2, 3), (-2, -1), mode="replicate")


CASES = {
    "zeropad2d": (lambda n: n.ZeroPad2d((1, 2, 0, 3)), [(2, 3, 4, 5)]),
    "constpad1d": (lambda n: n.ConstantPad1d(2, 3.5), [(2, 3, 4)]),
    "constpad3d": (lambda n: n.ConstantPad3d((1, 0, 0, 1, 2, 0), -1.0), [(1, 2, 3, 3, 3)]),
    "reflect2d": (lambda n: n.ReflectionPad2d(2), [(2, 3, 4, 5)]),
    "reflect1d": (lambda n: n.ReflectionPad1d((3, 1)), [(2, 5)]),
    "replicate2d": (lambda n: n.ReplicationPad2d((1, 0, 2, 1)), [(1, 3, 4, 5)]),
    "circular1d": (lambda n: n.CircularPad1d(2), [(2, 3, 4)]),
}  # fmt: skip


test_layer_float64_matches_torch = module_float64_table_test(CASES)


def test_padding_module_bad_input():
    with pytest.raises(ValueError, match="tuple of 4 ints"):
        nn.ZeroPad2d((1, 2))
