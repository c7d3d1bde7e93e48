"""The legacy nn.utils.weight_norm hook against torch: values, gradients, removal."""

import numpy as np
import pytest

import pyframe


def test_legacy_weight_norm_hook_matches_torch_and_removes():
    torch = pytest.importorskip("torch")
    w = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    x = np.random.default_rng(1).normal(size=(2, 3)).astype(np.float32)
    ours, theirs = pyframe.nn.Linear(3, 4), torch.nn.Linear(3, 4)
    with pyframe.no_grad():
        ours.weight.copy_(pyframe.tensor(w))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w))
        theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
    pyframe.nn.utils.weight_norm(ours, dim=0)
    torch.nn.utils.weight_norm(theirs, dim=0)
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    np.testing.assert_allclose(ours.weight_g.detach().numpy(), theirs.weight_g.detach().numpy(), rtol=1e-6)
    with pyframe.no_grad():
        ours.weight_g.mul_(2.0)
    with torch.no_grad():
        theirs.weight_g.mul_(2.0)
    ours(pyframe.tensor(x)).sum().backward()
    theirs(torch.tensor(x)).sum().backward()
    np.testing.assert_allclose(ours.weight_v.grad.numpy(), theirs.weight_v.grad.numpy(), rtol=1e-5, atol=1e-6)
    with pytest.raises(RuntimeError, match="two weight_norm"):
        pyframe.nn.utils.weight_norm(ours)
    pyframe.nn.utils.remove_weight_norm(ours)
    assert sorted(n for n, _ in ours.named_parameters()) == ["bias", "weight"]
    np.testing.assert_allclose(ours.weight.detach().numpy(), 2 * w, rtol=1e-5)
    with pytest.raises(ValueError, match="not found"):
        pyframe.nn.utils.remove_weight_norm(ours)
