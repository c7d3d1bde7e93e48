"""Linear systems: solve, solve_triangular, inv, cholesky, matrix_exp, and torch's top-level cholesky_solve,
cholesky_inverse and triangular_solve.

Each forward is one batched C call (LU with partial pivoting, triangular substitution, Cholesky, Pade);
each backward sits under it as pyframe ops (torch's formulas), so create_graph differentiates again."""

from __future__ import annotations

from typing import NamedTuple

from pyframe._backend import ShapeError, lib
from pyframe.autograd.graph import SavedOutput, needs_grad, record
from pyframe.linalg._common import call, check_matrix, check_same_dtype, identity_like
from pyframe.ops import elementwise as ew
from pyframe.ops._common import broadcast_shapes
from pyframe.ops.index import tril, triu
from pyframe.ops.join import cat
from pyframe.ops.products import matmul
from pyframe.ops.view import expand
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "solve", "solve_triangular", "inv", "cholesky", "matrix_exp",
]  # fmt: skip


def _broadcast_batch(A: Tensor, B: Tensor) -> tuple[Tensor, Tensor]:
    """A (..., n, n) and B (..., n, k) expanded to one batch shape (stride 0, no copy)."""
    batch = broadcast_shapes(A.shape[:-2], B.shape[:-2])
    if A.shape[:-2] != batch:
        A = expand(A, *batch, *A.shape[-2:])
    if B.shape[:-2] != batch:
        B = expand(B, *batch, *B.shape[-2:])
    return A, B


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """Same as torch.linalg.solve: X with A X = B (X A = B when ``left=False``), by LU with partial
    pivoting; B may be a vector (..., n). A singular A raises LinAlgError naming the batch element."""
    fn = "linalg.solve"
    check_matrix(A, fn)
    check_same_dtype(A, B, fn)
    n = A.shape[-1]
    vector = left and (B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1]))
    if not left:
        if B.ndim < 2:
            raise ShapeError(f"{fn}: with left=False B must have at least 2 dimensions, got shape {list(B.shape)}")
        return solve(A.mT, B.mT).mT
    B2 = B.unsqueeze(-1) if vector else B
    if B2.ndim < 2 or B2.shape[-2] != n:
        raise ShapeError(
            f"{fn}: incompatible shapes of A and B for the equation AX = B ({list(A.shape)} and {list(B.shape)})"
        )
    A3, B3 = _broadcast_batch(A, B2)
    X = empty_tensor(B3._shape, A.dtype)
    call(fn, lib.pf_linalg_solve(A3._d(), B3._d(), X._d()))
    if needs_grad(A3, B3):
        Xs = SavedOutput(X)

        def backward(g):
            gB = solve(A3.mT, g)
            return (ew.neg(matmul(gB, Xs().mT)) if A3.requires_grad else None), (gB if B3.requires_grad else None)

        record("LinalgSolveExBackward0", backward, (A3, B3), X, (A3, Xs))
    return X.squeeze(-1) if vector else X


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True, unitriangular: bool = False) -> Tensor:
    """Same as torch.linalg.solve_triangular: reads only the upper (or lower) triangle of A. A zero on
    the diagonal raises LinAlgError (torch returns inf/nan)."""
    fn = "linalg.solve_triangular"
    check_matrix(A, fn)
    check_same_dtype(A, B, fn)
    if B.ndim < 2:
        raise ShapeError(f"{fn}: B must have at least 2 dimensions, got shape {list(B.shape)}")
    if not left:  # X A = B  <=>  A^T X^T = B^T, and A^T's upper triangle is A's lower one
        return solve_triangular(A.mT, B.mT, upper=not upper, unitriangular=unitriangular).mT
    if B.shape[-2] != A.shape[-1]:
        raise ShapeError(
            f"{fn}: incompatible shapes of A and B for the equation AX = B ({list(A.shape)} and {list(B.shape)})"
        )
    A3, B3 = _broadcast_batch(A, B)
    X = empty_tensor(B3._shape, A.dtype)
    call(fn, lib.pf_linalg_solve_triangular(A3._d(), B3._d(), X._d(), int(upper), int(unitriangular)))
    if needs_grad(A3, B3):
        Xs = SavedOutput(X)

        def backward(g):
            gB = solve_triangular(A3.mT, g, upper=not upper, unitriangular=unitriangular)
            gA = None
            if A3.requires_grad:
                gA = ew.neg(matmul(gB, Xs().mT))
                k = 1 if unitriangular else 0
                gA = triu(gA, k) if upper else tril(gA, -k)
            return gA, (gB if B3.requires_grad else None)

        record("LinalgSolveTriangularBackward0", backward, (A3, B3), X, (A3, Xs))
    return X


def _like(fn: str, A: Tensor, kernel, *operands: Tensor) -> Tensor:
    """``kernel(A, *operands, out)`` into a new tensor of A's shape and dtype (A checked by the caller)."""
    out = empty_tensor(A._shape, A.dtype)
    call(fn, kernel(A._d(), *(t._d() for t in operands), out._d()))
    return out


def inv(A: Tensor) -> Tensor:
    """Same as torch.linalg.inv. A singular A raises LinAlgError naming the batch element."""
    fn = "linalg.inv"
    check_matrix(A, fn)
    X = _like(fn, A, lib.pf_linalg_solve, expand(identity_like(A), *A.shape))
    if needs_grad(A):
        Xs = SavedOutput(X)

        def backward(g):
            Xt = Xs().mT
            return ew.neg(matmul(matmul(Xt, g), Xt))

        record("LinalgInvExBackward0", backward, (A,), X, (Xs,))
    return X


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """Same as torch.linalg.cholesky: L with A = L L^T from A's lower triangle (``upper=True`` returns
    L^T). A non positive-definite A raises LinAlgError naming the batch element and the failing minor."""
    fn = "linalg.cholesky"
    check_matrix(A, fn)
    L = _like(fn, A, lib.pf_linalg_cholesky)
    record_cholesky(A, L)
    return L.mT if upper else L


def record_cholesky(A: Tensor, L: Tensor) -> None:  # noqa: N803
    """Records ``L = cholesky(A)`` (lower) for autograd when A requires grad (cholesky and cholesky_ex)."""
    if needs_grad(A):
        Ls = SavedOutput(L)

        def backward(gL):
            # torch's cholesky_backward: gA = L^-T phi(L^T gL) L^-1, symmetrized; phi takes the lower
            # triangle with the diagonal halved
            L = Ls()
            Linv = solve_triangular(L, expand(identity_like(L), *L.shape), upper=False)
            P = matmul(L.mT, gL)
            phi = ew.sub(tril(P), ew.mul(ew.mul(P, identity_like(L)), 0.5))
            gA = matmul(matmul(Linv.mT, phi), Linv)
            return ew.mul(ew.add(gA, gA.mT), 0.5)

        record("LinalgCholeskyExBackward0", backward, (A,), L, (Ls,))


def matrix_exp(A: Tensor) -> Tensor:
    """Same as torch.linalg.matrix_exp (and torch.matrix_exp): Pade 13 with scaling and squaring. Its
    gradient is the upper-right block of exp([[A^T, G], [0, A^T]]), as torch's."""
    fn = "linalg.matrix_exp"
    check_matrix(A, fn)
    E = _like(fn, A, lib.pf_linalg_matrix_exp)
    if needs_grad(A):

        def backward(g):
            n = A.shape[-1]
            At = A.mT
            zero = ew.mul(g, 0.0)
            big = cat([cat([At, g], -1), cat([zero, At], -1)], -2)
            return matrix_exp(big).narrow(-2, 0, n).narrow(-1, n, n)

        record("LinalgMatrixExpBackward0", backward, (A,), E, (A,))
    return E


# ---- torch's top-level solvers: cholesky_solve, cholesky_inverse, triangular_solve --------------------------------


def _factor_of(L: Tensor, upper: bool) -> Tensor:
    """The lower Cholesky factor from ``L`` (upper: ``L`` is U with A = U^T U)."""
    return L.mT if upper else L


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """Same as torch.cholesky_solve: X with A X = B for A = L L^T (``upper``: A = U^T U), two triangular
    solves reading L's lower (U's upper) triangle; batch dims broadcast. Its gradients are torch's, which
    treat L as a full matrix (A = L L^T with every entry of L)."""
    fn = "cholesky_solve"
    check_matrix(L, fn)
    check_same_dtype(L, B, fn)
    if B.ndim < 2 or B.shape[-2] != L.shape[-1]:
        raise ShapeError(f"{fn}: incompatible shapes of A and B for the equation AX = B ({list(L.shape)} and "
                         f"{list(B.shape)})")  # fmt: skip
    Ld = _factor_of(L.detach(), upper)
    X = solve_triangular(Ld.mT, solve_triangular(Ld, B.detach(), upper=False), upper=True)
    L3, B3 = _broadcast_batch(L, B)
    if needs_grad(L3, B3):
        Xs = SavedOutput(X)

        def backward(g):
            gB = cholesky_solve(g, L3, upper)
            gL = None
            if L3.requires_grad:
                common = matmul(gB, Xs().mT)
                common = ew.add(common, common.mT)
                gL = ew.neg(matmul(L3, common) if upper else matmul(common, L3))
            return gL, (gB if B3.requires_grad else None)

        record("CholeskySolveBackward0", backward, (L3, B3), X, (L3, Xs))
    return X


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """Same as torch.cholesky_inverse: A^-1 for A = L L^T (``upper``: A = U^T U), with torch's gradient."""
    fn = "cholesky_inverse"
    check_matrix(L, fn)
    Ld = _factor_of(L.detach(), upper)
    eye_ = expand(identity_like(L), *L.shape)
    Inv = solve_triangular(Ld.mT, solve_triangular(Ld, eye_, upper=False), upper=True)
    if needs_grad(L):
        Is = SavedOutput(Inv)

        def backward(g):
            Inv = Is()
            common = matmul(Inv, matmul(ew.add(g, g.mT), Inv))
            return ew.neg(matmul(L, common) if upper else matmul(common, L))

        record("CholeskyInverseBackward0", backward, (L,), Inv, (L, Is))
    return Inv


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False, unitriangular: bool = False):
    """Same as torch.triangular_solve: ``(solution, cloned_coefficient)`` with A X = b (``transpose``: A^T X = b)
    for triangular A (its upper triangle when ``upper``), batch dims broadcast."""
    fn = "triangular_solve"
    check_matrix(A, fn)
    check_same_dtype(A, b, fn)
    if b.ndim < 2:
        raise ShapeError(f"{fn}: b must have at least 2 dimensions, got shape {list(b.shape)}")
    X = solve_triangular(A.mT if transpose else A, b, upper=upper != transpose, unitriangular=unitriangular)
    batch = broadcast_shapes(A.shape[:-2], b.shape[:-2])
    return TriangularSolveResult(X, expand(A, *batch, *A.shape[-2:]).clone())


class TriangularSolveResult(NamedTuple):
    """torch.return_types.triangular_solve."""

    solution: Tensor
    cloned_coefficient: Tensor
