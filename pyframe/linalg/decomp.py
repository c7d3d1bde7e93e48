"""Decompositions: qr (Householder), eigh/eigvalsh (cyclic Jacobi), svd/svdvals (one-sided Jacobi).

Forward is one batched C call; backward is torch's formula in pyframe ops beside it. Eigenvectors and
singular vectors are unique only up to sign (and rotation within repeated values): pyframe's may differ
from torch's by those, while the gradients of losses that do not depend on that choice agree."""

from __future__ import annotations

from typing import NamedTuple

from pyframe._backend import NULL, ShapeError, lib
from pyframe.autograd.graph import SavedOutput, needs_grad, record
from pyframe.linalg._common import call, check_matrix, diag_embed, identity_like
from pyframe.linalg.solve import solve_triangular
from pyframe.ops import elementwise as ew
from pyframe.ops.creation import eye, ones, zeros
from pyframe.ops.index import tril, triu
from pyframe.ops.join import cat
from pyframe.ops.products import matmul
from pyframe.tensor import Tensor, empty_tensor

__all__ = ["qr", "geqrf", "ormqr", "householder_product", "eigh", "eigvalsh", "svd", "svdvals"]


class QRResult(NamedTuple):
    """torch.return_types.linalg_qr."""

    Q: Tensor
    R: Tensor


class EighResult(NamedTuple):
    """torch.return_types.linalg_eigh."""

    eigenvalues: Tensor
    eigenvectors: Tensor


class SVDResult(NamedTuple):
    """torch.return_types.linalg_svd."""

    U: Tensor
    S: Tensor
    Vh: Tensor


# ---- QR ---------------------------------------------------------------------------------------------------


def qr(A: Tensor, mode: str = "reduced") -> QRResult:
    """Same as torch.linalg.qr: Householder reflections with LAPACK's signs (R's diagonal may be negative,
    as torch's). ``mode`` is "reduced", "complete" or "r" (Q is then an empty tensor)."""
    fn = "linalg.qr"
    check_matrix(A, fn, square=False)
    if mode not in ("reduced", "complete", "r"):
        raise ValueError(
            f"{fn}: qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    m, n = A.shape[-2], A.shape[-1]
    k = m if mode == "complete" else min(m, n)
    batch = A._shape[:-2]
    R = empty_tensor(batch + (k, n), A.dtype)
    Q = empty_tensor(batch + (m, k) if mode != "r" else (0,), A.dtype)
    call(fn, lib.pf_linalg_qr(A._d(), Q._d() if mode != "r" else NULL, R._d(), int(mode == "complete")))
    if needs_grad(A):
        Qs, Rs = SavedOutput(Q, 0), SavedOutput(R, 1)

        def backward(gQ=None, gR=None):
            if mode == "r":
                raise RuntimeError(
                    "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
                    "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr."
                )
            if mode == "complete" and m > n:
                raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and nrows > ncols.")
            return _qr_backward(gQ, gR, Qs(), Rs(), A)

        record("LinalgQrBackward0", backward, (A,), (Q, R), (Qs, Rs))
    return QRResult(Q, R)


def _qr_backward(gQ, gR, Q: Tensor, R: Tensor, A: Tensor) -> Tensor:
    """torch's linalg_qr_backward. m >= n: gA = (gQ + Q syminvadj(triu(gR R^T - Q^T gQ))) R^-T, where
    syminvadj(X) = X + X^T with the diagonal halved. m < n: A = Q [X | Y] splits into a square QR of X
    and Y = Q V."""
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        X_R = R.narrow(-1, 0, m)
        Y = A.narrow(-1, m, n - m)
        gV = gR.narrow(-1, m, n - m) if gR is not None else None
        gX_R = gR.narrow(-1, 0, m) if gR is not None else None
        gQ2 = gQ
        if gV is not None:
            YgV = matmul(Y, gV.mT)
            gQ2 = YgV if gQ2 is None else ew.add(gQ2, YgV)
        gX = _qr_backward(gQ2, gX_R, Q, X_R, A.narrow(-1, 0, m))
        gY = matmul(Q, gV) if gV is not None else ew.mul(Y, 0.0)
        return cat([gX, gY], -1)
    M = None
    if gR is not None:
        M = matmul(gR, R.mT)
    if gQ is not None:
        QtgQ = matmul(Q.mT, gQ)
        M = ew.neg(QtgQ) if M is None else ew.sub(M, QtgQ)
    M = triu(M)
    S = ew.sub(ew.add(M, M.mT), ew.mul(M, identity_like(M)))  # diagonal counted once
    gA = matmul(Q, S)
    if gQ is not None:
        gA = ew.add(gA, gQ)
    # gA R^-T: solve X R^T = gA with R^T lower triangular
    return solve_triangular(R.mT, gA, upper=False, left=False)


class GeqrfResult(NamedTuple):
    """torch.return_types.geqrf."""

    a: Tensor
    tau: Tensor


def geqrf(input: Tensor) -> GeqrfResult:  # noqa: A002 - torch's name
    """Same as torch.geqrf: LAPACK's compact QR, R on and above the diagonal and the Householder vectors
    below it, with their scales ``tau``. Not differentiable, as torch's."""
    fn = "geqrf"
    check_matrix(input, fn, square=False)
    m, n = input.shape[-2], input.shape[-1]
    h = empty_tensor(input._shape, input.dtype)
    tau = empty_tensor(input._shape[:-2] + (min(m, n),), input.dtype)
    call(fn, lib.pf_linalg_geqrf(input._d(), h._d(), tau._d()))
    if needs_grad(input):

        def backward(*_):
            raise RuntimeError("the derivative for 'geqrf' is not implemented.")

        record("GeqrfBackward0", backward, (input,), (h, tau))
    return GeqrfResult(h, tau)


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """Same as torch.linalg.householder_product: the first k columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^T
    with v_i the i-th column of A below the diagonal and 1 on it. A product of pyframe ops (k small GEMMs),
    so autograd differentiates it by composition."""
    fn = "linalg.householder_product"
    check_matrix(A, fn, square=False)
    if not isinstance(tau, Tensor) or tau.dtype is not A.dtype:
        raise TypeError(f"{fn}: tau must be a tensor of A's dtype {A.dtype.name}")
    n, k = A.shape[-2], A.shape[-1]
    if n < k:
        raise ShapeError(f"{fn}: A must have at least as many rows as columns, got shape {list(A.shape)}")
    if tau.shape[-1] > k or tau.shape[:-1] != A.shape[:-2]:
        raise ShapeError(f"{fn}: tau of shape {list(tau.shape)} does not fit A of shape {list(A.shape)}")
    Id = eye(n, dtype=A.dtype)
    below = tril(ones(n, k, dtype=A.dtype), -1)
    Q = None
    for i in range(tau.shape[-1]):
        v = ew.add(ew.mul(A.select(-1, i), below[:, i]), Id[:, i])  # (..., n)
        H = ew.sub(Id, ew.mul(tau.select(-1, i).unsqueeze(-1).unsqueeze(-1), ew.mul(v.unsqueeze(-1), v.unsqueeze(-2))))
        Q = H if Q is None else matmul(Q, H)
    if Q is None:
        Q = ew.add(ew.mul(A, 0.0), eye(n, k, dtype=A.dtype))
        return Q
    return Q.narrow(-1, 0, k)


def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False) -> Tensor:  # noqa: A002
    """Same as torch.ormqr: ``other`` multiplied by the full orthogonal Q = H_1 ... H_k of ``geqrf``'s
    reflectors (``input``, ``tau``): Q other, Q^T other (``transpose``), or from the right (``left=False``).
    Q is built by :func:`householder_product`, so gradients reach all three arguments by composition."""
    fn = "ormqr"
    check_matrix(input, fn, square=False)
    check_matrix(other, fn, square=False, name="other")
    if not isinstance(tau, Tensor) or tau.dtype is not input.dtype or other.dtype is not input.dtype:
        raise TypeError(f"{fn}: input, tau and other must be tensors of one dtype")
    mn = other.shape[-2] if left else other.shape[-1]
    k = tau.shape[-1]
    if input.shape[-2] != mn:
        raise ShapeError(f"{fn}: input must have {mn} rows to multiply other of shape {list(other.shape)} from the "
                         f"{'left' if left else 'right'}, got shape {list(input.shape)}")  # fmt: skip
    if k > min(mn, input.shape[-1]):
        raise ShapeError(f"{fn}: tau must have at most {min(mn, input.shape[-1])} elements, got {k}")
    V = input.narrow(-1, 0, k)
    if k < mn:  # Q is mn x mn: the reflectors beyond the k-th are the identity
        V = cat([V, zeros(*V.shape[:-1], mn - k, dtype=input.dtype)], -1)
    Q = householder_product(V, tau)
    if transpose:
        Q = Q.mT
    return matmul(Q, other) if left else matmul(other, Q)


# ---- symmetric eigendecomposition ----------------------------------------------------------------------------


def _check_uplo(UPLO: str, fn: str) -> bool:
    if UPLO not in ("L", "U"):
        raise ValueError(f"{fn}: UPLO must be 'L' or 'U', got {UPLO!r}")
    return UPLO == "U"


def _eigh(A: Tensor, UPLO: str, fn: str, vectors: bool) -> tuple[Tensor, Tensor | None]:
    check_matrix(A, fn)
    upper = _check_uplo(UPLO, fn)
    L = empty_tensor(A._shape[:-1], A.dtype)
    V = empty_tensor(A._shape, A.dtype) if vectors else None
    call(fn, lib.pf_linalg_eigh(A._d(), L._d(), V._d() if vectors else NULL, int(upper)))
    return L, V


def _eigh_backward(gL, gV, L: Tensor, V: Tensor) -> Tensor:
    """torch's (hermitian) linalg_eig_backward: gA = V (diag(gL) + skew(V^T gV) / E) V^T with
    skew(X) = (X - X^T) / 2 and E_ij = L_j - L_i off the diagonal; symmetric by construction."""
    inner = None
    if gV is not None:
        X = matmul(V.mT, gV)
        skew = ew.mul(ew.sub(X, X.mT), 0.5)
        E = ew.sub(L.unsqueeze(-2), L.unsqueeze(-1))
        Id = identity_like(E)
        # the diagonal of skew is 0: divide it by 1 instead of 0
        inner = ew.div(skew, ew.add(E, Id))
    if gL is not None:
        D = diag_embed(gL)
        inner = D if inner is None else ew.add(inner, D)
    return matmul(matmul(V, inner), V.mT)


def eigh(A: Tensor, UPLO: str = "L") -> EighResult:
    """Same as torch.linalg.eigh: eigenvalues ascending and orthonormal eigenvectors (columns) of the
    symmetric matrix in A's lower (``UPLO="L"``) or upper triangle, by cyclic Jacobi (bounded sweeps; no
    convergence raises LinAlgError). Eigenvector signs may differ from torch's."""
    fn = "linalg.eigh"
    L, V = _eigh(A, UPLO, fn, True)
    if needs_grad(A):
        Ls, Vs = SavedOutput(L, 0), SavedOutput(V, 1)

        def backward(gL=None, gV=None):
            return _eigh_backward(gL, gV, Ls(), Vs())

        record("LinalgEighBackward0", backward, (A,), (L, V), (Ls, Vs))
    return EighResult(L, V)


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """Same as torch.linalg.eigvalsh: the eigenvalues of :func:`eigh`, ascending."""
    fn = "linalg.eigvalsh"
    grad = needs_grad(A)
    L, V = _eigh(A, UPLO, fn, grad)
    if grad:
        Ls = SavedOutput(L)

        def backward(gL):
            return _eigh_backward(gL, None, Ls(), V)

        record("LinalgEighBackward0", backward, (A,), L, (V,))
    return L


# ---- SVD ----------------------------------------------------------------------------------------------------------


def _svd(A: Tensor, full: bool, vectors: bool, fn: str):
    check_matrix(A, fn, square=False)
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    batch = A._shape[:-2]
    S = empty_tensor(batch + (k,), A.dtype)
    if not vectors:
        call(fn, lib.pf_linalg_svd(A._d(), NULL, S._d(), NULL, 0))
        return None, S, None
    U = empty_tensor(batch + (m, m if full else k), A.dtype)
    Vh = empty_tensor(batch + (n if full else k, n), A.dtype)
    call(fn, lib.pf_linalg_svd(A._d(), U._d(), S._d(), Vh._d(), int(full)))
    return U, S, Vh


def _svd_backward(gU, gS, gVh, U: Tensor, S: Tensor, Vh: Tensor, m: int, n: int) -> Tensor:
    """torch's svd_backward (real case) on the reduced factors."""
    if gU is None and gVh is None:
        return matmul(ew.mul(U, gS.unsqueeze(-2)), Vh)
    Id = identity_like(diag_embed(S))
    S2 = ew.mul(S, S)
    E = ew.add(ew.mul(ew.sub(S2.unsqueeze(-2), S2.unsqueeze(-1)), ew.sub(1.0, Id)), Id)  # 1 on the diagonal
    UhgU = VhgV = None
    if gU is not None:
        X = matmul(U.mT, gU)
        UhgU = ew.sub(X, X.mT)
    if gVh is not None:
        X = matmul(Vh, gVh.mT)
        VhgV = ew.sub(X, X.mT)
    if UhgU is not None and VhgV is not None:
        gA = ew.div(ew.add(ew.mul(UhgU, S.unsqueeze(-2)), ew.mul(S.unsqueeze(-1), VhgV)), E)
    elif UhgU is not None:
        gA = ew.mul(UhgU, ew.div(S.unsqueeze(-2), E))
    else:
        gA = ew.mul(S.unsqueeze(-1), ew.div(VhgV, E))
    if gS is not None:
        gA = ew.add(gA, diag_embed(gS))
    if m > n and gU is not None:
        gA = matmul(U, gA)
        gUSinv = ew.div(gU, S.unsqueeze(-2))
        gA = ew.sub(ew.add(gA, gUSinv), matmul(U, matmul(U.mT, gUSinv)))
        return matmul(gA, Vh)
    if m < n and gVh is not None:
        gA = matmul(gA, Vh)
        SinvgVh = ew.div(gVh, S.unsqueeze(-1))
        gA = ew.sub(ew.add(gA, SinvgVh), matmul(matmul(SinvgVh, Vh.mT), Vh))
        return matmul(U, gA)
    return matmul(matmul(U, gA), Vh)


def svd(A: Tensor, full_matrices: bool = True) -> SVDResult:
    """Same as torch.linalg.svd: A = U diag(S) Vh with S descending, by one-sided Jacobi (bounded sweeps;
    no convergence raises LinAlgError). Singular vectors may differ from torch's in sign. As in torch,
    the gradient uses the first min(m, n) columns of U and rows of Vh only."""
    fn = "linalg.svd"
    U, S, Vh = _svd(A, full_matrices, True, fn)
    if needs_grad(A):
        m, n = A.shape[-2], A.shape[-1]
        k = min(m, n)
        saved = SavedOutput(U, 0), SavedOutput(S, 1), SavedOutput(Vh, 2)

        def backward(gU=None, gS=None, gVh=None):
            U, S, Vh = (t() for t in saved)
            if full_matrices:
                gU = gU.narrow(-1, 0, k) if gU is not None else None
                gVh = gVh.narrow(-2, 0, k) if gVh is not None else None
            Ur = U.narrow(-1, 0, k) if full_matrices else U
            Vhr = Vh.narrow(-2, 0, k) if full_matrices else Vh
            return _svd_backward(gU, gS, gVh, Ur, S, Vhr, m, n)

        record("LinalgSvdBackward0", backward, (A,), (U, S, Vh), saved)
    return SVDResult(U, S, Vh)


def svdvals(A: Tensor) -> Tensor:
    """Same as torch.linalg.svdvals: the singular values, descending."""
    fn = "linalg.svdvals"
    grad = needs_grad(A)
    U, S, Vh = _svd(A, False, grad, fn)
    if grad:
        m, n = A.shape[-2], A.shape[-1]
        Ss = SavedOutput(S)

        def backward(gS):
            return _svd_backward(None, gS, None, U, Ss(), Vh, m, n)

        record("LinalgSvdBackward0", backward, (A,), S, (U, Vh))
    return S
