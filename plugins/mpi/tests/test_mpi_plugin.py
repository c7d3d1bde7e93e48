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


def _summed(messages):
    """What the check's SUM all-reduce leaves on a rank whose message has the first one's dtype: the others' bytes
    read in that dtype (as MPI reduces them when ranks disagree on the dtype)."""
    import numpy as np

    out = messages[0].copy()
    for m in messages[1:]:
        out = out + np.frombuffer(m.tobytes(), dtype=out.dtype)
    return out


@pytest.mark.parametrize("n", [2, 4, 512])
def test_check_lanes_agree_only_on_the_same_description(n):
    import numpy as np
    from pyframe_mpi.engine import CHECK_BYTES, LANES, agreed, check_message

    same = [check_message("all_reduce SUM float32[3]", np.float32).copy() for _ in range(n)]
    assert same[0].nbytes == CHECK_BYTES and agreed(_summed(same), n)
    assert not agreed(_summed(same), n + 1)  # a rank missing from the count
    other = [*same[:-1], check_message("all_reduce SUM float32[4]", np.float32).copy()]
    assert not agreed(_summed(other), n)
    # ranks in different calls send the same number of bytes in other dtypes: no rank's view agrees
    mixed = [*same[:-1], check_message("broadcast from 0 float32[3]", np.int64).copy()]
    assert not agreed(_summed(mixed), n) and not agreed(_summed(mixed[::-1]), n)
    # a small SUM rides after the lanes
    payload = np.arange(3, dtype=np.float32)
    msgs = [check_message("all_reduce SUM float32[3]", np.float32, payload=payload).copy() for _ in range(n)]
    total = _summed(msgs)
    assert agreed(total, n) and total[LANES : LANES + 3].tolist() == (n * payload).tolist()


def test_the_c_path_is_used_when_built_and_says_why_not_otherwise():
    import importlib.util

    from pyframe_mpi import direct

    dist.init_process_group("mpi", timeout=30)
    built = importlib.util.find_spec("pyframe_mpi._direct") is not None
    if built and os.environ.get("PYFRAME_MPI_DIRECT", "1") != "0":
        assert direct.why_not() is None
    else:
        assert direct.why_not() in ("PYFRAME_MPI_DIRECT=0",) or "not built" in direct.why_not()
    t = pyframe.arange(300, dtype=pyframe.float64)
    for _ in range(3):  # the prepared call, kept and called again
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    assert t.tolist() == list(range(300))


def test_direct_c_compiles_warning_free():
    """direct.c is C11, clean under -Wall -Wextra (checked here wherever an MPI compiler wrapper is found)."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    beside = Path(sys.executable).with_name("mpicc")
    mpicc = str(beside) if beside.exists() else shutil.which("mpicc")
    if mpicc is None:
        pytest.skip("no mpicc")
    src = Path(__file__).resolve().parents[1] / "pyframe_mpi" / "direct.c"
    r = subprocess.run([mpicc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", str(src)],
                       capture_output=True, text=True, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr


def test_the_check_size_follows_what_the_ranks_agreed_on():
    """A larger SUM checked twice in a row makes the next check its size; anything else, or a mismatch, goes back."""
    from types import SimpleNamespace

    import numpy as np
    from pyframe_mpi import MPIBackend
    from pyframe_mpi.engine import CHECK_BYTES, MAX_CHECK_BYTES, fit_bytes, ride_bytes

    c = SimpleNamespace()
    MPIBackend.reset_fit(c)
    big = fit_bytes(ride_bytes(np.ones(4096, dtype=np.float32), 2))
    assert big == 4096 * 4 + 19 * 4 + 4 and big % 8 == 0  # the lanes, the data, rounded up to 8 bytes
    assert fit_bytes(ride_bytes(np.ones(256, dtype=np.float32), 2)) == CHECK_BYTES  # rides in the default
    assert fit_bytes(ride_bytes(np.ones(1 << 15, dtype=np.float32), 2)) == CHECK_BYTES  # 128 KB: too large
    assert fit_bytes(ride_bytes(np.ones(8, dtype=np.int8), 2)) == CHECK_BYTES  # a dtype that never rides
    assert ride_bytes(np.ones(3, dtype=np.float32), 1025) == 0 and big < MAX_CHECK_BYTES
    seen = []
    for fit in (big, big, big, CHECK_BYTES, big, CHECK_BYTES, big, big):
        MPIBackend.note_fit(c, fit)
        seen.append(c.check_bytes)
    assert seen == [CHECK_BYTES, big, big, CHECK_BYTES, CHECK_BYTES, CHECK_BYTES, CHECK_BYTES, big]
    MPIBackend.reset_fit(c)
    assert (c.check_bytes, c.steady) == (CHECK_BYTES, CHECK_BYTES)
