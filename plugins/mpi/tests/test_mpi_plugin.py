"""The mpi plugin in one process (an MPI singleton world of one rank): discovery through the entry
point and the backend contract. The two-rank runs under mpiexec are pyframe's tests/test_distributed_mpi.py."""

from __future__ import annotations

import os

import pytest

import pyframe
import pyframe.distributed as dist

pytest.importorskip("mpi4py")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")


@pytest.fixture(autouse=True)
def _no_group():
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


def test_found_through_the_entry_point():
    info = pyframe.plugins.get("mpi")
    assert info.enabled and info.distribution == "pyframe-mpi"
    assert "pyframe_distributed_backends" in info.hooks
    assert {"single", "mpi"} <= set(dist.available_backends())


def test_singleton_world():
    dist.init_process_group("mpi", timeout=30)
    assert (dist.get_backend(), dist.get_rank(), dist.get_world_size()) == ("mpi", 0, 1)
    t = pyframe.tensor([1.0, 3.0])
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == [1.0, 3.0]
    dist.broadcast(t, 0)
    got = [pyframe.zeros(2)]
    dist.all_gather(got, t)
    assert got[0].tolist() == [1.0, 3.0]
    assert dist.all_reduce(t, async_op=True).wait()
    dist.barrier()
    dist.destroy_process_group()
    dist.init_process_group()  # backend=None outside a launcher: the built-in "single"
    assert dist.get_backend() == "single"
