"""torch.svd_lowrank and torch.pca_lowrank: Halko, Martinsson and Tropp's randomized SVD (arXiv:0909.4061,
algorithms 4.4 and 5.1) as torch writes it, composed of pyframe's randn, matmul, qr and svd (dense tensors;
differentiable through them)."""

from __future__ import annotations

from pyframe.linalg._common import check_matrix
from pyframe.linalg.decomp import qr, svd
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.ops.products import matmul
from pyframe.ops.random import randn
from pyframe.tensor import Tensor

__all__ = ["svd_lowrank", "pca_lowrank"]


def _approximate_basis(A: Tensor, q: int, niter: int, M: Tensor | None) -> Tensor:
    """Q (..., m, q) with orthonormal columns such that Q Q^T (A - M) approximates A - M (subspace iteration
    from a Gaussian start)."""

    def times(X):
        return matmul(A, X) if M is None else ew.sub(matmul(A, X), matmul(M, X))

    def times_t(X):
        return matmul(A.mT, X) if M is None else ew.sub(matmul(A.mT, X), matmul(M.mT, X))

    Q = qr(times(randn(A.shape[-1], q, dtype=A.dtype))).Q
    for _ in range(niter):
        Q = qr(times_t(Q)).Q
        Q = qr(times(Q)).Q
    return Q


def _svd_lowrank(A: Tensor, q: int, niter: int, M: Tensor | None):
    m, n = A.shape[-2], A.shape[-1]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A = A.mT
        M = None if M is None else M.mT
    Q = _approximate_basis(A, q, niter, M)
    B = matmul(Q.mT, A) if M is None else ew.sub(matmul(Q.mT, A), matmul(Q.mT, M))
    U, S, Vh = svd(B, full_matrices=False)
    U, V = matmul(Q, U), Vh.mT
    return (V, S, U) if m < n else (U, S, V)


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int | None = 2, M: Tensor | None = None):
    """Same as torch.svd_lowrank: ``(U, S, V)`` with A - M approximately U diag(S) V^T, from a randomized
    subspace of ``q`` columns refined by ``niter`` power iterations (draws from pyframe's generator)."""
    check_matrix(A, "svd_lowrank", square=False)
    return _svd_lowrank(A, 6 if q is None else q, 2 if niter is None else niter, M)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2):
    """Same as torch.pca_lowrank: ``svd_lowrank`` of A with its column means subtracted (``center``);
    ``q`` defaults to min(6, m, n)."""
    check_matrix(A, "pca_lowrank", square=False)
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter, None)
    return _svd_lowrank(ew.sub(A, rd.mean(A, -2, keepdim=True)), q, niter, None)
