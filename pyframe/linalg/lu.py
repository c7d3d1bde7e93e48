"""LU: linalg.lu_factor(_ex), linalg.lu, linalg.lu_solve and torch's lu, lu_unpack, lu_solve.

The factorization is one batched C call (LAPACK's getrf: partial pivoting, the first largest entry of each
column); P, L and U are unpacked from it with pyframe ops, and lu_solve is two triangular solves after the
row permutation, so its gradients (to B and to the packed LU) are those of the composition, as torch's.
linalg.lu's backward is torch's formula (square, wide and tall cases), and lu_factor's goes through it."""

from __future__ import annotations

from typing import NamedTuple

from pyframe import _dtype
from pyframe._backend import ShapeError, lib
from pyframe.autograd.graph import SavedOutput, needs_grad, record
from pyframe.linalg._common import LinAlgError, call, check_matrix, check_same_dtype
from pyframe.linalg.solve import solve_triangular
from pyframe.ops import elementwise as ew
from pyframe.ops.creation import eye, tensor, zeros
from pyframe.ops.index import tril, triu
from pyframe.ops.join import cat
from pyframe.ops.products import matmul
from pyframe.tensor import Tensor, empty_tensor

__all__ = ["lu_factor", "lu_factor_ex", "lu", "lu_solve", "lu_unpack"]


class LUFactorResult(NamedTuple):
    """torch.return_types.linalg_lu_factor."""

    LU: Tensor
    pivots: Tensor


class LUFactorExResult(NamedTuple):
    """torch.return_types.linalg_lu_factor_ex."""

    LU: Tensor
    pivots: Tensor
    info: Tensor


class LUResult(NamedTuple):
    """torch.return_types.linalg_lu (and lu_unpack)."""

    P: Tensor
    L: Tensor
    U: Tensor


def _check_pivot(pivot: bool, fn: str) -> None:
    if not pivot:
        raise RuntimeError(f"{fn}: LU without pivoting is not implemented on the CPU")


def _factor(A: Tensor, fn: str) -> tuple[Tensor, Tensor, Tensor]:
    """The packed LU, int32 pivots and int32 info of A, without autograd."""
    check_matrix(A, fn, square=False)
    m, n = A.shape[-2], A.shape[-1]
    batch = A._shape[:-2]
    LU = empty_tensor(A._shape, A.dtype)
    piv = empty_tensor(batch + (min(m, n),), A.dtype)
    info = empty_tensor(batch, A.dtype)
    call(fn, lib.pf_linalg_lu_factor(A._d(), LU._d(), piv._d(), info._d()))
    return LU, piv.to(_dtype.int32), info.to(_dtype.int32)


def _permutation(pivots: Tensor, m: int) -> Tensor:
    """P (..., m, m) with A = P L U, from LAPACK's sequential row swaps (1-based)."""
    batch = tuple(pivots.shape[:-1])
    flat = pivots.reshape(-1, pivots.shape[-1]).tolist() if pivots.numel() else [[] for _ in range(_prod(batch))]
    perms = []
    for swaps in flat:
        perm = list(range(m))
        for i, p in enumerate(swaps):
            if not 1 <= p <= m:
                raise RuntimeError(f"lu_unpack: pivots must be between 1 and {m}, got {p}")
            perm[i], perm[p - 1] = perm[p - 1], perm[i]
        perms.append(perm)
    index = tensor(perms, dtype=_dtype.int64).reshape(*batch, m) if perms else zeros(*batch, m, dtype=_dtype.int64)
    return eye(m, dtype=_dtype.float64)[index].mT  # P^T's rows are the identity's, permuted


def _prod(shape) -> int:
    out = 1
    for s in shape:
        out *= s
    return out


def _unpack(LU: Tensor) -> tuple[Tensor, Tensor]:
    """L (..., m, k) unit lower and U (..., k, n) upper from the packed LU, differentiable."""
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    L = ew.add(tril(LU[..., :, :k], -1), eye(m, k, dtype=LU.dtype))
    return L, triu(LU[..., :k, :])


def _lu_backward(gL, gU, P: Tensor, L: Tensor, U: Tensor) -> Tensor:
    """torch's linalg_lu_backward: the gradient of A = P L U given those of L and U (either may be None)."""
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if gL is None and gU is None:
        return zeros(*P.shape[:-2], m, n, dtype=L.dtype)
    if m == n:
        gA = tril(matmul(L.mT, gL), -1) if gL is not None else None
        if gU is not None:
            t = triu(matmul(gU, U.mT))
            gA = t if gA is None else ew.add(gA, t)
        gA = solve_triangular(U.mT, gA, upper=False, left=False)
        gA = solve_triangular(L.mT, gA, upper=True, unitriangular=True)
    elif m < n:  # wide: U = [U1 | U2], U1 k x k
        gA = matmul(L.mT, gL) if gL is not None else None
        if gU is not None:
            t = matmul(triu(gU), U.mT)
            gA = ew.neg(t) if gA is None else ew.sub(gA, t)
        gA = solve_triangular(U[..., :, :k].mT, tril(gA, -1), upper=False, left=False)
        if gU is not None:
            gA = cat([ew.add(gA, triu(gU[..., :, :k])), gU[..., :, k:]], -1)
        gA = solve_triangular(L.mT, gA, upper=True, unitriangular=True)
        if gU is None:
            gA = cat([gA, zeros(*gA.shape[:-1], n - k, dtype=gA.dtype)], -1)
    else:  # tall: L = [L1; L2], L1 k x k
        gA = matmul(gU, U.mT) if gU is not None else None
        if gL is not None:
            t = matmul(L.mT, tril(gL, -1))
            gA = ew.neg(t) if gA is None else ew.sub(gA, t)
        gA = solve_triangular(L[..., :k, :].mT, triu(gA), upper=True, unitriangular=True)
        if gL is not None:
            gA = cat([ew.add(gA, tril(gL[..., :k, :], -1)), gL[..., k:, :]], -2)
        gA = solve_triangular(U.mT, gA, upper=False, left=False)
        if gL is None:
            gA = cat([gA, zeros(*gA.shape[:-2], m - k, gA.shape[-1], dtype=gA.dtype)], -2)
    return matmul(P, gA)


def _record_factor(A: Tensor, LU: Tensor, pivots: Tensor) -> None:
    """lu_factor's gradient: torch's lu_factor_ex_backward (L's from LU's first k columns, U's from its
    first k rows) through _lu_backward."""
    m, n = A.shape[-2], A.shape[-1]
    k = min(m, n)
    P = _permutation(pivots, m).to(A.dtype)
    L, U = _unpack(LU.detach())

    def backward(g):
        return (_lu_backward(g[..., :, :k], g[..., :k, :], P, L, U),)

    record("LinalgLuFactorExBackward0", backward, (A,), LU, (SavedOutput(LU),))  # LU itself: a cycle via the node


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> LUFactorExResult:
    """Same as torch.linalg.lu_factor_ex: the packed LU (U on and above the diagonal, L below), LAPACK's
    1-based int32 pivots and ``info`` (the 1-based index of the first exactly zero pivot, 0 when none)."""
    fn = "linalg.lu_factor_ex"
    _check_pivot(pivot, fn)
    LU, piv, info = _factor(A, fn)
    if check_errors:
        _raise_singular(info, "torch.linalg.lu_factor_ex")
    if needs_grad(A):
        _record_factor(A, LU, piv)
    return LUFactorExResult(LU, piv, info)


def _raise_singular(info: Tensor, fn: str) -> None:
    flat = info.reshape(-1).tolist()
    for b, i in enumerate(flat):
        if i > 0:
            where = f"(Batch element {b}): " if info.ndim else ""
            raise LinAlgError(
                f"{fn}: {where}U[{i},{i}] is zero and using it on lu_solve would result in a division by zero. "
                "If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
                "linalg.lu_factor_ex(A, pivot)"
            )


def lu_factor(A: Tensor, *, pivot: bool = True) -> LUFactorResult:
    """Same as torch.linalg.lu_factor: ``lu_factor_ex`` that raises LinAlgError when a pivot is exactly zero."""
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    _raise_singular(info, "torch.linalg.lu_factor")
    return LUFactorResult(LU, piv)


def lu(A: Tensor, *, pivot: bool = True) -> LUResult:
    """Same as torch.linalg.lu: A = P L U with P a permutation, L (m, k) unit lower and U (k, n) upper
    triangular, k = min(m, n); differentiable (torch's formula) for every shape."""
    fn = "linalg.lu"
    _check_pivot(pivot, fn)
    LU, piv, _ = _factor(A, fn)
    P = _permutation(piv, A.shape[-2]).to(A.dtype)
    L, U = _unpack(LU)
    if needs_grad(A):
        Ls, Us = SavedOutput(L, 0), SavedOutput(U, 1)

        def backward(gL=None, gU=None):
            return (_lu_backward(gL, gU, P, Ls(), Us()),)

        record("LinalgLuBackward0", backward, (A,), (L, U), (Ls, Us))
    return LUResult(P, L, U)


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True) -> LUResult:
    """Same as torch.lu_unpack: P, L and U from a packed LU and its pivots (empty tensors for what is not
    unpacked); differentiable in ``LU_data``."""
    check_matrix(LU_data, "lu_unpack", square=False)
    if not isinstance(LU_pivots, Tensor) or LU_pivots.dtype is not _dtype.int32:
        raise TypeError("lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype")
    m, n = LU_data.shape[-2], LU_data.shape[-1]
    if tuple(LU_pivots.shape) != tuple(LU_data.shape[:-2]) + (min(m, n),):
        raise ShapeError(
            f"lu_unpack: LU_pivots must have shape {[*LU_data.shape[:-2], min(m, n)]}, got {list(LU_pivots.shape)}"
        )
    empty = zeros(0, dtype=LU_data.dtype)
    P = _permutation(LU_pivots, m).to(LU_data.dtype) if unpack_pivots else empty
    L, U = _unpack(LU_data) if unpack_data else (empty, empty)
    return LUResult(P, L, U)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """Same as torch.linalg.lu_solve: X with A X = B for A = P L U given by ``lu_factor`` (``adjoint``:
    A^T X = B; ``left=False``: X A = B), batch dims broadcast. Differentiable in LU and B."""
    fn = "linalg.lu_solve"
    check_matrix(LU, fn)
    check_same_dtype(LU, B, fn)
    if B.ndim < 2:
        raise ShapeError(f"{fn}: B must have at least 2 dimensions, got shape {list(B.shape)}")
    if not left:  # X A = B  <=>  A^T X^T = B^T
        return lu_solve(LU, pivots, B.mT, adjoint=not adjoint).mT
    n = LU.shape[-1]
    if B.shape[-2] != n:
        raise ShapeError(f"{fn}: incompatible shapes of A and B for the equation AX = B ({list(LU.shape)} and "
                         f"{list(B.shape)})")  # fmt: skip
    P = _permutation(pivots, n).to(LU.dtype)
    L, U = _unpack(LU)
    if not adjoint:  # X = U^-1 L^-1 P^T B
        Y = solve_triangular(L, matmul(P.mT, B), upper=False, unitriangular=True)
        return solve_triangular(U, Y, upper=True)
    Y = solve_triangular(U.mT, B, upper=False)  # A^T = U^T L^T P^T: X = P L^-T U^-T B
    return matmul(P, solve_triangular(L.mT, Y, upper=True, unitriangular=True))


# ---- torch's top-level forms ----------------------------------------------------------------------------------


def torch_lu(A: Tensor, pivot: bool = True, get_infos: bool = False):
    """Same as torch.lu: ``(LU, pivots)``, with ``infos`` too when ``get_infos`` (no error on a zero pivot)."""
    LU, piv, info = lu_factor_ex(A, pivot=pivot)
    return (LU, piv, info) if get_infos else (LU, piv)


def torch_lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """Same as torch.lu_solve: ``linalg.lu_solve(LU_data, LU_pivots, b)`` (the arguments reversed)."""
    return lu_solve(LU_data, LU_pivots, b)


torch_lu.__name__ = torch_lu.__qualname__ = "lu"
torch_lu_solve.__name__ = torch_lu_solve.__qualname__ = "lu_solve"
