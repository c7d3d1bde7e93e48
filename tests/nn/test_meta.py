"""The meta device: modules built with no memory (``with pyframe.device("meta")``), given memory by
``to_empty`` or by ``load_state_dict(assign=True)``; ``with pyframe.device("cpu")`` as a context manager."""

import numpy as np
import pytest

import pyframe
from pyframe import nn


def _net():
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.BatchNorm1d(8), nn.Linear(8, 2))


def test_modules_built_on_meta_have_no_memory():
    with pyframe.device("meta"):
        m = _net()
        assert pyframe.get_default_device() == pyframe.device("meta")
    assert pyframe.get_default_device() == "cpu"
    w = m[0].weight
    assert w.is_meta and w.device.type == "meta" and isinstance(w, nn.Parameter) and w.requires_grad
    assert w.shape == (8, 4) and w.data_ptr() == 0 and m[2].running_mean.is_meta
    assert "device='meta'" in repr(m[2].running_mean)
    with pytest.raises(NotImplementedError, match="meta"):
        _ = w + 1
    with pytest.raises(NotImplementedError, match="no data"):
        w.to("cpu")


def test_load_state_dict_assign_gives_memory():
    with pyframe.device("meta"):
        m = _net()
    src = _net().eval()
    m.load_state_dict(src.state_dict(), assign=True)
    assert not m[0].weight.is_meta and type(m[0].weight) is nn.Parameter and m[0].weight.requires_grad
    x = pyframe.randn(3, 4)
    assert np.allclose(m.eval()(x).detach().numpy(), src(x).detach().numpy())


def test_to_empty_keeps_parameter_identity():
    with pyframe.device("meta"):
        lin = nn.Linear(3, 2)
    w = lin.weight
    opt = pyframe.optim.SGD(lin.parameters(), lr=0.1)
    assert lin.to_empty(device="cpu") is lin
    assert lin.weight is w and not w.is_meta and type(w) is nn.Parameter and w.device == "cpu"
    with pyframe.no_grad():
        w.fill_(1.0)
        lin.bias.zero_()
    lin(pyframe.ones(1, 3)).sum().backward()
    opt.step()
    assert np.allclose(w.detach().numpy(), 0.9)


def test_meta_factories_and_views():
    z = pyframe.zeros(2, 3, device="meta")
    assert z.is_meta and z.t().shape == (3, 2) and z.t().is_meta and z[0].is_meta
    assert pyframe.zeros_like(z).is_meta and z.new_ones(4).is_meta and pyframe.randn(2, device="meta").is_meta
    assert pyframe.ones(2).to("meta").is_meta and not pyframe.zeros_like(pyframe.ones(1)).is_meta
    with pyframe.device("meta"):
        assert pyframe.empty(2).is_meta and not pyframe.zeros_like(pyframe.ones(1, device="cpu")).is_meta
        with pyframe.device("cpu"):
            assert not pyframe.empty(2).is_meta
        assert pyframe.empty(2).is_meta
    with pytest.raises(NotImplementedError, match="meta"):
        pyframe.arange(3, device="meta")


def test_against_torch():
    torch = pytest.importorskip("torch")
    shapes = {}
    for lib in (torch, pyframe):
        with lib.device("meta"):
            m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.LayerNorm(8), lib.nn.Conv2d(1, 2, 3))
        shapes[lib.__name__] = [(n, tuple(p.shape), p.is_meta, p.device.type) for n, p in m.named_parameters()]
    assert shapes["torch"] == shapes["pyframe"]


def test_skip_init_builds_without_initializing():
    m = pyframe.nn.utils.skip_init(pyframe.nn.Linear, 5, 2)
    assert type(m) is pyframe.nn.Linear and m.weight.shape == (2, 5) and not m.weight.is_meta
    assert type(m.weight) is pyframe.nn.Parameter and m.weight.requires_grad
    m2 = pyframe.nn.utils.skip_init(pyframe.nn.Conv2d, in_channels=3, out_channels=4, kernel_size=3, device="cpu")
    assert m2.weight.shape == (4, 3, 3, 3) and not m2.weight.is_meta
    with pytest.raises(RuntimeError, match="Expected a Module"):
        pyframe.nn.utils.skip_init(int)
    with pytest.raises(RuntimeError, match="support a 'device' arg"):
        pyframe.nn.utils.skip_init(pyframe.nn.ReLU)
