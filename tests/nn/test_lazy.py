"""The lazy modules (LazyLinear, the lazy batch and instance norms; the lazy convolutions are in test_conv.py):
shapes taken from the first input, the class they become, state_dict before and after, loading a materialized
state into a fresh lazy module, and their values against torch."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
from pyframe.nn.modules.lazy import LazyModuleMixin
from pyframe.nn.parameter import is_lazy
from tests._oracle import rand

torch = pytest.importorskip("torch")

LAZY = [("LazyLinear", (5,), (2, 7), "Linear", "in_features", 7),
        ("LazyBatchNorm1d", (), (4, 3, 5), "BatchNorm1d", "num_features", 3),
        ("LazyBatchNorm2d", (), (4, 3, 2, 2), "BatchNorm2d", "num_features", 3),
        ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2), "BatchNorm3d", "num_features", 3),
        ("LazyInstanceNorm1d", (), (2, 3, 5), "InstanceNorm1d", "num_features", 3),
        ("LazyInstanceNorm2d", (), (2, 3, 4, 4), "InstanceNorm2d", "num_features", 3),
        ("LazyInstanceNorm3d", (), (2, 3, 2, 3, 2), "InstanceNorm3d", "num_features", 3)]  # fmt: skip


@pytest.mark.parametrize("name, args, shape, becomes, attr, size", LAZY)
def test_lazy_module_infers_its_size_and_becomes_its_class(name, args, shape, becomes, attr, size):
    m, t = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert isinstance(m, LazyModuleMixin) and m.has_uninitialized_params() and getattr(m, attr) == 0
    assert repr(m) == repr(t)
    state = m.state_dict()
    assert list(state) == list(t.state_dict()) and any(is_lazy(v) for v in state.values())
    assert [type(v).__name__ for v in state.values()] == [type(v).__name__ for v in t.state_dict().values()]
    x = rand(*shape).astype(np.float32)
    out = m(pf.tensor(x))
    tout = t(torch.tensor(x))
    assert type(m).__name__ == type(t).__name__ == becomes and getattr(m, attr) == getattr(t, attr) == size
    assert not m.has_uninitialized_params() if hasattr(m, "has_uninitialized_params") else True
    assert repr(m) == repr(t)
    for (k, v), (tk, tv) in zip(m.state_dict().items(), t.state_dict().items(), strict=True):
        assert k == tk and tuple(v.shape) == tuple(tv.shape) and type(v) is pf.Tensor, k
    if name != "LazyLinear":  # norms: their initial values and running statistics are torch's exactly
        np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-6, atol=1e-7)
        for v, tv in zip(m.state_dict().values(), t.state_dict().values(), strict=True):
            np.testing.assert_allclose(v.numpy(), tv.numpy(), rtol=1e-6, atol=1e-7)
    else:
        bound = 1 / np.sqrt(size)  # torch's default init, drawn from pyframe's generator
        assert np.abs(m.weight.detach().numpy()).max() <= bound and m.weight.std().item() > bound / 4


@pytest.mark.parametrize("name, args, shape, becomes, attr, size", LAZY)
def test_lazy_module_loads_a_materialized_state_and_stays_lazy_until_called(name, args, shape, becomes, attr,
                                                                            size):  # fmt: skip
    t = getattr(torch.nn, name)(*args)
    x = rand(*shape).astype(np.float32)
    t(torch.tensor(x))
    with torch.no_grad():
        for q in t.parameters():
            q.copy_(torch.randn(q.shape) * 0.5 + 0.1)
    t.eval()
    fresh, tfresh = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    fresh.load_state_dict({k: pf.tensor(v.numpy()) for k, v in t.state_dict().items()})
    tfresh.load_state_dict(t.state_dict())
    assert type(fresh).__name__ == type(tfresh).__name__ == name and not fresh.has_uninitialized_params()
    assert getattr(fresh, attr) == size  # torch leaves this 0 until the first call; the loaded shape tells
    fresh.eval()
    out = fresh(pf.tensor(x))  # (torch's fresh instance norm would refuse it: its num_features is still 0)
    np.testing.assert_allclose(out.detach().numpy(), t(torch.tensor(x)).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert type(fresh).__name__ == becomes


def test_lazy_modules_in_a_model_and_an_uninitialized_state():
    def build(n):
        return n.Sequential(n.LazyConv2d(4, 3), n.LazyBatchNorm2d(), n.ReLU(), n.Flatten(), n.LazyLinear(5))

    m = build(nn)
    other = build(nn)
    other.load_state_dict(m.state_dict())  # both uninitialized: nothing to copy, nothing missing
    assert all(is_lazy(p) for p in other.parameters())
    y = m(pf.ones(2, 3, 6, 6))
    assert y.shape == (2, 5) and [type(c).__name__ for c in m] == ["Conv2d", "BatchNorm2d", "ReLU", "Flatten",
                                                                    "Linear"]  # fmt: skip
    assert m[4].in_features == 4 * 4 * 4 and m[1].num_features == 4


def test_lazy_module_bad_input_and_dtype():
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.LazyBatchNorm2d()(pf.ones(2, 3))
    with pytest.raises(ValueError, match="expected 3D or 4D input"):
        nn.LazyInstanceNorm2d()(pf.ones(2, 3))
    with pytest.raises(ValueError, match="at least one dim"):
        nn.LazyLinear(3)(pf.tensor(1.0))
    m = nn.LazyLinear(3, dtype=pf.float64)
    m(pf.ones(2, 4, dtype=pf.float64))
    assert m.weight.dtype == pf.float64 and m.weight.shape == (3, 4) and m.bias.shape == (3,)
    unbatched = nn.LazyInstanceNorm1d()
    unbatched(pf.tensor(rand(3, 5).astype(np.float32)))  # (C, L): the channel dim is 0
    assert unbatched.num_features == 3 and unbatched.weight.shape == (3,)
    assert nn.LazyLinear(2, bias=False).bias is None
