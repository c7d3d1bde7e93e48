"""Same as torch.sparse, for sparse COO matrices: ``mm`` and ``addmm`` with gradients to the dense operand and
the sparse values (the tensors themselves: ``pyframe.sparse_coo_tensor``, ``Tensor.to_sparse``; the kernels:
``pyframe/ops/sparse.py`` over ``core_c/src/sparse.c``)."""

from __future__ import annotations

from pyframe.ops.sparse import SparseCooTensor, mm
from pyframe.tensor import Tensor

__all__ = ["mm", "addmm", "SparseCooTensor"]


def addmm(mat: Tensor, mat1: SparseCooTensor, mat2: Tensor, *, beta: float = 1.0, alpha: float = 1.0) -> Tensor:
    """Same as torch.sparse.addmm: ``beta * mat + alpha * (mat1 @ mat2)`` with ``mat1`` sparse."""
    return mat * beta + mm(mat1, mat2) * alpha
