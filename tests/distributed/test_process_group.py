"""pyframe.distributed and DistributedDataParallel in one process: the built-in "single" backend,
backends from plugins, bad input, and DDP's bucket machinery (the multi-process runs are in
test_mpi.py)."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

import pyframe as torch
import pyframe.distributed as dist
from pyframe import nn
from pyframe.nn.parallel import DistributedDataParallel as DDP


@pytest.fixture(autouse=True)
def _no_group():
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


def mlp() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 3))


# ---- the process group ------------------------------------------------------------------------------


def test_before_init_every_call_says_to_init():
    assert dist.is_available() and not dist.is_initialized()
    for call in (dist.get_rank, dist.get_world_size, dist.barrier, lambda: dist.all_reduce(torch.ones(2)),
                 lambda: dist.broadcast(torch.ones(2), 0), lambda: DDP(mlp())):  # fmt: skip
        with pytest.raises(ValueError, match="init_process_group"):
            call()


def test_unknown_backend_lists_installed_ones():
    with pytest.raises(ValueError, match=r"unknown distributed backend 'nccl'.*installed backends: \[.*'single'"):
        dist.init_process_group("nccl")
    assert not dist.is_initialized()


def test_single_backend_world_of_one():
    dist.init_process_group(timeout=timedelta(seconds=5))
    assert (dist.get_rank(), dist.get_world_size(), dist.get_backend()) == (0, 1, "single")
    t = torch.tensor([1.0, 2.0])
    for op in dist.ReduceOp:
        dist.all_reduce(t, op=op)
    assert t.tolist() == [1.0, 2.0]
    dist.broadcast(t, src=0)
    out = [torch.zeros(2)]
    dist.all_gather(out, t)
    assert out[0].tolist() == [1.0, 2.0]
    flat = torch.zeros(2)
    dist.all_gather_into_tensor(flat, t)
    assert flat.tolist() == [1.0, 2.0]
    work = dist.all_reduce(t, async_op=True)
    assert work.wait() is True and work.is_completed()
    dist.barrier()
    with pytest.raises(RuntimeError, match="twice"):
        dist.init_process_group("single")
    dist.destroy_process_group()
    dist.init_process_group("single")  # and again after destroying
    assert dist.is_initialized()


def test_bad_collective_arguments():
    dist.init_process_group("single")
    with pytest.raises(ValueError, match="contiguous"):
        dist.all_reduce(torch.ones(3, 4).t())
    with pytest.raises(TypeError, match=r"dtype bool is not supported; allowed: \['float32'"):
        dist.all_reduce(torch.ones(3, dtype=torch.bool))
    with pytest.raises(TypeError, match="AVG needs a floating dtype"):
        dist.all_reduce(torch.ones(3, dtype=torch.int64), op=dist.ReduceOp.AVG)
    with pytest.raises(TypeError, match="ReduceOp"):
        dist.all_reduce(torch.ones(3), op="sum")
    with pytest.raises(TypeError, match="pyframe.Tensor"):
        dist.all_reduce([1.0, 2.0])
    with pytest.raises(ValueError, match=r"src must be a rank in \[0, 1\)"):
        dist.broadcast(torch.ones(3), src=1)
    with pytest.raises(ValueError, match="list of 1 tensors"):
        dist.all_gather([torch.ones(3), torch.ones(3)], torch.ones(3))
    with pytest.raises(ValueError, match=r"tensor_list\[0\] is float32\[2\]"):
        dist.all_gather([torch.ones(2)], torch.ones(3))
    with pytest.raises(ValueError, match="only the default"):
        dist.all_reduce(torch.ones(3), group=object())


@pytest.mark.parametrize("timeout", [0, -1.0, "10", timedelta(seconds=-3)])
def test_bad_timeout(timeout):
    with pytest.raises(ValueError, match="timeout must be a positive"):
        dist.init_process_group("single", timeout=timeout)


def test_single_backend_refuses_a_launched_world(monkeypatch):
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    with pytest.raises(RuntimeError, match="launched as one of 4 ranks"):
        dist.init_process_group("single")


def test_a_plugin_provides_a_backend(no_installed_plugins):
    class Loopback(dist.backend.SingleBackend):
        name = "loopback"
        made_with: list = []

        def __init__(self, timeout):
            super().__init__(timeout)
            Loopback.made_with.append(timeout)

    class Plugin:
        @torch.hookimpl
        def pyframe_distributed_backends(self):
            return {"loopback": Loopback}

    with torch.plugins.register(Plugin(), "loopback-plugin"):
        assert "loopback" in dist.available_backends()
        dist.init_process_group("loopback", timeout=12)
        assert dist.get_backend() == "loopback" and Loopback.made_with == [12.0]
        with pytest.raises(ValueError, match="world_size=2 was asked for"):
            dist.destroy_process_group()
            dist.init_process_group("loopback", world_size=2)
    assert "loopback" not in dist.available_backends()


# ---- DistributedDataParallel ----------------------------------------------------------------------------


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
