"""Same as torch.sparse, for sparse COO and CSR matrices: ``mm`` (with ``reduce=`` for CSR), ``addmm`` and
``sampled_addmm``, with gradients to the dense operands and the sparse values (the tensors themselves:
``pyframe.sparse_coo_tensor``, ``pyframe.sparse_csr_tensor``, ``Tensor.to_sparse``, ``Tensor.to_sparse_csr``; the
kernels: ``pyframe/ops/sparse.py`` and ``pyframe/ops/sparse_csr.py`` over ``core_c/src/sparse.c``)."""

from __future__ import annotations

from pyframe.ops import sparse as _coo
from pyframe.ops.sparse import SparseCooTensor
from pyframe.ops.sparse_csr import SparseCsrTensor, csr_mm, sampled_addmm
from pyframe.tensor import Tensor

__all__ = ["mm", "addmm", "sampled_addmm", "SparseCooTensor", "SparseCsrTensor"]


def mm(mat1: Tensor, mat2: Tensor, reduce: str | None = None) -> Tensor:
    """Same as torch.sparse.mm: a sparse matrix times a dense one. A COO ``mat1`` sums its entries (duplicates
    add up); a CSR one reduces each row by ``reduce`` ("sum", the default, "mean", "amax" or "amin", 0 for an
    empty row). Gradients reach the dense operand and the sparse values."""
    if isinstance(mat1, SparseCsrTensor):
        return csr_mm(mat1, mat2, "sum" if reduce is None else reduce)
    if reduce is not None:
        raise NotImplementedError("sparse.mm: reduce= needs a sparse CSR matrix (to_sparse_csr()), got "
                                  f"{getattr(mat1, 'layout', type(mat1).__name__)}")  # fmt: skip
    return _coo.mm(mat1, mat2)


def addmm(mat: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1.0, alpha: float = 1.0) -> Tensor:
    """Same as torch.sparse.addmm: ``beta * mat + alpha * (mat1 @ mat2)`` with ``mat1`` sparse."""
    return mat * beta + mm(mat1, mat2) * alpha
