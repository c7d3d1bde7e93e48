"""Every collective, point-to-point call and object collective under ``mpiexec -n 2`` (and ``-n 4`` with
``PYFRAME_TEST_DIST=1``), checked against torch's gloo on the same data in the same processes when torch is
installed; bad input on purpose (a clear error on every rank, the group usable afterwards). The launcher
``python -m pyframe.distributed.run`` with torch's DDP tutorial, and torchrun's environment checked."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.distributed.test_mpi import HEAVY, _probe

HERE = Path(__file__).resolve().parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _api(n: int, tmp_path: Path) -> list[dict]:
    cmd, env = _probe(n)
    env = {**env, "GLOO_PORT": str(_port()), "PYTHONWARNINGS": "ignore"}
    r = subprocess.run([*cmd, sys.executable, str(HERE / "worker_api.py"), str(tmp_path)], env=env,
                       capture_output=True, timeout=180)  # fmt: skip
    assert r.returncode == 0, r.stderr.decode(errors="replace").replace("\0", "")[-4000:]
    return [json.loads((tmp_path / f"rank{k}.json").read_text()) for k in range(n)]


@pytest.fixture(scope="module")
def api2(tmp_path_factory):
    return _api(2, tmp_path_factory.mktemp("api2"))


def _check(results: list[dict]) -> None:
    n = len(results)
    for rank, res in enumerate(results):
        assert res["diffs"] == [], res["diffs"]  # pyframe == torch's gloo, where torch is installed
        got = res["results"]
        assert got["all_reduce_SUM"] == [sum(1.5 + r for r in range(n)), sum(-2.0 * r for r in range(n)), 3.0 * n]
        assert got["all_reduce_float16"][1] == sum(1000.0 + r for r in range(n))  # summed in float32, not float16
        assert got["broadcast"] == [[float(n), 0.5]] * 2
        assert got["scatter"] == [rank, rank * rank]
        assert got["all_to_all"] == [[10.0 * r + rank] for r in range(n)]
        expect = [[100.0 * q + 10 * rank + j, -1.0] for q in range(n) for j in range((q + 2 * rank) % 3 + 1)]
        assert got["all_to_all_single_uneven"] == expect
        assert got["new_group"][0] == ([float(1 + n)] if rank in (0, n - 1) else [rank + 1.0])
        assert got["all_gather_object"][n - 1] == {"rank": n - 1, "s": "x" * (n - 1)}
        if rank < 2:
            assert got["send_recv"] == [1 - rank + 0.5, 7.0]
        # bad input: a clear error on every rank, naming every rank's call
        assert "rank 0: all_reduce SUM float32[1]; rank 1: all_reduce MAX float32[1]" in res["op"]
        assert "rank 0: broadcast from 0 float32[1]; rank 1: broadcast from 1 float32[1]" in res["root"]
        assert "rank 0: all_reduce SUM float32[1]; rank 1: broadcast from 0 float32[1]" in res["kind"]
        assert res["not_member"] == (None if rank == 0 else f"rank {rank} is not a member of ProcessGroup(name="
                                     "'group2', ranks=[0]): only its members may use it")  # fmt: skip
        assert res["splits"] == ("all_to_all_single: the ranks' split sizes disagree: rank 0 sends 1 rows to rank 1, "
                                 "which expects 2")  # fmt: skip
        assert res["splits_async"] == res["splits"]  # from wait(): the sizes are compared on the communication thread
        assert res["send_self"].startswith(f"Invalid destination rank: send on rank {rank} names itself")
        assert res["join_without_ddp"].startswith("Join works with DistributedDataParallel modules")
        if rank == 1:
            assert res["recv_mismatch"] == ("recv: rank 0 sent a tensor float32[3], but rank 1 receives into "
                                            "float32[4]: the dtype and shape must match")  # fmt: skip
        assert res["usable_after"] == [float(n)]


def test_collectives_match_torch_gloo_at_2_ranks(api2):
    _check(api2)
    pytest.importorskip("torch")
    assert all(res["torch"] for res in api2)


@pytest.mark.skipif(not HEAVY, reason="4 ranks on this machine: run with make test-dist (PYFRAME_TEST_DIST=1)")
def test_collectives_match_torch_gloo_at_4_ranks(tmp_path):
    _check(_api(4, tmp_path))


def test_launcher_runs_the_ddp_tutorial(tmp_path):
    _, env = _probe(2)
    cmd = [sys.executable, "-m", "pyframe.distributed.run", "--nproc-per-node", "2", str(HERE / "ddp_tutorial.py")]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    for rank in (0, 1):
        assert f"Finished running basic DDP example on rank {rank}." in r.stdout
        assert f"rank {rank} env ['{rank}', '{rank}', '2', '2', '127.0.0.1'] world 2" in r.stdout
    assert r.stderr.count("backend 'gloo' runs on pyframe's 'mpi' backend") == 1  # one line, from rank 0


def test_launcher_names_the_failing_rank(tmp_path):
    _, env = _probe(2)
    script = tmp_path / "fail.py"
    script.write_text("import pyframe.distributed as dist, sys\ndist.init_process_group()\n"
                      "if dist.get_rank() == 1:\n    sys.exit(1)\ndist.barrier()\n")  # fmt: skip
    r = subprocess.run([sys.executable, "-m", "pyframe.distributed.run", "--nproc-per-node", "2", str(script)],
                       env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert r.returncode != 0
    assert "rank 1 exited without calling destroy_process_group()" in r.stderr


@pytest.mark.parametrize(
    ("extra", "backend", "expect"),
    [
        ({"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}, "mpi", "the environment says WORLD_SIZE=2"),
        ({"RANK": "1", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1"}, None, "the environment says WORLD_SIZE=2"),
        ({"RANK": "0", "WORLD_SIZE": "4"}, "gloo", "the environment says WORLD_SIZE=4"),
        ({"PYFRAME_PLUGINS": "", "PYFRAME_DISABLE_PLUGINS": "mpi"}, "mpi", "installed but disabled"),
    ],
)
def test_a_launcher_world_that_disagrees_is_an_error_not_a_world_of_one(extra, backend, expect):
    """torchrun's variables without MPI's launcher (torchrun itself): never a silent world of one."""
    _, env = _probe(2)
    env = {k: v for k, v in env.items() if not k.startswith(("OMPI_COMM", "PMIX_", "PMI_"))}
    env.update(extra)
    code = f"import pyframe.distributed as dist\ndist.init_process_group({backend!r}, init_method='env://')\n"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert expect in r.stderr, r.stderr[-2000:]


def test_env_init_method_without_a_launcher_is_an_error():
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    code = "import pyframe.distributed as dist\ndist.init_process_group('single', init_method='env://')\n"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert "init_method='env://' needs the environment variables ['RANK', 'WORLD_SIZE']" in r.stderr
