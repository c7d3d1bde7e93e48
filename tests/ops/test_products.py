"""matmul against NumPy (references in float64) and every GEMM path this CPU supports; dot, einsum and the
products (outer, addmm, tensordot, kron, diag, trace, cross, cdist, ...) against NumPy and torch with gradients."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    DTYPES,
    fd_gradcheck,
    npy,
    pf,
    t64,
)
from tests._tables import gradcheck_table_test, torch_case_table_test

lib = pyframe._backend.lib
RNG = np.random.default_rng(0)
PATHS = [p for p in ("avx512", "avx2", "portable") if lib.pf_cpu_supports(p.encode())]
ROOT = Path(__file__).resolve().parents[2]

EPS = {"float32": 2.0**-23, "float64": 2.0**-52}


def _operand(rng, shape, dtype):
    if dtype in ("int64", "int32"):
        return rng.integers(-9, 10, size=shape).astype(DTYPES[dtype].np)
    return rng.standard_normal(shape).astype(DTYPES[dtype].np)


def _check(got: pyframe.Tensor, a: np.ndarray, b: np.ndarray, dtype: str, what: str = ""):
    """``got`` equals a @ b: exactly for integers; for floats within the rounding error bound
    k * eps * (|a| @ |b|), computed in float64."""
    assert got.dtype == DTYPES[dtype], what
    a64 = a.astype(np.float64) if dtype in EPS else a.astype(np.int64)
    b64 = b.astype(np.float64) if dtype in EPS else b.astype(np.int64)
    expected = np.matmul(a64, b64)
    assert tuple(got.shape) == expected.shape, f"{what}: {tuple(got.shape)} != {expected.shape}"
    g = npy(got)
    if dtype not in EPS:
        np.testing.assert_array_equal(g, expected, err_msg=what)
        return
    k = a.shape[-1] if a.ndim else 1
    bound = np.matmul(np.abs(a64), np.abs(b64)) * (2 * k + 4) * EPS[dtype] + 1e-30
    err = np.abs(g.astype(np.float64) - expected)
    worst = np.max(err / bound) if err.size else 0.0
    assert worst <= 1.0, f"{what}: error {worst:.3g} x the rounding bound"


SQUARE = [1, 2, 7, 8, 16, 33, 64, 257]
RECT = [(1, 300, 1), (5, 7, 3), (64, 1, 64), (17, 129, 65), (3, 0, 4), (0, 3, 4), (2, 5, 0), (100, 37, 1),
        (1, 37, 100), (31, 500, 9)]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
@pytest.mark.parametrize("n", SQUARE)
def test_square(n, dtype, rng):
    a, b = _operand(rng, (n, n), dtype), _operand(rng, (n, n), dtype)
    _check(pf(a) @ pf(b), a, b, dtype, f"{n}x{n}")


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize(("m", "k", "n"), RECT, ids=[f"{m}x{k}x{n}" for m, k, n in RECT])
def test_rectangular(m, k, n, dtype, rng):
    a, b = _operand(rng, (m, k), dtype), _operand(rng, (k, n), dtype)
    out = pyframe.matmul(pf(a), pf(b))
    _check(out, a, b, dtype, f"{m}x{k} @ {k}x{n}")
    if k == 0:
        assert (npy(out) == 0).all()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("layout", ["aT", "bT", "both_T", "strided", "sliced_offset", "expanded"])
def test_transposed_and_strided_inputs(layout, dtype, rng):
    m, k, n = 19, 45, 23
    if layout == "aT":
        base_a, base_b = _operand(rng, (k, m), dtype), _operand(rng, (k, n), dtype)
        a, b, ta, tb = base_a.T, base_b, pf(base_a).T, pf(base_b)
    elif layout == "bT":
        base_a, base_b = _operand(rng, (m, k), dtype), _operand(rng, (n, k), dtype)
        a, b, ta, tb = base_a, base_b.T, pf(base_a), pf(base_b).T
    elif layout == "both_T":
        base_a, base_b = _operand(rng, (k, m), dtype), _operand(rng, (n, k), dtype)
        a, b, ta, tb = base_a.T, base_b.T, pf(base_a).T, pf(base_b).T
    elif layout == "strided":
        base_a, base_b = _operand(rng, (m, 2 * k), dtype), _operand(rng, (3 * k, n), dtype)
        a, b, ta, tb = base_a[:, ::2], base_b[::3], pf(base_a)[:, ::2], pf(base_b)[::3]
    elif layout == "sliced_offset":
        base_a, base_b = _operand(rng, (m + 3, k + 2), dtype), _operand(rng, (k + 1, n + 5), dtype)
        a, b, ta, tb = base_a[3:, 2:], base_b[1:, 5:], pf(base_a)[3:, 2:], pf(base_b)[1:, 5:]
    else:  # stride-0 rows and columns
        base_a, base_b = _operand(rng, (1, k), dtype), _operand(rng, (k, 1), dtype)
        a, b = np.broadcast_to(base_a, (m, k)), np.broadcast_to(base_b, (k, n))
        ta, tb = pf(base_a).expand(m, k), pf(base_b).expand(k, n)
    _check(ta @ tb, a, b, dtype, layout)
    _check(pyframe.mm(ta, tb), a, b, dtype, layout)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_one_d_operands(dtype, rng):
    v, w = _operand(rng, (7,), dtype), _operand(rng, (7,), dtype)
    m, batch = _operand(rng, (7, 4), dtype), _operand(rng, (3, 5, 7), dtype)
    out = pf(v) @ pf(w)
    assert out.shape == ()
    _check(out, v, w, dtype, "vec @ vec")
    _check(pyframe.dot(pf(v), pf(w)), v, w, dtype, "dot")
    _check(pf(v) @ pf(m), v, m, dtype, "vec @ mat")
    _check(pf(m).T @ pf(v), m.T, v, dtype, "mat @ vec")
    _check(pf(batch) @ pf(v), batch, v, dtype, "batch @ vec")
    bt = _operand(rng, (2, 7, 3), dtype)
    _check(pf(v) @ pf(bt), v, bt, dtype, "vec @ batch")
    _check(pf(v)[::1] @ pf(w[::-1].copy()), v, w[::-1], dtype, "vec @ vec view")


BATCHED = [
    ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 6)), ((3, 4), (2, 4, 5)), ((2, 3, 4), (4, 5)),
    ((1, 3, 4), (6, 4, 2)), ((2, 1, 1, 3, 4), (1, 2, 3, 4, 2)), ((0, 3, 4), (4, 5)), ((4, 1, 6), (4, 6, 1)),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize(("sa", "sb"), BATCHED, ids=[f"{sa}@{sb}" for sa, sb in BATCHED])
def test_batched_with_broadcasting(sa, sb, dtype, rng):
    a, b = _operand(rng, sa, dtype), _operand(rng, sb, dtype)
    _check(pf(a) @ pf(b), a, b, dtype, f"{sa} @ {sb}")
    # the same with the last two dims of each operand transposed in memory
    ta = pf(np.ascontiguousarray(np.swapaxes(a, -1, -2))).mT
    tb = pf(np.ascontiguousarray(np.swapaxes(b, -1, -2))).mT
    _check(pyframe.matmul(ta, tb), a, b, dtype, f"{sa} @ {sb} transposed")


def test_bmm_and_promotion(rng):
    a, b = _operand(rng, (4, 3, 5), "float32"), _operand(rng, (4, 5, 2), "float32")
    _check(pyframe.bmm(pf(a), pf(b)), a, b, "float32", "bmm")
    out = pf(a.astype(np.float64)) @ pf(b)
    assert out.dtype == pyframe.float64
    assert (pyframe.ones(2, 2, dtype=pyframe.int32) @ pyframe.ones(2, 2, dtype=pyframe.int32)).dtype == pyframe.int32


def test_matmul_does_not_modify_inputs_and_output_is_new(rng):
    a, b = _operand(rng, (8, 8), "float32"), _operand(rng, (8, 8), "float32")
    ta, tb = pf(a), pf(b)
    out = ta @ tb
    np.testing.assert_array_equal(npy(ta), a)
    np.testing.assert_array_equal(npy(tb), b)
    assert out._storage is not ta._storage and out.is_contiguous()
    self_product = ta @ ta  # aliasing operands
    _check(self_product, a, a, "float32", "a @ a")


def test_int64_matmul_is_exact_for_large_values():
    a = np.array([[2**40, 3], [1, -(2**41)]], dtype=np.int64)
    b = np.array([[5, 2**20], [7, 1]], dtype=np.int64)
    np.testing.assert_array_equal(npy(pf(a) @ pf(b)), a @ b)


def test_special_values_propagate():
    a = pyframe.tensor([[1.0, np.nan], [1.0, 2.0]])
    b = pyframe.tensor([[1.0, 0.0], [0.0, 1.0]])
    out = npy(a @ b)
    assert np.isnan(out[0]).all() and out[1].tolist() == [1.0, 2.0]
    inf = pyframe.tensor([[np.inf, 1.0]]) @ pyframe.tensor([[1.0], [1.0]])
    assert inf.item() == np.inf


# ---- GEMM paths --------------------------------------------------------------------------------------------


def test_gemm_paths_are_reported():
    assert "portable" in PATHS
    name = pyframe._backend.ffi.string(lib.pf_gemm_path()).decode()
    assert name in PATHS
    assert lib.pf_cpu_supports(b"auto") == 1 and lib.pf_cpu_supports(b"sse9") == 0


def test_unknown_gemm_path_is_rejected(restore_gemm):
    assert restore_gemm.pf_gemm_select(b"avx9000") != 0
    msg = pyframe._backend.ffi.string(lib.pf_last_error()).decode()
    assert "avx9000" in msg and "portable" in msg


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_every_gemm_path(path, dtype, restore_gemm, rng):
    assert restore_gemm.pf_gemm_select(path.encode()) == 0
    assert pyframe._backend.ffi.string(lib.pf_gemm_path()).decode() == path
    shapes = [(1, 1, 1), (7, 7, 7), (33, 33, 33), (5, 300, 3), (65, 17, 129), (257, 64, 31), (16, 16, 16)]
    for m, k, n in shapes:
        a, b = _operand(rng, (m, k), dtype), _operand(rng, (k, n), dtype)
        _check(pf(a) @ pf(b), a, b, dtype, f"{path} {m}x{k}x{n}")
        _check(pf(np.ascontiguousarray(a.T)).T @ pf(np.ascontiguousarray(b.T)).T, a, b, dtype, f"{path} T")
    a, b = _operand(rng, (3, 1, 20, 9), dtype), _operand(rng, (4, 9, 11), dtype)
    _check(pf(a) @ pf(b), a, b, dtype, f"{path} batched")


SWEEP = [1, 2, 3, 5, 15, 16, 17, 31, 40, 50, 63, 64, 65, 100, 127, 128, 129, 130]


def _layout(rng, shape, dtype, layout):
    """An operand of ``shape`` as (numpy, pyframe) in a layout: row-major, transposed in memory,
    every other column of a wider array, or a flipped view."""
    if layout == "T":
        base = _operand(rng, shape[::-1], dtype)
        return base.T, pf(base).T
    if layout == "strided":
        base = _operand(rng, (shape[0], 2 * shape[1]), dtype)
        return base[:, ::2], pf(base)[:, ::2]
    base = _operand(rng, shape, dtype)
    if layout == "flipped":
        return base[::-1], pf(base).flip(0)
    return base, pf(base)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_small_and_odd_shapes_sweep(path, dtype, restore_gemm):
    """Shapes 1..130 on both sides of the small-product limit (128 per dim) with every operand
    layout, as plain products, with autograd recording, 1-d operands, batches and addmm's beta."""
    assert restore_gemm.pf_gemm_select(path.encode()) == 0
    rng = np.random.default_rng(24)
    layouts = ["C", "T", "strided", "flipped"]
    for i in range(60):
        m, k, n = (int(x) for x in rng.choice(SWEEP, 3))
        la, lb = layouts[i % 4], layouts[(i // 4) % 4]
        a, ta = _layout(rng, (m, k), dtype, la)
        b, tb = _layout(rng, (k, n), dtype, lb)
        what = f"{path} {m}x{k}x{n} {la} {lb}"
        _check(ta @ tb, a, b, dtype, what)
        if i % 3 == 0:  # the autograd path: descriptors and pf_matmul
            _check((ta.detach().requires_grad_() @ tb).detach(), a, b, dtype, what + " grad")
        if i % 4 == 1:
            v = _operand(rng, (k,), dtype)
            _check(ta @ pf(v), a, v, dtype, what + " matrix @ vector")
            w = _operand(rng, (m,), dtype)
            _check(pf(w) @ ta, w, a, dtype, what + " vector @ matrix")
        if i % 6 == 2:
            c = _operand(rng, (m, n), dtype)
            got = pyframe.addmm(pf(c), ta, tb, beta=0.5, alpha=2.0)
            want = 0.5 * c.astype(np.float64) + 2.0 * (a.astype(np.float64) @ b.astype(np.float64))
            bound = (np.abs(a) @ np.abs(b) * 2 + np.abs(c)) * (2 * k + 8) * EPS[dtype] + 1e-30
            assert (np.abs(npy(got) - want) <= bound).all(), what + " addmm"
    a, b = _operand(rng, (5, 40, 50), dtype), _operand(rng, (5, 50, 17), dtype)
    _check(pf(a) @ pf(b), a, b, dtype, f"{path} batch of small products")
    _check(pf(a) @ pf(b[0]), a, np.broadcast_to(b[0], (5, 50, 17)), dtype, f"{path} broadcast batch")


@pytest.mark.parametrize("path", PATHS)
def test_blocked_float32_packs_every_layout(path, restore_gemm):
    """The blocked path's packing of both operands from each layout (columns contiguous: the weight
    gradient's A = g^T and a row-major B, copied in runs; rows contiguous: transposed through registers),
    with partial A panels (M % 6, M % 12) and B panels (N % 16, N % 32) and two K blocks."""
    assert restore_gemm.pf_gemm_select(path.encode()) == 0
    rng = np.random.default_rng(7)
    for m, k, n in [(1030, 400, 389), (263, 700, 130), (199, 131, 515)]:
        for la in ("C", "T"):
            for lb in ("C", "T"):
                a, ta = _layout(rng, (m, k), "float32", la)
                b, tb = _layout(rng, (k, n), "float32", lb)
                _check(ta @ tb, a, b, "float32", f"{path} {m}x{k}x{n} {la} {lb}")


def test_gemm_paths_agree_closely(restore_gemm, rng):
    a, b = _operand(rng, (70, 90), "float64"), _operand(rng, (90, 50), "float64")
    results = {}
    for path in PATHS:
        restore_gemm.pf_gemm_select(path.encode())
        results[path] = npy(pf(a) @ pf(b))
    for path in PATHS:
        np.testing.assert_allclose(results[path], results["portable"], rtol=1e-12, atol=1e-12, err_msg=path)


@pytest.mark.parametrize("path", PATHS)
def test_pyframe_gemm_environment_variable(path):
    """PYFRAME_GEMM picks the path at import time (checked in a fresh interpreter)."""
    code = textwrap.dedent(
        """
        import numpy as np, pyframe
        lib, ffi = pyframe._backend.lib, pyframe._backend.ffi
        print(ffi.string(lib.pf_gemm_path()).decode())
        a = np.random.default_rng(0).standard_normal((37, 41))
        b = np.random.default_rng(1).standard_normal((41, 29))
        got = (pyframe.tensor(a) @ pyframe.tensor(b)).numpy()
        assert np.allclose(got, a @ b, rtol=1e-12, atol=1e-12)
        print("ok")
        """
    )
    env = dict(os.environ, PYFRAME_GEMM=path, OPENBLAS_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [path, "ok"]


def test_bad_pyframe_gemm_environment_variable_fails_at_import():
    env = dict(os.environ, PYFRAME_GEMM="nonsense")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", "import pyframe"], env=env, capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode != 0
    assert "nonsense" in proc.stderr


# ---- thread-count independence -------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_matmul_same_result_with_one_or_two_threads(dtype, restore_threads, rng):
    a, b = _operand(rng, (300, 200), dtype), _operand(rng, (200, 310), dtype)
    pyframe.set_num_threads(1)
    one = npy(pf(a) @ pf(b))
    pyframe.set_num_threads(2)
    two = npy(pf(a) @ pf(b))
    np.testing.assert_array_equal(one, two)


def _same_bits_at_one_and_two_threads(a, b, ta, tb, dtype, label):
    """ta @ tb is the float64 product of a and b at one and at two threads, with the same bits at both."""
    results = []
    for threads in (1, 2):
        pyframe.set_num_threads(threads)
        got = ta @ tb
        _check(got, a, b, dtype, f"{label} threads={threads}")
        results.append(npy(got))
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_small_products_split_over_two_threads(dtype, restore_threads, rng):
    """Products with every dim at most 128 and at least 64^3 multiply-adds are split over the team, by
    column strips or (one strip wide) by row blocks, with B read in place or copied: the values are
    the float64 product's and the bits those of one thread."""
    shapes = [(128, 128, 128), (64, 64, 64), (100, 127, 65), (128, 128, 16), (97, 128, 33), (128, 40, 128)]
    for m, k, n in shapes:
        for la, lb in [("C", "C"), ("T", "T"), ("strided", "flipped")]:
            a, ta = _layout(rng, (m, k), dtype, la)
            b, tb = _layout(rng, (k, n), dtype, lb)
            _same_bits_at_one_and_two_threads(a, b, ta, tb, dtype, f"{m}x{k}x{n} {la} {lb}")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_few_rows_wide_products_split_each_column_block(dtype, restore_threads, rng):
    """A few rows against a wide B on the blocked path (B row-major; float64 also x W^T): the team splits
    the columns, and each column block's among the threads: the float64 product's values, one thread's bits."""
    for m, k, n in [(52, 384, 1536), (34, 384, 1536), (40, 256, 1100)]:
        for lb in ("C", "T") if dtype == "float64" else ("C",):
            a, ta = _layout(rng, (m, k), dtype, "C")
            b, tb = _layout(rng, (k, n), dtype, lb)
            _same_bits_at_one_and_two_threads(a, b, ta, tb, dtype, f"{m}x{k}x{n} C {lb}")


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_wide_products_in_column_blocks(path, dtype, restore_gemm, restore_threads, rng):
    """N wide enough that the packed B of one K block is split into column blocks that fit L2 (two
    or three blocks here, the last narrower), A then packed once for all of them (at two threads the
    column split shares the packing of its rows), with every operand layout, addmm's accumulation, and
    the same bits at one and two threads, on every kernel set."""
    assert restore_gemm.pf_gemm_select(path.encode()) == 0
    m, k, n = (100, 320, 1700) if dtype == "float32" else (100, 256, 1100)
    for la, lb in [("C", "C"), ("T", "T"), ("strided", "C"), ("C", "flipped")]:
        a, ta = _layout(rng, (m, k), dtype, la)
        b, tb = _layout(rng, (k, n), dtype, lb)
        _same_bits_at_one_and_two_threads(a, b, ta, tb, dtype, f"{m}x{k}x{n} {la} {lb}")
        c = _operand(rng, (m, n), dtype)
        got = pyframe.addmm(pf(c), ta, tb, beta=0.5, alpha=2.0)
        want = 0.5 * c.astype(np.float64) + 2.0 * (a.astype(np.float64) @ b.astype(np.float64))
        bound = (np.abs(a) @ np.abs(b) * 2 + np.abs(c)) * (2 * k + 8) * EPS[dtype] + 1e-30
        assert (np.abs(npy(got) - want) <= bound).all(), f"{la} {lb} addmm"


def test_wide_products_with_an_a_too_large_to_pack_once(restore_threads, rng):
    """Past 16 MB A is not packed once for all column blocks (that copy would double a large operand's
    memory): each block packs its own rows again. Still the float64 product, one thread's bits at two."""
    m, k, n = 4200, 1024, 800  # A: 17.2 MB of float32; two column blocks
    a, ta = _layout(rng, (m, k), "float32", "C")
    b, tb = _layout(rng, (k, n), "float32", "T")
    _same_bits_at_one_and_two_threads(a, b, ta, tb, "float32", f"{m}x{k}x{n} C T")


def test_rows_times_transposed_weight(restore_threads, rng):
    """x W^T with 16..64 rows and N or K above 128 (a Linear layer at small batch, an LSTM step) is computed as
    C^T = W x^T with W read in place: odd rows, columns and K (across its 384-deep K blocks and 48-row W
    tiles), x row-major, transposed or strided, F.linear's bias and addmm's accumulation; the values are the
    float64 product's and the bits the same at one and two threads."""
    shapes = [(16, 384, 1152), (17, 130, 97), (33, 650, 200), (64, 100, 385), (40, 1536, 50), (63, 129, 129)]
    for m, k, n in shapes:
        w = _operand(rng, (n, k), "float32")
        tw = pf(w)
        for la in ["C", "T", "strided"]:
            a, ta = _layout(rng, (m, k), "float32", la)
            _same_bits_at_one_and_two_threads(a, w.T, ta, tw.T, "float32", f"{m}x{k}x{n} {la} @ W^T")
        bias = _operand(rng, (n,), "float32")
        got = npy(pyframe.nn.functional.linear(ta, tw, pf(bias)))
        want = a.astype(np.float64) @ w.T.astype(np.float64) + bias
        bound = (np.abs(a) @ np.abs(w.T) + np.abs(bias)) * (2 * k + 8) * EPS["float32"] + 1e-30
        assert (np.abs(got - want) <= bound).all(), f"{m}x{k}x{n} linear with bias"
        c = _operand(rng, (m, n), "float32")
        got = npy(pyframe.addmm(pf(c), ta, tw.T, beta=0.5, alpha=2.0))
        want = 0.5 * c.astype(np.float64) + 2.0 * (a.astype(np.float64) @ w.T.astype(np.float64))
        bound = (np.abs(a) @ np.abs(w.T) * 2 + np.abs(c)) * (2 * k + 8) * EPS["float32"] + 1e-30
        assert (np.abs(got - want) <= bound).all(), f"{m}x{k}x{n} addmm"


EINSUMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,kj->ik", [(3, 4), (5, 4)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]), ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("i,i->", [(4,), (4,)]),
    ("i,j->ij", [(3,), (4,)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]), ("bhqd,bhkd->bhqk", [(2, 2, 3, 4)] * 2),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]), ("ijk->kj", [(2, 3, 4)]), ("ij,ij->i", [(3, 4), (3, 4)]),
]  # fmt: skip


@pytest.mark.parametrize(("eq", "shapes"), EINSUMS)
def test_einsum_matches_numpy(eq, shapes):
    arrs = [RNG.standard_normal(s) for s in shapes]
    got = pyframe.einsum(eq, *[t64(a) for a in arrs])
    np.testing.assert_allclose(got.numpy(), np.einsum(eq, *arrs), rtol=1e-12, atol=1e-12)
    assert pyframe.einsum(eq, [t64(a) for a in arrs]).shape == got.shape


def test_einsum_gradients():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4))
    fd_gradcheck(lambda x, y: pyframe.einsum("ij,jk->ik", x, y), a, b)
    fd_gradcheck(lambda x: pyframe.einsum("ii->i", x), RNG.standard_normal((3, 3)))
    fd_gradcheck(lambda x, y: pyframe.einsum("ij,ij->j", x, y), a, a + 1)


def test_einsum_bad_input():
    with pytest.raises(ValueError, match="operands"):
        pyframe.einsum("ij,jk->ik", pyframe.ones(2, 2))
    with pytest.raises(ValueError, match="names 2 dims"):
        pyframe.einsum("ij", pyframe.ones(2))
    with pytest.raises(ValueError, match="sizes"):
        pyframe.einsum("ij,jk->ik", pyframe.ones(2, 3), pyframe.ones(4, 2))
    with pytest.raises(ValueError, match="appears in no operand"):
        pyframe.einsum("ij->iz", pyframe.ones(2, 3))


@pytest.mark.parametrize("n", [0, 1, 5, 17, 2000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dot_of_vectors_is_the_double_sum_of_products(n, dtype):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    got = pyframe.tensor(a) @ pyframe.tensor(b)
    assert got.shape == () and got.dtype == getattr(pyframe, dtype)
    want = np.float64(a.astype(np.float64) @ b.astype(np.float64)).astype(dtype)
    np.testing.assert_allclose(got.item(), want, rtol=1e-6)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(got.item(), (torch.tensor(a) @ torch.tensor(b)).item(), rtol=1e-4, atol=1e-4)
    m = pyframe.tensor(np.stack([a, b], 1))  # strided columns
    np.testing.assert_allclose((m[:, 0] @ m[:, 1]).item(), got.item(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        pyframe.tensor(a) @ pyframe.randn(n + 1, dtype=got.dtype)


# ---- against torch: name -> (function of the library and the inputs, input arrays) ----------------------

RNG_PRODUCTS = np.random.default_rng(13)


def arr(*shape, lo=-2.0, hi=2.0):
    return RNG_PRODUCTS.uniform(lo, hi, shape)


TORCH_CASES = {
    "outer": (lambda L, a, b: L.outer(a, b), (arr(3), arr(4))),
    "mv": (lambda L, a, b: a.mv(b), (arr(3, 4), arr(4))),
    "addmm": (lambda L, a, b, c: L.addmm(a, b, c, beta=0.5, alpha=2.0), (arr(4), arr(3, 5), arr(5, 4))),
    "addmv": (lambda L, a, b, c: L.addmv(a, b, c), (arr(3), arr(3, 5), arr(5))),
    "baddbmm": (lambda L, a, b, c: L.baddbmm(a, b, c, alpha=0.5), (arr(2, 3, 4), arr(2, 3, 5), arr(2, 5, 4))),
    "addbmm": (lambda L, a, b, c: L.addbmm(a, b, c), (arr(3, 4), arr(2, 3, 5), arr(2, 5, 4))),
    "addr": (lambda L, a, b, c: L.addr(a, b, c, beta=0.5, alpha=2.0), (arr(3, 4), arr(3), arr(4))),
    "addr_broadcast": (lambda L, a, b, c: a.addr(b, c), (arr(4), arr(3), arr(4))),
    "inner": (lambda L, a, b: L.inner(a, b), (arr(2, 3, 4), arr(5, 4))),
    "kron": (lambda L, a, b: L.kron(a, b), (arr(2, 3), arr(3, 2))),
    "kron_mixed": (lambda L, a, b: L.kron(a, b), (arr(3), arr(2, 2))),
    "tensordot_int": (lambda L, a, b: L.tensordot(a, b, dims=2), (arr(2, 3, 4), arr(3, 4, 5))),
    "tensordot_lists": (lambda L, a, b: L.tensordot(a, b, dims=([0, 2], [2, 0])), (arr(2, 3, 4), arr(4, 5, 2))),
    # a contracted dim of size 1 broadcasts against the other side's: that side is summed over it
    "tensordot_size1": (lambda L, a, b: L.tensordot(a, b, dims=([0, 1], [2, 0])), (arr(1, 1, 3), arr(2, 4, 2))),
    "tensordot_size1_b": (lambda L, a, b: L.tensordot(a, b, dims=([1], [0])), (arr(2, 3), arr(1, 5))),
    "cross": (lambda L, a, b: L.cross(a, b, dim=1), (arr(4, 3), arr(4, 3))),
    "cdist2": (lambda L, a, b: L.cdist(a, b), (arr(2, 4, 3), arr(2, 5, 3))),
    "cdist1": (lambda L, a, b: L.cdist(a, b, p=1.0), (arr(4, 3), arr(5, 3))),
    "cdist3": (lambda L, a, b: L.cdist(a, b, p=3.0), (arr(4, 3), arr(5, 3))),
    "diag_vec": (lambda L, a: L.diag(a), (arr(4),)),
    "diag_vec_up": (lambda L, a: L.diag(a, 2), (arr(3),)),
    "diag_vec_down": (lambda L, a: L.diag(a, -1), (arr(3),)),
    "diag_mat": (lambda L, a: L.diag(a, 1), (arr(4, 5),)),
    "diagonal": (lambda L, a: a.diagonal(offset=-1, dim1=0, dim2=2), (arr(4, 2, 3),)),
    "trace": (lambda L, a: L.trace(a), (arr(4, 3),)),
}  # fmt: skip


test_products_match_torch_values_and_gradients = torch_case_table_test(
    TORCH_CASES, rtol=1e-10, atol=1e-12, grad_rtol=1e-9
)


test_products_float64_gradients_by_finite_differences = gradcheck_table_test(TORCH_CASES)


def test_products_bad_input_is_refused_clearly():
    with pytest.raises(RuntimeError, match="mv\\(\\): vec must be a 1-D"):
        pyframe.mv(pyframe.zeros(2, 2), pyframe.zeros(2, 2))
    with pytest.raises(RuntimeError, match="size 3"):
        pyframe.cross(pyframe.zeros(2, 4), pyframe.zeros(2, 4))
    with pytest.raises(RuntimeError, match="do not match"):
        pyframe.tensordot(pyframe.zeros(2, 3), pyframe.zeros(2, 3), dims=([1], [1 - 1]))
    with pytest.raises(RuntimeError, match="same dimension"):
        pyframe.zeros(2, 2).diagonal(dim1=1, dim2=1)
    with pytest.raises(RuntimeError, match="1-D or 2-D"):
        pyframe.diag(pyframe.zeros(2, 2, 2))


def test_addr_and_inplace_product_forms():
    a, u, v = pyframe.ones(2, 3), pyframe.tensor([1.0, 2.0]), pyframe.tensor([1.0, 2.0, 3.0])
    np.testing.assert_allclose(npy(pyframe.addr(a, u, v, beta=2, alpha=0.5)), 2 + 0.5 * np.outer([1, 2], [1, 2, 3]))
    out = a.addr_(u, v)
    assert out is a
    np.testing.assert_allclose(npy(a), 1 + np.outer([1, 2], [1, 2, 3]))
    nan = pyframe.full((2, 1), float("nan"))  # beta=0 ignores input, NaN included
    np.testing.assert_allclose(npy(pyframe.addr(nan, u, v, beta=0)), np.outer([1, 2], [1, 2, 3]))
    m = pyframe.tensor([[True, False], [False, False]])
    got = pyframe.addr(m, pyframe.tensor([True, False]), pyframe.tensor([False, True]))
    assert got.dtype == pyframe.bool and got.tolist() == [[True, True], [False, False]]
    with pytest.raises(RuntimeError, match="must not be a floating point"):
        pyframe.addr(pyframe.ones(2, 3, dtype=pyframe.int64), u.long(), v.long(), alpha=0.5)
    with pytest.raises(RuntimeError, match="cannot be broadcast"):
        pyframe.addr(pyframe.ones(3, 3), u, v)
    with pytest.raises(RuntimeError, match="vec1 must be a 1-D"):
        pyframe.addr(a, a, v)
    # addbmm_ as torch's: a tensor that broadcasts to the result is resized to it first
    s = pyframe.tensor(1.0)
    assert s.addbmm_(pyframe.ones(2, 3, 4), pyframe.ones(2, 4, 5)) is s
    assert s.shape == (3, 5) and s.tolist() == [[9.0] * 5] * 3
