"""Shared by the data tests: a small numbered TensorDataset."""

import pyframe as pf
from pyframe.utils.data import TensorDataset


def numbered(n: int = 20) -> TensorDataset:
    """``n`` rows ``(x, i)``: x is row i of arange(3n) as (n, 3) float32, i its index."""
    x = pf.arange(n * 3, dtype=pf.float32).reshape(n, 3)
    return TensorDataset(x, pf.arange(n))
