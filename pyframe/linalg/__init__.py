"""pyframe.linalg: same as torch.linalg, computed by small LAPACK-style kernels of pyframe's own C core
(LU with partial pivoting, Bunch-Kaufman LDL^T, Cholesky, Householder QR, Jacobi eigensolver and SVD, Pade
matrix_exp), batched over leading dims, float32 and float64, with torch's gradient formulas. Failures raise
:class:`LinAlgError`, a RuntimeError naming the batch element. See docs/linalg.md."""

from __future__ import annotations

from pyframe.linalg._common import LinAlgError
from pyframe.linalg.compose import (
    cholesky_ex,
    cross,
    diagonal,
    inv_ex,
    matrix_power,
    solve_ex,
    tensorinv,
    tensorsolve,
    vander,
    vecdot,
)
from pyframe.linalg.decomp import EighResult, QRResult, SVDResult, eigh, eigvalsh, householder_product, qr, svd, svdvals
from pyframe.linalg.decomp import geqrf as geqrf  # torch.geqrf, which pyframe re-exports at the top
from pyframe.linalg.decomp import ormqr as ormqr  # torch.ormqr, at pyframe's top level
from pyframe.linalg.derived import LstsqResult, SlogdetResult, cond, det, lstsq, matrix_rank, multi_dot, pinv, slogdet
from pyframe.linalg.derived import logdet as logdet  # torch.logdet, which pyframe re-exports at the top
from pyframe.linalg.ldl import LDLFactorExResult, LDLFactorResult, ldl_factor, ldl_factor_ex, ldl_solve
from pyframe.linalg.lu import LUFactorExResult, LUFactorResult, LUResult, lu, lu_factor, lu_factor_ex, lu_solve
from pyframe.linalg.lu import lu_unpack as lu_unpack  # torch.lu_unpack, which pyframe re-exports at the top
from pyframe.linalg.norms import matrix_norm, norm, vector_norm
from pyframe.linalg.solve import cholesky, inv, matrix_exp, solve, solve_triangular
from pyframe.ops.products import matmul

__all__ = [
    "LinAlgError", "solve", "solve_triangular", "inv", "det", "slogdet", "cholesky", "qr", "eigh", "eigvalsh",
    "svd", "svdvals", "matrix_exp", "householder_product", "vector_norm", "matrix_norm", "norm", "matmul",
    "pinv", "matrix_rank", "lstsq", "cond", "multi_dot", "EighResult", "QRResult", "SVDResult", "SlogdetResult",
    "LstsqResult", "vecdot", "cross", "diagonal", "matrix_power", "vander", "tensorinv", "tensorsolve", "inv_ex",
    "solve_ex", "cholesky_ex", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "LUResult", "LUFactorResult",
    "LUFactorExResult", "ldl_factor", "ldl_factor_ex", "ldl_solve", "LDLFactorResult", "LDLFactorExResult",
]  # fmt: skip
