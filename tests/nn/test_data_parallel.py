"""nn.DataParallel as torch's behaves on a machine without accelerators: a wrapper that calls its module."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from pyframe import nn


def test_wraps_and_calls_its_module_with_torchs_state_dict_keys():
    torch = pytest.importorskip("torch")
    inner = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model = nn.DataParallel(inner, device_ids=[0, 1])
    theirs = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)))
    assert list(model.state_dict()) == list(theirs.state_dict()) and model.device_ids == theirs.device_ids == []
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
    x = np.random.RandomState(0).randn(5, 3).astype(np.float32)
    out, ref = model(pyframe.tensor(x)), theirs(torch.tensor(x))
    assert np.allclose(out.detach().numpy(), ref.detach().numpy(), atol=1e-6)
    out.sum().backward()
    ref.sum().backward()
    assert np.allclose(inner[0].weight.grad.numpy(), theirs.module[0].weight.grad.numpy(), atol=1e-6)
    assert "DataParallel(\n  (module): Sequential(" in repr(model) and model.module is inner


def test_a_dataparallel_checkpoint_loads_into_the_bare_module():
    model = nn.DataParallel(nn.Linear(2, 2))
    state = model.state_dict()
    nn.modules.utils.consume_prefix_in_state_dict_if_present(state, "module.")
    bare = nn.Linear(2, 2)
    bare.load_state_dict(state)
    assert np.array_equal(bare.weight.detach().numpy(), model.module.weight.detach().numpy())


def test_bad_input_and_the_function_form():
    with pytest.raises(TypeError, match="wraps an nn.Module"):
        nn.DataParallel(lambda x: x)
    with pytest.raises(RuntimeError, match="device type could not be determined"):  # as torch's without CUDA
        nn.parallel.data_parallel(nn.Linear(2, 2), pyframe.ones(1, 2))
