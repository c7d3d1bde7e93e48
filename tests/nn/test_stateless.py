"""nn.utils.stateless.functional_call: torch's deprecated path to func.functional_call warns and calls it."""

from __future__ import annotations

import pytest

import pyframe
import pyframe.nn as nn


def test_stateless_functional_call_warns_and_uses_the_given_tensors():
    m = nn.Linear(3, 2)
    before = m.weight.detach().clone()
    with pytest.warns(FutureWarning, match="use `torch.func.functional_call` instead"):
        out = nn.utils.stateless.functional_call(m, {"weight": pyframe.ones(2, 3), "bias": pyframe.zeros(2)},
                                                 (pyframe.ones(1, 3),))  # fmt: skip
    assert out.tolist() == [[3.0, 3.0]] and (m.weight == before).all()
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError):
        nn.utils.stateless.functional_call(m, {"nope": pyframe.ones(1)}, (pyframe.ones(1, 3),), strict=True)
