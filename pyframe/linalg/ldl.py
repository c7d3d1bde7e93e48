"""LDL^T of symmetric matrices: linalg.ldl_factor, ldl_factor_ex and ldl_solve, as torch's (LAPACK's sytrf and
sytrs on real matrices: Bunch-Kaufman pivoting, ``LD`` and ``pivots`` in LAPACK's packed format), computed in
``core_c/src/linalg_ldl.c``. torch differentiates none of them."""

from __future__ import annotations

from typing import NamedTuple

from pyframe import _dtype
from pyframe._backend import ShapeError, lib
from pyframe.linalg._common import LinAlgError, call, check_matrix, check_same_dtype
from pyframe.ops._common import broadcast_shapes
from pyframe.tensor import Tensor, empty_tensor

__all__ = ["ldl_factor", "ldl_factor_ex", "ldl_solve", "LDLFactorResult", "LDLFactorExResult"]


class LDLFactorResult(NamedTuple):
    """torch.return_types.linalg_ldl_factor."""

    LD: Tensor
    pivots: Tensor


class LDLFactorExResult(NamedTuple):
    """torch.return_types.linalg_ldl_factor_ex."""

    LD: Tensor
    pivots: Tensor
    info: Tensor


def _raise_singular(info: Tensor, fn: str) -> None:
    for b, i in enumerate(info.reshape(-1).tolist()):
        if i > 0:
            where = f"(Batch element {b}): " if info.ndim else ""
            raise LinAlgError(
                f"{fn}: {where}D[{i},{i}] of the factorization is exactly zero, so the matrix is singular and "
                "ldl_solve would divide by zero; linalg.ldl_factor_ex returns the factorization with info instead"
            )


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False, out=None) -> LDLFactorExResult:
    """Same as torch.linalg.ldl_factor_ex: ``A = P L D L^T P^T`` of symmetric matrices (only the lower triangle
    is read) with Bunch-Kaufman pivoting, packed as LAPACK's sytrf: ``LD`` holds L (unit diagonal implied) below
    the diagonal and D's 1 x 1 and 2 x 2 blocks on and beside it, zeros above; ``pivots`` (int32) is LAPACK's
    1-based ``ipiv`` (a negative pair marks a 2 x 2 block); ``info`` (int32) the 1-based index of the first
    exactly zero block of D, 0 when none. ``hermitian`` changes nothing for real matrices. Not differentiable,
    as torch's."""
    fn = "linalg.ldl_factor_ex"
    check_matrix(A, fn)
    batch = A._shape[:-2]
    LD = empty_tensor(A._shape, A.dtype)
    piv = empty_tensor(A._shape[:-1], A.dtype)
    info = empty_tensor(batch, A.dtype)
    call(fn, lib.pf_linalg_ldl_factor(A._d(), LD._d(), piv._d(), info._d()))
    piv, info = piv.to(_dtype.int32), info.to(_dtype.int32)
    if check_errors:
        _raise_singular(info, "torch." + fn)
    if out is not None:
        for o, r in zip(out, (LD, piv, info), strict=True):
            o.resize_(r.shape).copy_(r)
        return LDLFactorExResult(*out)
    return LDLFactorExResult(LD, piv, info)


def ldl_factor(A: Tensor, *, hermitian: bool = False, out=None) -> LDLFactorResult:
    """Same as torch.linalg.ldl_factor: ``ldl_factor_ex`` that raises LinAlgError when a block of D is exactly
    zero (torch 2.13 reports that case through an internal assertion)."""
    LD, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_singular(info, "torch.linalg.ldl_factor")
    if out is not None:
        for o, r in zip(out, (LD, piv), strict=True):
            o.resize_(r.shape).copy_(r)
        return LDLFactorResult(*out)
    return LDLFactorResult(LD, piv)


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False, out: Tensor | None = None) -> Tensor:
    """Same as torch.linalg.ldl_solve: X with ``A X = B`` for ``A`` given by ``ldl_factor``'s ``LD`` and
    ``pivots`` (LAPACK's sytrs); the batch dims of the three broadcast. Not differentiable, as torch's."""
    fn = "linalg.ldl_solve"
    check_matrix(LD, fn, name="LD")
    check_same_dtype(LD, B, fn)
    if B.ndim < 2:
        raise ShapeError(f"{fn}: B must have at least 2 dimensions, got shape {list(B.shape)}")
    if not isinstance(pivots, Tensor) or pivots.dtype.is_floating_point or pivots.dtype is _dtype.bool_:
        got = pivots.dtype.name if isinstance(pivots, Tensor) else type(pivots).__name__
        raise TypeError(f"{fn}: pivots must be an integer tensor (ldl_factor's int32 pivots), got {got}")
    n = LD.shape[-1]
    if pivots.ndim < 1 or pivots.shape[-1] != n:
        raise ShapeError(f"{fn}: pivots must have shape (*, {n}) for {n} by {n} matrices, got {list(pivots.shape)}")
    if B.shape[-2] != n:
        raise ShapeError(
            f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is {n} by {n} but each b matrix "
            f"is {B.shape[-2]} by {B.shape[-1]}"
        )
    batch = broadcast_shapes(LD._shape[:-2], pivots._shape[:-1], B._shape[:-2])
    ld = LD.expand(*batch, n, n)
    piv = pivots.to(LD.dtype).expand(*batch, n)
    b = B.expand(*batch, n, B.shape[-1])
    X = empty_tensor(tuple(batch) + (n, B.shape[-1]), LD.dtype)
    call(fn, lib.pf_linalg_ldl_solve(ld._d(), piv._d(), b._d(), X._d()))
    if out is not None:
        return out.resize_(X.shape).copy_(X)
    return X
