"""pyframe.linalg forward results against NumPy's LAPACK (a test oracle only), and its bad-input errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe
import pyframe.linalg as LA
from pyframe import ShapeError


def t(a, dtype=np.float64):
    return pyframe.tensor(np.asarray(a, dtype=dtype))


def well_conditioned(rng, *shape):
    a = rng.standard_normal(shape)
    return a + 3 * np.eye(shape[-1])


def spd(rng, *shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


TOL = {np.float64: 1e-11, np.float32: 2e-5}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_solve_inv_det_match_numpy(rng, dtype):
    A = well_conditioned(rng, 2, 3, 4, 4)
    B = rng.standard_normal((2, 3, 4, 2))
    tol = TOL[dtype]
    X = LA.solve(t(A, dtype), t(B, dtype))
    assert X.dtype == (pyframe.float64 if dtype is np.float64 else pyframe.float32)
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(A.astype(dtype), B.astype(dtype)), rtol=tol, atol=tol)
    np.testing.assert_allclose(LA.inv(t(A, dtype)).numpy(), np.linalg.inv(A), rtol=tol, atol=tol)
    np.testing.assert_allclose(LA.det(t(A, dtype)).numpy(), np.linalg.det(A), rtol=tol * 10)
    sign, logabs = LA.slogdet(t(A, dtype))
    ns, nl = np.linalg.slogdet(A)
    np.testing.assert_array_equal(sign.numpy(), ns)
    np.testing.assert_allclose(logabs.numpy(), nl, rtol=tol, atol=tol)


def test_solve_broadcasts_and_takes_vectors_and_right_sides(rng):
    A = well_conditioned(rng, 2, 1, 3, 3)
    B = rng.standard_normal((4, 3, 2))
    np.testing.assert_allclose(LA.solve(t(A), t(B)).numpy(), np.linalg.solve(A, B), rtol=1e-12, atol=1e-12)
    b = rng.standard_normal(3)
    np.testing.assert_allclose(LA.solve(t(A[0, 0]), t(b)).numpy(), np.linalg.solve(A[0, 0], b), rtol=1e-12)
    Bv = rng.standard_normal((2, 1, 3))  # (..., n) with A's batch: a batch of vectors
    assert LA.solve(t(A), t(Bv)).shape == (2, 1, 3)
    C = rng.standard_normal((5, 3))
    X = LA.solve(t(A[0, 0]), t(C), left=False)  # X A = C
    np.testing.assert_allclose(X.numpy() @ A[0, 0], C, rtol=1e-12, atol=1e-12)
    # strided (transposed) inputs are read in place
    At = t(A[0, 0]).mT
    np.testing.assert_allclose(LA.inv(At).numpy(), np.linalg.inv(A[0, 0].T), rtol=1e-12)


def test_solve_triangular(rng):
    A = well_conditioned(rng, 4, 4)
    B = rng.standard_normal((4, 3))
    for upper in (True, False):
        tri = np.triu(A) if upper else np.tril(A)
        X = LA.solve_triangular(t(A), t(B), upper=upper)
        np.testing.assert_allclose(tri @ X.numpy(), B, atol=1e-12)
        unit = tri - np.diag(np.diag(tri)) + np.eye(4)
        X = LA.solve_triangular(t(A), t(B), upper=upper, unitriangular=True)
        np.testing.assert_allclose(unit @ X.numpy(), B, atol=1e-12)
        X = LA.solve_triangular(t(A), t(B.T), upper=upper, left=False)
        np.testing.assert_allclose(X.numpy() @ tri, B.T, atol=1e-12)


def test_det_of_singular_is_zero_without_error():
    S = t([[1.0, 2.0], [2.0, 4.0]])
    assert LA.det(S).item() == 0.0
    sign, logabs = LA.slogdet(S)
    assert sign.item() == 0.0 and logabs.item() == -math.inf
    assert LA.det(t(np.zeros((0, 0)))).item() == 1.0


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_cholesky(rng, dtype):
    A = spd(rng, 3, 5, 5)
    L = LA.cholesky(t(A, dtype))
    np.testing.assert_allclose(L.numpy(), np.linalg.cholesky(A), rtol=TOL[dtype], atol=TOL[dtype])
    U = LA.cholesky(t(A, dtype), upper=True)
    np.testing.assert_allclose(U.numpy(), np.swapaxes(np.linalg.cholesky(A), -1, -2), rtol=TOL[dtype], atol=TOL[dtype])
    # only the lower triangle is read
    junk = np.triu(np.full((5, 5), 1e3), 1)
    np.testing.assert_allclose(LA.cholesky(t(A + junk, dtype)).numpy(), L.numpy())


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 3, 2)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_matches_lapack_signs(rng, shape, mode):
    A = rng.standard_normal(shape)
    Q, R = LA.qr(t(A), mode=mode)
    nQ, nR = np.linalg.qr(A, mode=mode) if mode != "r" else (None, np.linalg.qr(A, mode="r"))
    np.testing.assert_allclose(R.numpy(), nR, atol=1e-12)
    if mode == "r":
        assert Q.numel() == 0
    else:
        np.testing.assert_allclose(Q.numpy(), nQ, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_eigh(rng, dtype):
    A = rng.standard_normal((3, 6, 6))
    S = A + np.swapaxes(A, -1, -2)
    L, V = LA.eigh(t(np.tril(S), dtype))  # the lower triangle is all it reads
    np.testing.assert_allclose(L.numpy(), np.linalg.eigvalsh(S), rtol=TOL[dtype], atol=TOL[dtype] * 10)
    v = V.numpy().astype(np.float64)
    np.testing.assert_allclose(S @ v, v * L.numpy()[..., None, :], atol=TOL[dtype] * 30)
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(6), v.shape), atol=TOL[dtype] * 10)
    Lu = LA.eigvalsh(t(np.triu(S), dtype), UPLO="U")
    np.testing.assert_allclose(Lu.numpy(), L.numpy(), rtol=TOL[dtype], atol=TOL[dtype])
    # repeated eigenvalues
    L2, V2 = LA.eigh(t(2 * np.eye(4)))
    np.testing.assert_array_equal(L2.numpy(), np.full(4, 2.0))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 5), (2, 3, 1)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(rng, shape, full):
    A = rng.standard_normal(shape)
    U, S, Vh = LA.svd(t(A), full_matrices=full)
    nU, nS, nVh = np.linalg.svd(A, full_matrices=full)
    assert U.shape == nU.shape and S.shape == nS.shape and Vh.shape == nVh.shape
    np.testing.assert_allclose(S.numpy(), nS, rtol=1e-12, atol=1e-12)
    k = S.shape[-1]
    u, vh = U.numpy(), Vh.numpy()
    np.testing.assert_allclose((u[..., :k] * S.numpy()[..., None, :]) @ vh[..., :k, :], A, atol=1e-12)
    np.testing.assert_allclose(
        np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(u.shape[-1]), u.shape[:-2] + (u.shape[-1],) * 2), atol=1e-12
    )
    np.testing.assert_allclose(LA.svdvals(t(A)).numpy(), nS, rtol=1e-12, atol=1e-12)


def test_svd_of_rank_deficient_keeps_orthonormal_factors(rng):
    a = rng.standard_normal((5, 2))
    A = a @ rng.standard_normal((2, 4))  # rank 2
    U, S, Vh = LA.svd(t(A))
    np.testing.assert_allclose(U.numpy().T @ U.numpy(), np.eye(5), atol=1e-12)
    np.testing.assert_allclose(Vh.numpy() @ Vh.numpy().T, np.eye(4), atol=1e-12)
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(A, compute_uv=False), atol=1e-12)


@pytest.mark.parametrize("scale", [0.01, 1.0, 30.0])
def test_matrix_exp(rng, scale):
    A = rng.standard_normal((2, 5, 5))
    S = scale * (A + np.swapaxes(A, -1, -2)) / 4
    w, V = np.linalg.eigh(S)
    expected = (V * np.exp(w)[..., None, :]) @ np.swapaxes(V, -1, -2)
    np.testing.assert_allclose(LA.matrix_exp(t(S)).numpy(), expected, rtol=1e-11)
    # exp of a skew-symmetric matrix is orthogonal; pyframe.matrix_exp and Tensor.matrix_exp are the same op
    K = t(A - np.swapaxes(A, -1, -2))
    Q = pyframe.matrix_exp(K).numpy()
    np.testing.assert_allclose(np.swapaxes(Q, -1, -2) @ Q, np.broadcast_to(np.eye(5), Q.shape), atol=1e-12)
    np.testing.assert_array_equal(K.matrix_exp().numpy(), Q)


def test_norms_match_numpy(rng):
    x = rng.standard_normal((3, 4, 5))
    X = t(x)
    for ord_ in (2, 1, 3.5, math.inf, -math.inf, 0, -1):
        np.testing.assert_allclose(
            LA.vector_norm(X, ord_, dim=-1).numpy(), np.linalg.norm(x, ord_, axis=-1), rtol=1e-12, err_msg=f"{ord_}"
        )
    np.testing.assert_allclose(LA.vector_norm(X).item(), np.linalg.norm(x.ravel()), rtol=1e-12)
    np.testing.assert_allclose(LA.vector_norm(X, dim=(0, 2), keepdim=True).numpy(),
                               np.sqrt((x**2).sum((0, 2), keepdims=True)), rtol=1e-12)  # fmt: skip
    for ord_ in ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf):
        np.testing.assert_allclose(
            LA.matrix_norm(X, ord_).numpy(), np.linalg.norm(x, ord_, axis=(-2, -1)), rtol=1e-11, err_msg=f"{ord_}"
        )
        np.testing.assert_allclose(
            LA.matrix_norm(X, ord_, dim=(0, 2), keepdim=True).numpy(),
            np.linalg.norm(x, ord_, axis=(0, 2), keepdims=True), rtol=1e-11, err_msg=f"{ord_}",
        )  # fmt: skip
    np.testing.assert_allclose(LA.norm(X).item(), np.linalg.norm(x.ravel()), rtol=1e-12)
    np.testing.assert_allclose(LA.norm(t(x[0]), "nuc").item(), np.linalg.norm(x[0], "nuc"), rtol=1e-12)
    np.testing.assert_allclose(LA.norm(X, 1, dim=1).numpy(), np.linalg.norm(x, 1, axis=1), rtol=1e-12)


def test_top_level_names_and_methods(rng):
    A = well_conditioned(rng, 3, 3)
    T = t(A)
    assert pyframe.det(T).item() == T.det().item() == LA.det(T).item()
    np.testing.assert_array_equal(T.inverse().numpy(), pyframe.inverse(T).numpy())
    assert T.slogdet().sign.item() == np.sign(np.linalg.det(A))
    assert issubclass(LA.LinAlgError, RuntimeError)


# ---- bad input ------------------------------------------------------------------------------------------------


def test_singular_matrices_raise_linalg_error_naming_the_batch_element():
    A = np.stack([np.eye(3), [[1.0, 2, 3], [2, 4, 6], [0, 0, 1]]])
    with pytest.raises(LA.LinAlgError, match=r"linalg.solve: \(Batch element 1\).*singular"):
        LA.solve(t(A), t(np.ones((2, 3, 1))))
    with pytest.raises(LA.LinAlgError, match=r"linalg.inv: \(Batch element 1\).*singular"):
        LA.inv(t(A))
    with pytest.raises(RuntimeError, match="singular"):  # torch code catches RuntimeError
        t(A[1]).inverse()
    with pytest.raises(LA.LinAlgError, match="zero"):
        LA.solve_triangular(t(np.zeros((2, 2))), t(np.ones((2, 1))), upper=True)


def test_not_positive_definite():
    with pytest.raises(LA.LinAlgError, match=r"\(Batch element 1\).*not positive-definite.*order 2"):
        LA.cholesky(t([[[1.0, 0], [0, 1]], [[1.0, 2], [2, 1]]]))


@pytest.mark.parametrize(
    "call",
    [
        lambda x: LA.solve(x, x),
        LA.inv,
        LA.det,
        LA.slogdet,
        LA.cholesky,
        LA.qr,
        LA.eigh,
        LA.eigvalsh,
        LA.svd,
        LA.svdvals,
        LA.matrix_exp,
    ],
)
def test_nan_input_raises_instead_of_returning_nan(call):
    x = t([[1.0, 0.5], [float("nan"), 2.0]])  # in the lower triangle, which cholesky and eigh read
    with pytest.raises(LA.LinAlgError, match="NaN or infinity"):
        call(x)
    with pytest.raises(LA.LinAlgError, match="NaN or infinity"):
        call(t([[1.0, 0.0], [0.0, float("inf")]], np.float32))


@pytest.mark.parametrize("call", [LA.inv, LA.det, LA.slogdet, LA.cholesky, LA.eigh, LA.matrix_exp])
def test_shape_and_dtype_errors(call):
    with pytest.raises(ShapeError, match="square"):
        call(t(np.ones((2, 3))))
    with pytest.raises(ShapeError, match="at least 2 dimensions"):
        call(t(np.ones(3)))
    with pytest.raises(TypeError, match="float32 or float64, got int64"):
        call(pyframe.tensor([[1, 0], [0, 1]]))
    with pytest.raises(TypeError, match="float32 or float64, got float16"):
        call(pyframe.eye(2, dtype=pyframe.float16))
    with pytest.raises(TypeError, match="must be a Tensor"):
        call([[1.0, 0.0], [0.0, 1.0]])


def test_argument_errors():
    A = t(np.eye(3))
    with pytest.raises(ShapeError, match="incompatible shapes"):
        LA.solve(A, t(np.ones((4, 1))))
    with pytest.raises(TypeError, match="same dtype"):
        LA.solve(A, t(np.ones((3, 1)), np.float32))
    with pytest.raises(ValueError, match="mode"):
        LA.qr(A, mode="economic")
    with pytest.raises(ValueError, match="UPLO"):
        LA.eigh(A, UPLO="X")
    with pytest.raises(ValueError, match="order"):
        LA.matrix_norm(A, 3)
    with pytest.raises(LA.LinAlgError, match="overflows"):
        LA.matrix_exp(t(np.diag([800.0, 1.0])))


def test_geqrf_and_householder_product_match_lapack(rng):
    A = rng.standard_normal((5, 3))
    h, tau = pyframe.geqrf(t(A))
    nh, ntau = np.linalg.qr(A, mode="raw")  # LAPACK's geqrf, column-major
    np.testing.assert_allclose(h.numpy(), nh.T, atol=1e-12)
    np.testing.assert_allclose(tau.numpy(), ntau, atol=1e-12)
    np.testing.assert_allclose(LA.householder_product(h, tau).numpy(), np.linalg.qr(A)[0], atol=1e-12)
    with pytest.raises(ShapeError, match="at least as many rows"):
        LA.householder_product(t(A.T), tau)


# ---- derived: pinv, matrix_rank, lstsq, cond, multi_dot, logdet ----------------------------------------------


def test_pinv_and_matrix_rank(rng):
    A = rng.standard_normal((2, 5, 3))
    np.testing.assert_allclose(LA.pinv(t(A)).numpy(), np.linalg.pinv(A), atol=1e-12)
    low = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))  # rank 2
    np.testing.assert_allclose(LA.pinv(t(low)).numpy(), np.linalg.pinv(low), atol=1e-10)
    assert LA.matrix_rank(t(low)).item() == 2 and LA.matrix_rank(t(A)).tolist() == [3, 3]
    assert LA.matrix_rank(t(low), atol=1e3).item() == 0
    assert LA.matrix_rank(t(low)).dtype == pyframe.int64


def test_lstsq(rng):
    A, B = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    sol, res, rank, sv = LA.lstsq(t(A), t(B), driver="gelsd")  # residuals: not from gelsy, torch's default
    nsol, nres, nrank, nsv = np.linalg.lstsq(A, B, rcond=None)
    np.testing.assert_allclose(sol.numpy(), nsol, atol=1e-12)
    np.testing.assert_allclose(res.numpy(), nres, atol=1e-12)
    np.testing.assert_allclose(sv.numpy(), nsv, atol=1e-12)
    assert rank.item() == nrank == 3
    assert LA.lstsq(t(A), t(B)).residuals.numel() == 0 and LA.lstsq(t(A), t(B)).singular_values.numel() == 0
    wide = rng.standard_normal((2, 4))  # underdetermined: the minimum-norm solution, no residuals
    sol, res, _, _ = LA.lstsq(t(wide), t(B[:2]))
    np.testing.assert_allclose(sol.numpy(), np.linalg.lstsq(wide, B[:2], rcond=None)[0], atol=1e-12)
    assert res.numel() == 0
    assert LA.lstsq(t(A), t(B[:, 0])).solution.shape == (3,)


def test_cond_multi_dot_logdet(rng):
    A = rng.standard_normal((3, 3)) + 2 * np.eye(3)
    for p in (None, 2, -2, "fro", "nuc", 1, -1, np.inf, -np.inf):
        np.testing.assert_allclose(LA.cond(t(A), p).item(), np.linalg.cond(A, p), rtol=1e-10, err_msg=str(p))
    mats = [rng.standard_normal(s) for s in ((4,), (4, 3), (3, 5), (5,))]
    np.testing.assert_allclose(LA.multi_dot([t(m) for m in mats]).item(), np.linalg.multi_dot(mats), rtol=1e-12)
    with pytest.raises(ShapeError, match="tensor 1 must be 2D"):
        LA.multi_dot([t(mats[0]), t(mats[0]), t(mats[1])])
    S = spd(rng, 2, 3, 3)
    np.testing.assert_allclose(pyframe.logdet(t(S)).numpy(), np.linalg.slogdet(S)[1], rtol=1e-12)
    assert t(S[0]).logdet().item() == pyframe.logdet(t(S[0])).item()
    neg = np.stack([np.eye(2), np.diag([1.0, -1.0])])
    with pytest.raises(LA.LinAlgError, match=r"\(Batch element 1\).*negative"):
        pyframe.logdet(t(neg))
    assert pyframe.logdet(t(np.zeros((2, 2)))).item() == -math.inf


def test_lstsq_drivers_return_what_torchs_do(rng):
    torch = pytest.importorskip("torch")
    for shape in ((4, 3), (2, 3), (3, 3)):
        a, b = rng.standard_normal(shape), rng.standard_normal((shape[0], 2))
        for driver in ("gels", "gelsy", "gelsd", "gelss"):
            ours = LA.lstsq(t(a), t(b), driver=driver)
            theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
            for o, th in zip(ours, theirs, strict=True):
                assert tuple(o.shape) == tuple(th.shape), (shape, driver)
                np.testing.assert_allclose(o.numpy(), th.numpy(), rtol=1e-9, atol=1e-10)


def test_ormqr_norm_nuc_and_lowrank(rng):
    torch = pytest.importorskip("torch")
    for shape, other, left in (((5, 3), (5, 2), True), ((5, 3), (2, 5), False), ((3, 5), (3, 4), True)):
        a, c = rng.standard_normal(shape), rng.standard_normal(other)
        h, tau = pyframe.geqrf(t(a))
        th, ttau = torch.geqrf(torch.tensor(a))
        for transpose in (False, True):
            ours = pyframe.ormqr(h, tau, t(c), left, transpose).numpy()
            np.testing.assert_allclose(
                ours, torch.ormqr(th, ttau, torch.tensor(c), left, transpose).numpy(), atol=1e-12
            )
    x = rng.standard_normal((2, 4, 3))
    assert pyframe.norm(t(x), "nuc", dim=(1, 2)).numpy() == pytest.approx(np.linalg.norm(x, "nuc", axis=(1, 2)))
    assert t(x[0]).norm(p="nuc").item() == pytest.approx(np.linalg.norm(x[0], "nuc"))
    np.testing.assert_allclose(pyframe.norm(t(x), -2, dim=2).numpy(), np.sum(np.abs(x) ** -2, 2) ** -0.5)
    with pytest.raises(RuntimeError, match="2-tuple"):
        pyframe.norm(t(x), "nuc")
    low = rng.standard_normal((30, 4)) @ rng.standard_normal((4, 20))  # rank 4
    U, S, V = pyframe.svd_lowrank(t(low), q=6)
    np.testing.assert_allclose((U * S.unsqueeze(-2) @ V.mT).numpy(), low, atol=1e-9)
    U, S, V = pyframe.pca_lowrank(t(low), q=5)
    np.testing.assert_allclose(S.numpy()[:4], np.linalg.svd(low - low.mean(0), compute_uv=False)[:4], rtol=1e-9)


def test_pinv_and_matrix_rank_hermitian_read_the_lower_triangle(rng):
    torch = pytest.importorskip("torch")
    a = rng.standard_normal((2, 4, 4))  # not symmetric: hermitian=True reads the lower triangle, as torch's
    a[0, :, 3] = a[0, :, 2]  # and a rank-deficient one
    a[0, 3, :] = a[0, 2, :]
    A, At = pyframe.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    P, Pt = LA.pinv(A, hermitian=True), torch.linalg.pinv(At, hermitian=True)
    np.testing.assert_allclose(P.detach().numpy(), Pt.detach().numpy(), atol=1e-10)
    w = rng.standard_normal((2, 4, 4))
    (P * pyframe.tensor(w)).sum().backward()
    (Pt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(A.grad.numpy(), At.grad.numpy(), atol=1e-9)
    ranks = LA.matrix_rank(pyframe.tensor(a), hermitian=True).tolist()
    assert ranks == torch.linalg.matrix_rank(torch.tensor(a), hermitian=True).tolist()


def test_cholesky_ex_reports_info_instead_of_raising():
    torch = pytest.importorskip("torch")
    spd = np.array([[4.0, 2.0, 0.0], [2.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    bad = np.array([[2.0, 1.0, 0.0], [1.0, -3.0, 0.0], [0.0, 0.0, 1.0]])
    nan = np.diag([1.0, np.nan, 1.0])
    batch = np.stack([spd, bad, nan, -np.eye(3)])
    for upper in (False, True):
        got = LA.cholesky_ex(pyframe.tensor(batch), upper=upper)
        want = torch.linalg.cholesky_ex(torch.tensor(batch), upper=upper)
        assert got.info.dtype == pyframe.int32 and got.info.tolist() == want.info.tolist() == [0, 2, 2, 1]
        # the factor where it completed and the columns before the failing minor, as LAPACK's
        np.testing.assert_allclose(got.L.numpy()[0], want.L.numpy()[0], rtol=1e-12)
        first = (lambda m: m[0]) if upper else (lambda m: m[:, 0])
        np.testing.assert_allclose(first(got.L.numpy()[1]), first(want.L.numpy()[1]), rtol=1e-12)
    L, info = LA.cholesky_ex(pyframe.tensor(bad))
    assert info.ndim == 0 and info.item() == 2
    with pytest.raises(LA.LinAlgError, match=r"\(Batch element 1\).*leading minor of order 2"):
        LA.cholesky_ex(pyframe.tensor(batch), check_errors=True)
    a = pyframe.tensor(spd, requires_grad=True)  # gradients as cholesky's
    LA.cholesky_ex(a).L.sum().backward()
    b = pyframe.tensor(spd, requires_grad=True)
    LA.cholesky(b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)
