"""The training state of every program in tests/compat/programs crosses between torch and pyframe bit for bit.

Each program runs twice, under torch and (imports rewritten) under pyframe, until its optimizers have stepped
twice (``capture.py``); the state dicts of its models, optimizers and schedulers are saved by that library
(``torch.save`` / ``pyframe.save(format="torch")``) and by its safetensors ``save_model``, and the other library
loads them: every tensor must equal, bit for bit, what the saving process held.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pyframe as pf

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
import safetensors.torch as stt  # noqa: E402

import pyframe.safetensors as pst  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = sorted((ROOT / "tests" / "compat" / "programs").glob("*.py"))


def run_capture(which: str, program: Path, outdir: Path) -> None:
    outdir.mkdir()
    env = dict(os.environ, PYFRAME_DISABLE_PLUGIN_AUTOLOAD="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "tests.serialization.capture", which, str(program), str(outdir)]
    p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert (outdir / "done").exists(), f"{which} {program.name} did not finish:\n{p.stderr[-2000:]}"


def flat(obj, path: str, out: dict) -> dict:
    if isinstance(obj, (pf.Tensor, torch.Tensor)):
        out[path] = obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            flat(v, f"{path}[{k!r}]", out)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            flat(v, f"{path}[{i}]", out)
    return out


def npz(path: Path) -> dict:
    with np.load(path) as f:
        return dict(f)


def assert_bits(loaded: dict, truth: dict) -> int:
    """Every array in ``truth`` equals the loaded tensor at its key, bit for bit; the count."""
    assert sorted(loaded) == sorted(truth)
    for k in truth:
        a, b = loaded[k].detach().numpy().copy(order="C"), truth[k]
        assert a.dtype == b.dtype and a.shape == b.shape, k
        assert a.tobytes() == b.tobytes(), k
    return len(truth)


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_state_dicts_cross_both_ways_bit_identically(program, tmp_path):
    run_capture("torch", program, tmp_path / "torch")
    run_capture("pyframe", program, tmp_path / "pyframe")
    t, p = tmp_path / "torch", tmp_path / "pyframe"
    # torch.save -> pyframe.load, and pyframe.save(format="torch") -> torch.load(weights_only=True)
    n = assert_bits(flat(pf.load(t / "ckpt.pt"), "obj", {}), npz(t / "ckpt.npz"))
    n += assert_bits(flat(torch.load(p / "ckpt.pt", weights_only=True), "obj", {}), npz(p / "ckpt.npz"))
    # safetensors both ways: torch's save_model -> pyframe.safetensors.load_file, and the reverse
    for side, load in ((t, pst.load_file), (p, stt.load_file)):
        for i in range(int((side / "done").read_text())):
            truth, got = npz(side / f"model_{i}.npz"), load(side / f"model_{i}.safetensors")
            assert set(got) <= set(truth)  # save_model drops the duplicates of tied weights
            n += assert_bits(got, {k: truth[k] for k in got})
    assert n > 0
