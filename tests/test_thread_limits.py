"""Kernels split work by the team OpenMP grants, not the count asked for.

With OMP_THREAD_LIMIT=1 or OMP_DYNAMIC=true, asking for 4 threads can yield a team of 1
or 2; every parallel kernel must still compute each element exactly once. OpenMP reads
those variables when it starts, so each case runs in a fresh interpreter. The child
compares a 4-thread request against a 1-thread run (identical bits: results never depend
on the thread count) and against float64 NumPy.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CHILD = r"""
import numpy as np
import pyframe
import pyframe.nn.functional as F

rng = np.random.default_rng(5)
t = lambda *s: pyframe.tensor(rng.standard_normal(s).astype(np.float32))
a, b = t(300, 200), t(200, 250)
v, w = t(1, 2000), t(2000, 300)
ba, bb = t(8, 64, 96), t(8, 96, 80)
x, k = t(16, 3, 32, 32), t(8, 3, 3, 3)
big = t(1000, 700)
cases = {
    "matmul": lambda: a @ b,
    "matmul_T": lambda: b.T @ a.T,
    "gemv": lambda: v @ w,
    "gemv_col": lambda: w.T @ v.T,
    "bmm": lambda: ba @ bb,
    "conv2d": lambda: F.conv2d(x, k, padding=1),
    "max_pool2d": lambda: F.max_pool2d(x, 2),
    "sum": lambda: big.sum(),
    "sum0": lambda: big.sum(0),
    "sum1": lambda: big.sum(1),
    "softmax": lambda: big.softmax(-1),
    "exp": lambda: big.exp(),
    "add": lambda: big + big,
}
ref = {
    "matmul": lambda: a.numpy().astype(np.float64) @ b.numpy(),
    "gemv": lambda: v.numpy().astype(np.float64) @ w.numpy(),
    "sum": lambda: big.numpy().astype(np.float64).sum(),
    "sum0": lambda: big.numpy().astype(np.float64).sum(0),
}
pyframe.set_num_threads(1)
one = {name: np.array(fn().numpy()) for name, fn in cases.items()}
pyframe.set_num_threads(4)
for name, fn in cases.items():
    got = np.array(fn().numpy())
    assert np.isfinite(got).all(), f"{name}: non-finite values with 4 threads asked"
    np.testing.assert_array_equal(got, one[name], err_msg=name)
    if name in ref:
        np.testing.assert_allclose(got, ref[name](), rtol=1e-4, atol=1e-3, err_msg=name)
print("ok", len(cases))
"""


@pytest.mark.parametrize("env", [{"OMP_THREAD_LIMIT": "1"}, {"OMP_DYNAMIC": "true"}], ids=["limit1", "dynamic"])
def test_kernels_exact_when_fewer_threads_are_granted(env):
    full = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "PYFRAME_DISABLE_PLUGIN_AUTOLOAD": "1", **env}
    r = subprocess.run([sys.executable, "-c", CHILD], env=full, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.startswith("ok")
