"""Containers: Sequential models of several families against torch (values, gradients, buffers)."""

from __future__ import annotations

import pytest

from tests._oracle import randn
from tests._tables import module_table_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional


LAYERS = {
    "mlp": (lambda n: n.Sequential(n.Linear(6, 8), n.ReLU(), n.Linear(8, 3), n.Tanh()), [randn(5, 6)]),
    "cnn": (lambda n: n.Sequential(n.Conv2d(1, 4, 3, padding=1), n.BatchNorm2d(4), n.ReLU(), n.MaxPool2d(2),
                                   n.Flatten(), n.Linear(4 * 3 * 3, 2)), [randn(2, 1, 6, 6)]),
}  # fmt: skip


test_layer_matches_torch = module_table_test(LAYERS)
