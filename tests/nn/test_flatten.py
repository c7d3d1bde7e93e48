"""Flatten and Unflatten against torch: values, gradients, reprs."""

from __future__ import annotations

import pytest

from tests._oracle import randn
from tests._tables import module_table_test, reprs_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional


LAYERS = {
    "flatten": (lambda n: n.Flatten(), [randn(2, 3, 4)]),
    "flatten_range": (lambda n: n.Flatten(0, 1), [randn(2, 3, 4)]),
    "unflatten": (lambda n: n.Unflatten(1, (2, 3)), [randn(4, 6, 2)]),
}  # fmt: skip


test_layer_matches_torch = module_table_test(LAYERS)


test_reprs_match_torch = reprs_test(
    lambda n: n.Unflatten(-1, (2, 2)),
)
