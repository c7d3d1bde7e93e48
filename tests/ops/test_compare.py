"""isclose, allclose, equal and dist: tolerances, NaN, shapes, gradients and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    fd_gradcheck,
    t64,
)

RNG = np.random.default_rng(0)


def test_isclose_allclose_equal_dist():
    a = pyframe.tensor([1.0, 2.0, float("nan"), float("inf")])
    b = pyframe.tensor([1.0 + 1e-7, 2.1, float("nan"), float("inf")])
    assert pyframe.isclose(a, b).tolist() == [True, False, False, True]
    assert pyframe.isclose(a, b, equal_nan=True).tolist() == [True, False, True, True]
    assert not pyframe.allclose(a, b) and pyframe.allclose(a[:1], b[:1]) and a[:2].allclose(b[:2], atol=0.2)
    assert pyframe.equal(a[:2], a[:2].clone()) and not pyframe.equal(a, a) and not pyframe.equal(a[:1], a[:2])
    x, y = t64([[0.0, 3.0]]), t64([[4.0, 0.0]])
    assert pyframe.dist(x, y).item() == 5.0 and pyframe.dist(x, y, 1).item() == 7.0
    fd_gradcheck(lambda u, v: pyframe.dist(u, v), np.array([1.0, 2.0]), np.array([0.5, -1.0]))
    with pytest.raises(ValueError, match="non-negative"):
        pyframe.isclose(a, b, rtol=-1)
