"""LU (linalg.lu_factor, lu_factor_ex, lu, lu_solve; torch.lu, lu_unpack, lu_solve) and torch's top-level
cholesky_solve, cholesky_inverse, triangular_solve: values (LU, pivots, info as LAPACK's getrf) and float64
gradients against torch, for square, wide and tall matrices, batched."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pyframe as pf
import pyframe.linalg as LA

torch = pytest.importorskip("torch")

SHAPES = [(4, 4), (2, 3, 5), (2, 5, 3), (1, 1)]


def _pair(a):
    return pf.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_lu_factor_matches_lapack(shape, rng):
    a = rng.standard_normal(shape)
    for dt in (np.float64, np.float32):
        LU, piv, info = LA.lu_factor_ex(pf.tensor(a.astype(dt)))
        tLU, tpiv, tinfo = torch.linalg.lu_factor_ex(torch.tensor(a.astype(dt)))
        np.testing.assert_allclose(LU.numpy(), tLU.numpy(), rtol=1e-5 if dt is np.float32 else 1e-12, atol=1e-6)
        assert piv.dtype == pf.int32 and info.dtype == pf.int32
        np.testing.assert_array_equal(piv.numpy(), tpiv.numpy())
        np.testing.assert_array_equal(info.numpy(), tinfo.numpy())
    P, L, U = LA.lu(pf.tensor(a))
    np.testing.assert_allclose((P @ L @ U).numpy(), a, atol=1e-12)
    for ours, theirs in zip(pf.lu_unpack(LU, piv), torch.lu_unpack(tLU, tpiv), strict=True):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)


def test_singular_and_unsupported():
    z = pf.zeros(3, 3)
    LU, piv, info = LA.lu_factor_ex(z)
    assert info.item() == 1 and piv.tolist() == [1, 2, 3]
    with pytest.raises(LA.LinAlgError, match=r"U\[1,1\] is zero"):
        LA.lu_factor(z)
    with pytest.raises(LA.LinAlgError, match="Batch element 1"):
        LA.lu_factor(pf.stack([pf.eye(2), pf.zeros(2, 2)]))
    assert pf.lu(z, get_infos=True)[2].item() == 1  # torch.lu does not raise
    with pytest.raises(RuntimeError, match="without pivoting"):
        LA.lu(pf.eye(2), pivot=False)
    with pytest.raises(TypeError, match="int32"):
        pf.lu_unpack(LU, piv.long())


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_lu_gradients_match_torch(shape, rng):
    a = rng.standard_normal(shape)
    A, At = _pair(a)
    P, L, U = LA.lu(A)
    tP, tL, tU = torch.linalg.lu(At)
    wl, wu = rng.standard_normal(tuple(tL.shape)), rng.standard_normal(tuple(tU.shape))
    ((L * pf.tensor(wl)).sum() + (U * pf.tensor(wu)).sum()).backward()
    ((tL * torch.tensor(wl)).sum() + (tU * torch.tensor(wu)).sum()).backward()
    np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), rtol=1e-9, atol=1e-10)
    # only one of L, U used, and lu_factor's packed result
    for pick in (lambda r: r[1].sum(), lambda r: (r[2] ** 2).sum()):
        A, At = _pair(a)
        pick(LA.lu(A)).backward()
        pick(torch.linalg.lu(At)).backward()
        np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), rtol=1e-9, atol=1e-10)
    A, At = _pair(a)
    w = rng.standard_normal(shape)
    (LA.lu_factor(A).LU * pf.tensor(w)).sum().backward()
    (torch.linalg.lu_factor(At).LU * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize(("left", "adjoint"), [(True, False), (True, True), (False, False), (False, True)])
def test_lu_solve_matches_torch_with_gradients(left, adjoint, rng):
    a = rng.standard_normal((2, 4, 4)) + 2 * np.eye(4)
    b = rng.standard_normal((2, 4, 3) if left else (2, 3, 4))
    LU, piv = LA.lu_factor(pf.tensor(a))
    tLU, tpiv = torch.linalg.lu_factor(torch.tensor(a))
    (L1, L2), (B1, B2) = _pair(LU.numpy()), _pair(b)
    X = LA.lu_solve(L1, piv, B1, left=left, adjoint=adjoint)
    tX = torch.linalg.lu_solve(L2, tpiv, B2, left=left, adjoint=adjoint)
    np.testing.assert_allclose(X.detach().numpy(), tX.detach().numpy(), rtol=1e-12, atol=1e-12)
    (X**2).sum().backward()
    (tX**2).sum().backward()
    np.testing.assert_allclose(L1.grad.numpy(), L2.grad.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(B1.grad.numpy(), B2.grad.numpy(), rtol=1e-9, atol=1e-10)
    if left and not adjoint:
        np.testing.assert_array_equal(pf.lu_solve(pf.tensor(b), LU, piv).numpy(), X.detach().numpy())
        np.testing.assert_array_equal(pf.tensor(b).lu_solve(LU, piv).numpy(), X.detach().numpy())


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_and_inverse_match_torch(upper, rng):
    x = rng.standard_normal((2, 3, 3))
    spd = x @ np.swapaxes(x, -1, -2) + 3 * np.eye(3)
    chol = np.linalg.cholesky(spd)
    f = np.swapaxes(chol, -1, -2) if upper else chol
    b = rng.standard_normal((2, 3, 2))
    (F1, F2), (B1, B2) = _pair(f), _pair(b)
    X, tX = pf.cholesky_solve(B1, F1, upper), torch.cholesky_solve(B2, F2, upper)
    np.testing.assert_allclose(X.detach().numpy(), np.linalg.solve(spd, b), rtol=1e-10)
    (X**3).sum().backward()
    (tX**3).sum().backward()
    np.testing.assert_allclose(F1.grad.numpy(), F2.grad.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(B1.grad.numpy(), B2.grad.numpy(), rtol=1e-9, atol=1e-10)
    F1, F2 = _pair(f)
    Inv, tInv = F1.cholesky_inverse(upper), torch.cholesky_inverse(F2, upper)
    np.testing.assert_allclose(Inv.detach().numpy(), np.linalg.inv(spd), rtol=1e-10)
    (Inv**2).sum().backward()
    (tInv**2).sum().backward()
    np.testing.assert_allclose(F1.grad.numpy(), F2.grad.numpy(), rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize(
    ("upper", "transpose", "unit"), [(True, False, False), (False, True, False), (True, True, True)]
)
def test_triangular_solve_matches_torch(upper, transpose, unit, rng):
    a = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    b = rng.standard_normal((2, 3, 2))
    (A1, A2), (B1, B2) = _pair(a), _pair(b)
    X, C = pf.triangular_solve(B1, A1, upper, transpose, unit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation of triangular_solve
        tX, tC = torch.triangular_solve(B2, A2, upper, transpose, unit)
    np.testing.assert_allclose(X.detach().numpy(), tX.detach().numpy(), rtol=1e-12)
    assert tuple(C.shape) == tuple(tC.shape)
    ((X**2).sum() + C.sum()).backward()
    ((tX**2).sum() + tC.sum()).backward()
    np.testing.assert_allclose(A1.grad.numpy(), A2.grad.numpy(), rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(B1.grad.numpy(), B2.grad.numpy(), rtol=1e-9, atol=1e-10)
