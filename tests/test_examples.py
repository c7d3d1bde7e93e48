"""The scripts in examples/ run and do what they say (each in a fresh interpreter, as a user would run it)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PLUGIN_SITE = ROOT / "build" / "plugin-site"  # where `make` installs the shipped plugins (not into .venv)


def run(script: Path, *args: str, cwd: Path | None = None, timeout: float = 240, **env: str):
    """Runs ``script`` with no PYFRAME_* variable but ``env``; pyframe from this checkout."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("PYFRAME_")}
    paths = [str(ROOT), *env.pop("EXTRA_PATH", "").split(os.pathsep)]
    full.update(env, PYTHONPATH=os.pathsep.join(p for p in paths if p))
    r = subprocess.run(
        [sys.executable, str(script), *args], cwd=cwd or ROOT, env=full, capture_output=True, text=True, timeout=timeout
    )
    assert r.returncode == 0, f"{script.name} failed:\n{r.stdout}\n{r.stderr}"
    return r


# ---- the demo -----------------------------------------------------------------------------------------


def test_demo_one_epoch_with_the_shipped_plugins(tmp_path):
    for module in ("sklearn", "tqdm", "matplotlib"):
        pytest.importorskip(module)
    if not (PLUGIN_SITE / ".installed").is_file():
        pytest.skip("the shipped plugins are not installed in build/plugin-site (make does that)")
    out = tmp_path / "out"
    r = run(
        EXAMPLES / "demo.py",
        *("--epochs", "1", "--compare-epochs", "1", "--train-images", "512", "--out", str(out)),
        PYFRAME_CONFIG=str(EXAMPLES / "demo.toml"),
        EXTRA_PATH=str(PLUGIN_SITE),
    )
    lines = r.stdout.splitlines()
    header = lines[0]
    assert header.startswith("plugins: ")
    for name in ("float32-enforcer-0.1.0", "grad-clipper-0.1.0 (", "nan-detector-0.1.0 ("):
        assert name in header
    assert "mode='norm', max_norm=0.05" in header  # from examples/demo.toml
    assert "parameters in float32 (written as float64)" in r.stdout  # float32-enforcer at work
    summary = {m[0]: m[1] for m in re.findall(r"^  ([a-z0-9-]+): (.*)$", r.stdout, re.M)}
    assert summary["float32-enforcer"].startswith("parameters converted 6,")
    clipped = re.search(r"gradients seen ([\d,]+), gradients clipped ([\d,]+)", summary["grad-clipper"])
    assert clipped and 0 < int(clipped[2].replace(",", "")) <= int(clipped[1].replace(",", ""))
    assert re.match(r"tensors checked [\d,]+, non-finite found 0", summary["nan-detector"])
    (acc,) = [float(x) for x in re.findall(r"^accuracy: (\d\.\d\d)$", r.stdout, re.M)]
    assert acc >= 0.3  # 8 steps, well above chance (0.1); the default ten epochs on every image reach >= 0.95
    assert (out / "digits_cnn.pyframe").stat().st_size > 1000 and "reloaded model agrees: True" in r.stdout
    assert (out / "digits_cnn.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "model parameters in float64" in r.stdout  # the run with the plugins switched off
    assert "epoch  1/1" in r.stderr  # the progress bar
    assert re.search(r"loss=\d\.\d+, samples_s=[\d,]+", r.stderr)
