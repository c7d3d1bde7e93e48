"""DistributedDataParallel in one process: bad input, gradients in several buckets equal to the plain module,
no_sync, unused parameters, the post-accumulate-grad hook (the multi-process runs are in test_mpi.py)."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as torch
import pyframe.distributed as dist
from pyframe import nn
from pyframe.nn.parallel import DistributedDataParallel as DDP


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 3))


def test_ddp_bad_input():
    dist.init_process_group("single")
    for cap in (0, -1, 0.0, True, "25"):
        with pytest.raises(ValueError, match="bucket_cap_mb must be a positive number"):
            DDP(mlp(), bucket_cap_mb=cap)
    frozen = mlp().requires_grad_(False)
    with pytest.raises(RuntimeError, match="doesn't have any parameter that requires a gradient"):
        DDP(frozen)
    with pytest.raises(RuntimeError, match="doesn't have any parameter"):
        DDP(nn.ReLU())
    with pytest.raises(TypeError, match="wraps a pyframe.nn.Module"):
        DDP(lambda x: x)
    with pytest.raises(ValueError, match="CPU"):
        DDP(mlp(), device_ids=[0])


def test_ddp_gradients_in_several_buckets_equal_the_plain_module():
    dist.init_process_group("single")
    model, plain = mlp(), mlp()
    ddp = DDP(model, bucket_cap_mb=0.01)
    assert len(ddp.bucket_sizes) >= 3 and sum(ddp.bucket_sizes) == 4 * sum(p.numel() for p in model.parameters())
    assert list(ddp.state_dict())[0] == "module.0.weight"
    x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
    loss = nn.functional.cross_entropy
    for _ in range(2):  # twice: the buckets reset after each synchronised backward
        model.zero_grad()
        plain.zero_grad()
        loss(ddp(x), y).backward()
        loss(plain(x), y).backward()
        for p, q in zip(model.parameters(), plain.parameters(), strict=True):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6)


def test_ddp_no_sync_accumulates_then_syncs_the_sum():
    dist.init_process_group("single")
    model, plain = mlp(), mlp()
    ddp = DDP(model, bucket_cap_mb=0.01)
    xs = [torch.randn(4, 4) for _ in range(3)]
    with ddp.no_sync():
        assert not ddp.require_backward_grad_sync
        ddp(xs[0]).sum().backward()
        ddp(xs[1]).sum().backward()
    assert ddp.require_backward_grad_sync
    ddp(xs[2]).sum().backward()
    for x in xs:
        plain(x).sum().backward()
    for p, q in zip(model.parameters(), plain.parameters(), strict=True):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_ddp_unused_parameter_is_a_clear_error_at_the_next_forward():
    dist.init_process_group("single")

    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.used, self.unused = nn.Linear(3, 3), nn.Linear(3, 3)

        def forward(self, x):
            return self.used(x)

    ddp = DDP(Two())
    ddp(torch.ones(2, 3)).sum().backward()
    with pytest.raises(RuntimeError, match=r"got no gradient in the last backward: \['unused.weight', 'unused.bias'\]"):
        ddp(torch.ones(2, 3))


def test_post_accumulate_grad_hook():
    w = torch.ones(3, requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.tolist()))
    (w * 2).sum().backward()
    (w * 3).sum().backward()
    assert seen == [[2.0] * 3, [5.0] * 3]  # after accumulation: the hook sees the running sum
    handle.remove()
    w.sum().backward()
    assert len(seen) == 2
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        torch.ones(2).register_post_accumulate_grad_hook(print)
