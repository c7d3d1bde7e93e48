"""torch.linalg's functions that are compositions of the others and of pyframe's ops: ``vecdot``, ``cross``,
``diagonal``, ``matrix_power``, ``vander``, ``tensorinv``, ``tensorsolve`` and the ``*_ex`` forms: ``cholesky_ex``
reports a matrix that is not positive-definite in its ``info``, as torch's; ``inv_ex`` and ``solve_ex`` return an
``info`` of zeros (a singular matrix raises :class:`LinAlgError` instead, as with ``check_errors=True``)."""

from __future__ import annotations

import math
from typing import NamedTuple

from pyframe import _dtype, ops
from pyframe._backend import lib
from pyframe.linalg._common import LinAlgError, call, check_matrix
from pyframe.linalg.solve import inv, record_cholesky, solve
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "vecdot", "cross", "diagonal", "matrix_power", "vander", "tensorinv", "tensorsolve", "inv_ex", "solve_ex",
    "cholesky_ex",
]  # fmt: skip


class _ExResult(NamedTuple):
    result: Tensor
    info: Tensor


def _info(a: Tensor) -> Tensor:
    return ops.zeros(tuple(a.shape[:-2]), dtype=_dtype.int32)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """Same as torch.linalg.vecdot on real tensors: ``(x * y).sum(dim)``, broadcast."""
    return ops.sum(x * y, dim)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """Same as torch.linalg.cross: the cross product along ``dim`` (of size 3), broadcast between inputs of the
    same number of dims."""
    if input.ndim != other.ndim:
        raise RuntimeError(f"linalg.cross: inputs must have the same number of dimensions, got {input.ndim} and "
                           f"{other.ndim}")  # fmt: skip
    return ops.cross(input, other, dim=dim)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Same as torch.linalg.diagonal: ``torch.diagonal`` with the last two dims by default."""
    return ops.diagonal(A, offset, dim1, dim2)


def matrix_power(A: Tensor, n: int) -> Tensor:
    """Same as torch.linalg.matrix_power: ``A`` multiplied by itself ``n`` times (by squaring), the inverse's
    power for negative ``n``, the identity for 0."""
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are "
                           f"{A.shape[-2] if A.ndim > 1 else ''} by {A.shape[-1]} matrices")  # fmt: skip
    if not isinstance(n, int):
        raise TypeError("linalg.matrix_power: n must be an int")
    if n == 0:  # the identity, still a function of A (its gradient is zero), as torch's
        eye = ops.eye(A.shape[-1], dtype=A.dtype).expand(A.shape)
        return ops.where(ops.zeros(A.shape, dtype=_dtype.bool_), A, eye)
    base, result = (inv(A) if n < 0 else A), None
    k = abs(n)
    while k:
        if k & 1:
            result = base if result is None else ops.matmul(result, base)
        k >>= 1
        if k:
            base = ops.matmul(base, base)
    return result


def vander(x: Tensor, *, N: int | None = None) -> Tensor:
    """Same as torch.linalg.vander: columns ``x**0, x**1, ..., x**(N-1)`` (increasing powers)."""
    if x.ndim == 0:
        x = x.reshape(1)
    n = x.shape[-1] if N is None else N
    if n < 1:
        raise RuntimeError("N must be greater than 1.")
    cols = [ops.ones_like(x)]
    for _ in range(n - 1):
        cols.append(cols[-1] * x)
    return ops.stack(cols, -1)


def tensorinv(A: Tensor, ind: int = 2) -> Tensor:
    """Same as torch.linalg.tensorinv: the inverse of ``A`` read as a matrix of its first ``ind`` dims by the rest."""
    if ind <= 0:
        raise RuntimeError("Expected a strictly positive integer for 'ind', but got 0")
    rows, cols = A.shape[:ind], A.shape[ind:]
    m = math.prod(rows)
    return inv(A.reshape(m, -1)).reshape(*cols, *rows)


def tensorsolve(A: Tensor, B: Tensor, dims=None) -> Tensor:
    """Same as torch.linalg.tensorsolve: ``X`` with ``tensordot(A, X, X.ndim) == B``."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = ops.movedim(A, dims, list(range(A.ndim - len(dims), A.ndim)))
    rest = A.shape[B.ndim :]
    m = math.prod(B.shape)
    return solve(A.reshape(m, -1), B.reshape(m)).reshape(rest)


def inv_ex(A: Tensor, *, check_errors: bool = False) -> _ExResult:
    """Same as torch.linalg.inv_ex: ``(inv(A), info)``."""
    return _ExResult(inv(A), _info(A))


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> _ExResult:
    """Same as torch.linalg.solve_ex: ``(solve(A, B), info)``."""
    return _ExResult(solve(A, B, left=left), _info(A))


class _CholeskyEx(NamedTuple):
    L: Tensor
    info: Tensor


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> _CholeskyEx:
    """Same as torch.linalg.cholesky_ex: ``(L, info)`` without raising for a matrix that is not positive-definite:
    ``info`` (int32, A's batch shape) is 0, or the order of the first leading minor that is not positive-definite
    (NaN included), as LAPACK's; ``L`` is then the factor computed so far. ``check_errors=True`` raises
    :class:`LinAlgError` for a nonzero ``info`` instead."""
    fn = "linalg.cholesky_ex"
    check_matrix(A, fn)
    L = empty_tensor(A._shape, A.dtype)
    info = empty_tensor(A._shape[:-2], _dtype.int32)
    call(fn, lib.pf_linalg_cholesky_ex(A._d(), L._d(), info._d()))
    if check_errors:
        bad = ops.nonzero(info.reshape(-1)).reshape(-1)
        if bad.numel():
            k = int(bad[0].item())
            where = f"(Batch element {k}): " if info.ndim else ""
            raise LinAlgError(f"{fn}: {where}The factorization could not be completed because the input is not "
                              f"positive-definite (the leading minor of order {int(info.reshape(-1)[k].item())} is "
                              "not positive-definite).")  # fmt: skip
    record_cholesky(A, L)
    return _CholeskyEx(L.mT if upper else L, info)
