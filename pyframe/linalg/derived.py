"""Functions built on the factorizations: det and slogdet (one LU call each, with their own backward, whose
singular case needs the SVD), and pinv, matrix_rank, lstsq, cond, multi_dot, logdet, which carry no derivative
code of their own; autograd differentiates the composition (svd, solve, matmul)."""

from __future__ import annotations

from typing import NamedTuple

from pyframe import _dtype
from pyframe._backend import NULL, ShapeError, lib
from pyframe.autograd.graph import SavedOutput, needs_grad, record
from pyframe.linalg._common import LinAlgError, call, check_matrix, check_same_dtype
from pyframe.linalg.decomp import eigh, svd, svdvals
from pyframe.linalg.norms import matrix_norm
from pyframe.linalg.solve import inv
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.ops.join import cat, stack
from pyframe.ops.products import matmul
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "pinv", "matrix_rank", "lstsq", "cond", "multi_dot", "logdet", "det", "slogdet",
]  # fmt: skip

_EPS = {_dtype.float32: 2.0**-23, _dtype.float64: 2.0**-52}


def _tolerance(A: Tensor, S: Tensor, atol, rtol) -> Tensor:
    """torch's cut-off: max(atol, rtol * largest singular value), rtol defaulting to eps * max(m, n)
    when neither is given (and to 0 when only atol is)."""
    if rtol is None:
        rtol = _EPS[A.dtype] * max(A.shape[-2], A.shape[-1]) if atol is None else 0.0
    smax = rd.amax(S.detach(), -1, True) if S.shape[-1] else ew.mul(S.detach().sum(-1, keepdim=True), 0.0)
    tol = ew.mul(smax, float(rtol))
    return ew.maximum(tol, ew.add(ew.mul(tol, 0.0), float(atol or 0.0)))


def pinv(A: Tensor, *, atol: float | None = None, rtol: float | None = None, hermitian: bool = False) -> Tensor:
    """Same as torch.linalg.pinv: V diag(1/s) U^T over the singular values above the cut-off (see
    :func:`matrix_rank`); with ``hermitian`` A is read as the symmetric matrix of its lower triangle and
    inverted through ``eigh`` (U diag(1/w) U^T over the eigenvalues with |w| above the cut-off), as torch's."""
    check_matrix(A, "linalg.pinv", square=hermitian)
    if hermitian:
        W, V = eigh(A.detach())
        absw = ew.abs(W)
        keep = ew.gt(absw, _tolerance(A, absw, atol, rtol))
        w_inv = ew.where(keep, ew.reciprocal(ew.where(keep, W, 1.0)), 0.0)
        P = matmul(ew.mul(V, w_inv.unsqueeze(-2)), V.mT)
        if needs_grad(A):
            Ps = SavedOutput(P)
            record("LinalgPinvBackward0", lambda g: _pinv_backward(g, Ps(), A), (A,), P, (A, Ps))
        return P
    U, S, Vh = svd(A, full_matrices=False)
    keep = ew.gt(S.detach(), _tolerance(A, S, atol, rtol))
    safe = ew.where(keep, S, 1.0)  # 1/s only where kept: no inf (or NaN gradient) from dropped values
    s_inv = ew.where(keep, ew.reciprocal(safe), 0.0)
    return matmul(ew.mul(Vh.mT, s_inv.unsqueeze(-2)), U.mT)


def _pinv_backward(g: Tensor, P: Tensor, A: Tensor) -> Tensor:
    """torch's pinv_backward: the derivative of the pseudo-inverse P of the full matrix A (which is what torch
    differentiates for ``hermitian=True`` too, whose forward reads A's lower triangle only)."""
    Ph, gh = P.mT, g.mT
    K = matmul(gh, P)
    KPh = matmul(K, Ph)
    out = ew.sub(KPh, matmul(P, K).mT)
    out = ew.sub(out, matmul(matmul(A, P), KPh))
    return ew.add(out, matmul(matmul(Ph, P), ew.sub(gh, matmul(K, A))))


def matrix_rank(A: Tensor, *, atol: float | None = None, rtol: float | None = None, hermitian: bool = False) -> Tensor:
    """Same as torch.linalg.matrix_rank: the number of singular values above max(atol, rtol * s_max)
    (int64); with ``hermitian`` the |eigenvalues| of the symmetric matrix of A's lower triangle, as torch's."""
    check_matrix(A, "linalg.matrix_rank", square=hermitian)
    S = ew.abs(eigh(A.detach())[0]) if hermitian else svdvals(A.detach())
    return rd.sum(ew.gt(S, _tolerance(A, S, atol, rtol)).to(_dtype.int64), -1)


class LstsqResult(NamedTuple):
    """torch.return_types.linalg_lstsq."""

    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> LstsqResult:
    """Same as torch.linalg.lstsq (CPU drivers; "gelsy" by default): the minimum-norm least-squares solution
    (here through the pseudo-inverse, singular values below ``rcond`` times the largest dropped); ``rank``
    for every driver but "gels"; the residuals' squared norms for "gels", "gelsd" and "gelss" when m > n and
    every matrix has full rank (else empty); ``singular_values`` for "gelsd" and "gelss" (else empty).
    B may be a vector (..., m)."""
    fn = "linalg.lstsq"
    check_matrix(A, fn, square=False)
    check_same_dtype(A, B, fn)
    if driver not in (None, "gels", "gelsy", "gelsd", "gelss"):
        raise ValueError(f"{fn}: driver must be one of gels, gelsy, gelsd, gelss, got {driver!r}")
    driver = driver or "gelsy"
    vector = B.ndim == A.ndim - 1
    B2 = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if B2.ndim < 2 or B2.shape[-2] != m:
        raise ShapeError(f"{fn}: A of shape {list(A.shape)} and B of shape {list(B.shape)} need the same rows")
    rtol = _EPS[A.dtype] * max(m, n) if rcond is None else rcond
    X = matmul(pinv(A, rtol=rtol), B2)
    rank = matrix_rank(A, rtol=rtol)
    # empty results that torch still connects to the graph (residuals require grad when X does)
    residuals = X.reshape(-1)[:0]
    if driver != "gelsy" and m > n and bool(rd.all(ew.eq(rank, n))):
        R = ew.sub(matmul(A, X), B2)
        residuals = rd.sum(ew.mul(R, R), -2)
        if vector:
            residuals = residuals.squeeze(-1)
    S = svdvals(A.detach()) if driver in ("gelsd", "gelss") else empty_tensor((0,), A.dtype)
    if driver == "gels":
        rank = empty_tensor((0,), _dtype.int64)
    return LstsqResult(X.squeeze(-1) if vector else X, residuals, rank, S)


def cond(A: Tensor, p=None) -> Tensor:
    """Same as torch.linalg.cond: s_max / s_min for p None or 2 (s_min / s_max for -2); otherwise
    matrix_norm(A, p) * matrix_norm(inv(A), p), where a singular A raises LinAlgError."""
    check_matrix(A, "linalg.cond", square=p not in (None, 2, -2))
    if p in (None, 2, -2):
        S = svdvals(A)
        big, small = rd.amax(S, -1), rd.amin(S, -1)
        return ew.div(big, small) if p != -2 else ew.div(small, big)
    return ew.mul(matrix_norm(A, p), matrix_norm(inv(A), p))


def multi_dot(tensors) -> Tensor:
    """Same as torch.linalg.multi_dot: the chained product, the first tensor may be 1-D (a row vector) and
    the last 1-D (a column vector); the others are matrices. Multiplied left to right."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise ValueError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"multi_dot(): argument {i} must be a Tensor, got {type(t).__name__}")
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            raise ShapeError(
                f"multi_dot(): tensor {i} must be {' or '.join(f'{d}D' for d in allowed)} but got {t.ndim}D"
            )
    out = tensors[0]
    for t in tensors[1:]:
        out = matmul(out, t)
    return out


def logdet(A: Tensor) -> Tensor:
    """Same as torch.logdet, except that a negative determinant raises LinAlgError naming the batch element
    where torch returns nan (its log is not real; slogdet gives sign and log|det|). A singular matrix
    gives -inf, as torch."""
    sign, logabs = slogdet(A)
    negative = ew.lt(sign, 0.0)
    if bool(rd.any(negative)):
        flat = negative.reshape(-1)
        first = next(i for i in range(flat.numel()) if bool(flat[i]))
        where = f"(Batch element {first}): " if A.ndim > 2 else ""
        raise LinAlgError(
            f"logdet: {where}the determinant is negative, so its log is not real (torch returns nan); "
            "use slogdet for the sign and log|det|"
        )
    return logabs


def det(A: Tensor) -> Tensor:
    """Same as torch.linalg.det (and torch.det): by LU; a singular matrix has det 0 and its gradient (the
    adjugate) comes from an SVD, as torch's."""
    fn = "linalg.det"
    check_matrix(A, fn)
    d = empty_tensor(A._shape[:-2], A.dtype)
    call(fn, lib.pf_linalg_det(A._d(), d._d(), NULL, NULL))
    if needs_grad(A):
        ds = SavedOutput(d)

        def backward(g):
            return _det_grad(A, ds(), g)

        record("LinalgDetBackward0", backward, (A,), d, (A, ds))
    return d


def _det_grad(A: Tensor, d: Tensor, g: Tensor) -> Tensor:
    """d det / dA = adj(A)^T: det * A^-T when A is invertible; otherwise, with A = U S Vh,
    det(U) det(Vh) U diag(prod_{j != i} s_j) Vh, which holds for every A."""
    scale = ew.mul(g, d).unsqueeze(-1).unsqueeze(-1)
    if bool(rd.all(ew.ne(d.detach(), 0.0))):
        return ew.mul(scale, inv(A).mT)

    U, S, Vh = svd(A, full_matrices=False)
    n = S.shape[-1]
    others = [rd.prod(cat([S.narrow(-1, 0, i), S.narrow(-1, i + 1, n - 1 - i)], -1), -1) for i in range(n)]
    p = stack(others, -1)
    sign = ew.mul(det(U.detach()), det(Vh.detach()))
    return ew.mul(ew.mul(g, sign).unsqueeze(-1).unsqueeze(-1), matmul(ew.mul(U, p.unsqueeze(-2)), Vh))


class SlogdetResult(NamedTuple):
    """torch.return_types.linalg_slogdet."""

    sign: Tensor
    logabsdet: Tensor


def slogdet(A: Tensor) -> SlogdetResult:
    """Same as torch.linalg.slogdet: (sign, log|det|); a singular matrix gives (0, -inf). The gradient
    flows through logabsdet (A^-T), as torch's."""
    fn = "linalg.slogdet"
    check_matrix(A, fn)
    sign = empty_tensor(A._shape[:-2], A.dtype)
    logabs = empty_tensor(A._shape[:-2], A.dtype)
    call(fn, lib.pf_linalg_det(A._d(), NULL, sign._d(), logabs._d()))
    if needs_grad(A):

        def backward(gsign=None, glogabs=None):
            if glogabs is None:
                return None
            return ew.mul(glogabs.unsqueeze(-1).unsqueeze(-1), inv(A).mT)

        # the sign is piecewise constant: it requires grad (as torch's) but only logabsdet carries one
        record("LinalgSlogdetBackward0", backward, (A,), (sign, logabs), (A,))
    return SlogdetResult(sign, logabs)
