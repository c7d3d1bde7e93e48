"""linalg.ldl_factor, ldl_factor_ex and ldl_solve (pyframe/linalg/ldl.py, core_c/src/linalg_ldl.c): LD, pivots
and info as torch's (LAPACK's sytrf: every pivoting case of Bunch-Kaufman), solves against torch and against the
matrix, batches and broadcasting, singular inputs and the argument checks."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf

torch = pytest.importorskip("torch")


def _symmetric(rng, *shape):
    a = rng.standard_normal(shape)
    return a + np.swapaxes(a, -1, -2)


# matrices that take each branch: a 1 x 1 pivot in place, a 1 x 1 pivot swapped in (|a_rr| large), a 2 x 2 block
# (zero diagonal), a 2 x 2 block at the end, an all-zero column (info > 0 in the _ex form)
CASES = {
    "random": _symmetric(np.random.default_rng(0), 6, 6),
    "swap1": np.array([[1e-3, 1, 0], [1, 5, 2], [0, 2, 1]]),
    "block2": np.array([[0.0, 1, 2, 0], [1, 0, 3, 1], [2, 3, 0, 4], [0, 1, 4, 0]]),
    "block_last": np.array([[4.0, 1, 0], [1, 0, 2], [0, 2, 0]]),
    "diag": np.diag([3.0, -2.0, 0.5, 7.0]),
    "big": _symmetric(np.random.default_rng(1), 30, 30),
    "empty": np.zeros((0, 0)),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_factor_matches_torch(name, dtype):
    a = CASES[name].astype(dtype)
    tol = 1e-12 if dtype == "float64" else 1e-5
    LD, piv, info = pf.linalg.ldl_factor_ex(pf.tensor(a))
    tLD, tpiv, tinfo = torch.linalg.ldl_factor_ex(torch.tensor(a))
    assert piv.dtype is pf.int32 and info.dtype is pf.int32 and LD.dtype is getattr(pf, dtype)
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    np.testing.assert_allclose(LD.numpy(), tLD.numpy(), rtol=tol, atol=tol)
    assert info.item() == tinfo.item() == 0
    LD2, piv2 = pf.linalg.ldl_factor(pf.tensor(a), hermitian=True)  # the same for real matrices
    np.testing.assert_array_equal(LD2.numpy(), LD.numpy())
    np.testing.assert_array_equal(piv2.numpy(), piv.numpy())


def test_factor_reads_the_lower_triangle_and_reconstructs():
    a = _symmetric(np.random.default_rng(2), 7, 7)
    garbage = np.tril(a) + np.triu(np.full((7, 7), 100.0), 1)
    LD, piv = pf.linalg.ldl_factor(pf.tensor(garbage))
    np.testing.assert_allclose(LD.numpy(), pf.linalg.ldl_factor(pf.tensor(a)).LD.numpy())
    # rebuild A = P L D L^T P^T from the packed form, following LAPACK's ipiv convention
    ld, p = LD.numpy(), piv.numpy()
    n, k = 7, 0
    L, D, perm = np.eye(n), np.zeros((n, n)), np.arange(n)
    while k < n:
        step = 1 if p[k] > 0 else 2
        swap = abs(p[k]) - 1
        r = k + step - 1
        L[[r, swap], :k] = L[[swap, r], :k]  # earlier columns of L see later row swaps
        perm[[r, swap]] = perm[[swap, r]]
        D[k : k + step, k : k + step] = (
            np.tril(ld[k : k + step, k : k + step]) + np.tril(ld[k : k + step, k : k + step], -1).T
        )
        L[k + step :, k : k + step] = ld[k + step :, k : k + step]
        k += step
    P = np.eye(n)[perm].T
    np.testing.assert_allclose(P @ L @ D @ L.T @ P.T, a, atol=1e-12)


def test_solve_matches_torch_and_solves():
    rng = np.random.default_rng(3)
    for name in ("random", "block2", "swap1", "big"):
        a = CASES[name]
        b = rng.standard_normal((a.shape[0], 3))
        LD, piv = pf.linalg.ldl_factor(pf.tensor(a))
        x = pf.linalg.ldl_solve(LD, piv, pf.tensor(b))
        tLD, tpiv = torch.linalg.ldl_factor(torch.tensor(a))
        np.testing.assert_allclose(x.numpy(), torch.linalg.ldl_solve(tLD, tpiv, torch.tensor(b)).numpy(), 1e-9, 1e-11)
        np.testing.assert_allclose(a @ x.numpy(), b, atol=1e-10)
        np.testing.assert_allclose(pf.linalg.ldl_solve(LD, piv.long(), pf.tensor(b)).numpy(), x.numpy())


def test_batches_broadcast_as_torchs():
    rng = np.random.default_rng(4)
    a, b = _symmetric(rng, 3, 5, 5), rng.standard_normal((5, 2))
    LD, piv, info = pf.linalg.ldl_factor_ex(pf.tensor(a))
    tLD, tpiv, _ = torch.linalg.ldl_factor_ex(torch.tensor(a))
    assert info.shape == (3,)
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    for args, targs in (((LD, piv, pf.tensor(b)), (tLD, tpiv, torch.tensor(b))),
                        ((LD[0], piv[0], pf.tensor(rng.standard_normal((4, 5, 2)))), None)):  # fmt: skip
        x = pf.linalg.ldl_solve(*args)
        if targs is not None:
            np.testing.assert_allclose(x.numpy(), torch.linalg.ldl_solve(*targs).numpy(), 1e-9, 1e-11)
        assert x.shape == (3, 5, 2) if targs is not None else x.shape == (4, 5, 2)
    out = pf.empty(0, dtype=pf.float64)
    assert pf.linalg.ldl_solve(LD, piv, pf.tensor(b), out=out) is out and out.shape == (3, 5, 2)


def test_singular_input_reports_info_or_raises():
    z = np.zeros((3, 3))
    LD, piv, info = pf.linalg.ldl_factor_ex(pf.tensor(z))
    tLD, tpiv, tinfo = torch.linalg.ldl_factor_ex(torch.tensor(z))
    assert info.item() == tinfo.item() == 1
    np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
    with pytest.raises(pf.linalg.LinAlgError, match=r"D\[1,1\] of the factorization is exactly zero"):
        pf.linalg.ldl_factor(pf.tensor(z))
    with pytest.raises(pf.linalg.LinAlgError, match="Batch element 1"):
        pf.linalg.ldl_factor_ex(pf.tensor(np.stack([np.eye(2), np.zeros((2, 2))])), check_errors=True)


def test_argument_checks():
    LD, piv = pf.linalg.ldl_factor(pf.tensor(CASES["random"]))
    b = pf.randn(6, 2, dtype=pf.float64)
    with pytest.raises(ValueError, match="square"):
        pf.linalg.ldl_factor(pf.randn(3, 4))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        pf.linalg.ldl_factor(pf.randn(3))
    with pytest.raises(TypeError, match="float32 or float64"):
        pf.linalg.ldl_factor(pf.ones(3, 3, dtype=pf.int64))
    with pytest.raises(ValueError, match="Incompatible matrix sizes"):
        pf.linalg.ldl_solve(LD, piv, pf.randn(4, 2, dtype=pf.float64))
    with pytest.raises(TypeError, match="same dtype"):
        pf.linalg.ldl_solve(LD, piv, b.float())
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        pf.linalg.ldl_solve(LD, piv, pf.randn(6, dtype=pf.float64))
    with pytest.raises(TypeError, match="integer tensor"):
        pf.linalg.ldl_solve(LD, piv.double(), b)
    # pivots no factorization makes are refused by the core, never read out of bounds
    for bad in ([7, 2, 3, 4, 5, 6], [0, 2, 3, 4, 5, 6], [2, 1, 3, 4, 5, 6], [-3, 2, 3, 4, 5, 6], [-1, -1, 3, 4, 5, 6]):
        with pytest.raises(ValueError, match="pivots are not an LDL factorization's"):
            pf.linalg.ldl_solve(LD, pf.tensor(bad, dtype=pf.int32), b)


def test_out_arguments():
    a = pf.tensor(CASES["random"])
    outs = (pf.empty(0, dtype=pf.float64), pf.empty(0, dtype=pf.int32), pf.empty(0, dtype=pf.int32))
    res = pf.linalg.ldl_factor_ex(a, out=outs)
    assert res.LD is outs[0] and res.pivots is outs[1] and res.info is outs[2]
    np.testing.assert_array_equal(res.LD.numpy(), pf.linalg.ldl_factor(a).LD.numpy())
    LD, piv = pf.linalg.ldl_factor(a, out=outs[:2])
    assert LD is outs[0] and piv is outs[1]
