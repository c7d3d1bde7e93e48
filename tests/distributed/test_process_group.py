"""pyframe.distributed in one process: the built-in "single" backend, backends from plugins, bad input (DDP
is in test_ddp.py, the multi-process runs in test_mpi.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest

import pyframe as torch
import pyframe.distributed as dist
from pyframe import nn
from pyframe.nn.parallel import DistributedDataParallel as DDP


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
        if op.name not in ("BAND", "BOR", "BXOR"):
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
    t = torch.arange(12.0).reshape(3, 4).t()
    dist.all_reduce(t)  # not contiguous: through a contiguous copy, written back
    assert t.tolist() == torch.arange(12.0).reshape(3, 4).t().tolist()
    with pytest.raises(TypeError, match="AVG needs a floating dtype, got bool"):
        dist.all_reduce(torch.ones(3, dtype=torch.bool), op=dist.ReduceOp.AVG)
    with pytest.raises(TypeError, match="AVG needs a floating dtype"):
        dist.all_reduce(torch.ones(3, dtype=torch.int64), op=dist.ReduceOp.AVG)
    with pytest.raises(TypeError, match="ReduceOp"):
        dist.all_reduce(torch.ones(3), op="sum")
    with pytest.raises(TypeError, match="pyframe.Tensor"):
        dist.all_reduce([1.0, 2.0])
    with pytest.raises(ValueError, match=r"src must be a rank of the group \[0\], got 1"):
        dist.broadcast(torch.ones(3), src=1)
    with pytest.raises(ValueError, match="list of 1 tensors"):
        dist.all_gather([torch.ones(3), torch.ones(3)], torch.ones(3))
    with pytest.raises(ValueError, match=r"tensor_list\[0\] is float32\[2\]"):
        dist.all_gather([torch.ones(2)], torch.ones(3))
    with pytest.raises(ValueError, match="group must be None, group.WORLD or a group made by new_group"):
        dist.all_reduce(torch.ones(3), group=object())
    with pytest.raises(TypeError, match="Cannot use ReduceOp.BAND with non-integral dtype float32"):
        dist.all_reduce(torch.ones(3), op=dist.ReduceOp.BAND)
    with pytest.raises(ValueError, match="Invalid destination rank: send on rank 0 names itself"):
        dist.send(torch.ones(3), 0)


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


def test_default_backend_for_device_is_torchs():
    assert dist.get_default_backend_for_device("cpu") == "gloo"
    assert dist.get_default_backend_for_device(torch.device("cpu")) == "gloo"
    with pytest.raises(ValueError, match="Default backend not registered for device : cuda"):
        dist.get_default_backend_for_device("cuda:1")
    with pytest.raises(TypeError, match="expected a device or a string"):
        dist.get_default_backend_for_device(3)
