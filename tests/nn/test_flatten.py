"""Flatten and Unflatten against torch: values, gradients, reprs."""

from __future__ import annotations

import pytest

from tests._oracle import (
    assert_reprs_match,
    compare_module,
    randn,
)

torch = pytest.importorskip("torch")
TF = torch.nn.functional


LAYERS = {
    "flatten": (lambda n: n.Flatten(), [randn(2, 3, 4)]),
    "flatten_range": (lambda n: n.Flatten(0, 1), [randn(2, 3, 4)]),
    "unflatten": (lambda n: n.Unflatten(1, (2, 3)), [randn(4, 6, 2)]),
}  # fmt: skip


@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_matches_torch(name):
    build, inputs, *kwargs = LAYERS[name]
    compare_module(build, *inputs, **(kwargs[0] if kwargs else {}))


def test_reprs_match_torch():
    assert_reprs_match(
        lambda n: n.Unflatten(-1, (2, 2)),
    )
