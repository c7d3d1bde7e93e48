"""Sparse CSR matrices: ``sparse_csr_tensor``, ``to_sparse_csr``, ``crow_indices`` / ``col_indices`` /
``values``, ``to_dense``, the product with a dense matrix (``torch.sparse.mm`` with ``reduce=`` sum, mean,
amax or amin) and ``sparse.sampled_addmm``, with gradients to the values and the dense operands.

A CSR matrix is ``crow_indices`` (int64 ``[rows + 1]``: row ``i``'s entries are ``crow[i]:crow[i + 1]``),
``col_indices`` (int64 ``[nnz]``) and ``values`` (``[nnz]``), checked against torch's invariants in C
(``pf_csr_rows``). As a COO tensor, it has no dense memory and its values carry autograd. The products and
the checks compute in ``core_c/src/sparse.c``.
"""

from __future__ import annotations

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError, check, ffi, lib
from pyframe._device import check_device, sparse_csr
from pyframe._dtype import as_dtype
from pyframe.autograd.graph import record
from pyframe.ops import elementwise as _ew
from pyframe.ops._common import zeros_of
from pyframe.ops.creation import tensor as _as_tensor
from pyframe.ops.index import index_add_, index_select
from pyframe.ops.sparse import (
    SparseCooTensor,
    _i64,
    _make,
    _SparseTensor,
    to_sparse,
)
from pyframe.tensor import Tensor, empty_tensor

__all__ = ["sparse_csr_tensor", "sparse_csr", "sparse_sampled_addmm"]

_REDUCE = {"sum": lib.PF_CSR_SUM, "mean": lib.PF_CSR_MEAN, "amax": lib.PF_CSR_AMAX, "amin": lib.PF_CSR_AMIN}


class SparseCsrTensor(_SparseTensor):
    """A sparse CSR matrix: ``crow_indices()``, ``col_indices()`` and ``values()``. Same as a torch tensor of
    layout ``torch.sparse_csr`` for ``to_dense``, ``to_sparse``, the products of ``pyframe.sparse`` and
    ``@`` a dense matrix; other ops raise NotImplementedError naming what is supported."""

    __slots__ = ("_crow", "_col", "_rows")
    is_sparse = False
    is_sparse_csr = True
    layout = sparse_csr
    _kind = "sparse CSR matrix"
    _supported = "to_dense, to_sparse, crow_indices, col_indices, values, torch.sparse.mm / @ with a dense matrix"

    @property
    def grad(self) -> SparseCsrTensor | None:
        """The gradient of the values, as a CSR matrix of this one's pattern (None before backward)."""
        g = self._vals.grad
        return None if g is None else _make_csr(self._crow, self._col, g, self._shape, self._rows)

    def crow_indices(self) -> Tensor:
        """Same as torch.Tensor.crow_indices: int64 ``[rows + 1]``, row ``i``'s entries at ``crow[i]:crow[i+1]``."""
        return self._crow

    def col_indices(self) -> Tensor:
        """Same as torch.Tensor.col_indices: each entry's column, int64 ``[nnz]``."""
        return self._col

    def values(self) -> Tensor:
        """Same as torch.Tensor.values: the entries' values ``[nnz]``."""
        return self._vals

    def to_dense(self, dtype=None, *, masked_grad: bool | None = None) -> Tensor:
        """Same as torch.Tensor.to_dense: the dense matrix; differentiable to the values."""
        values = self._vals if dtype is None else self._vals.to(as_dtype(dtype))
        m, n = self._shape
        flat = index_add_(zeros_of((m * n,), values.dtype), 0, _ew.add(_ew.mul(self._rows, n), self._col), values)
        return flat.reshape(m, n)

    def to_sparse(self, sparse_dim: int | None = None, *, layout=None, blocksize=None, dense_dim=None):
        """Same as torch.Tensor.to_sparse: the COO matrix of the same entries (coalesced); ``layout=sparse_csr``
        is the tensor itself."""
        if layout is sparse_csr:
            return self
        if layout not in (None, SparseCooTensor.layout):
            raise NotImplementedError(f"to_sparse: layout {layout} is not supported")
        indices = empty_tensor((2, self._nnz()), _dtype.int64)
        indices[0], indices[1] = self._rows, self._col
        return _make(indices, self._vals, self._shape, True)

    to_sparse_coo = to_sparse

    def to_sparse_csr(self, dense_dim: int | None = None) -> SparseCsrTensor:
        """The tensor itself (already CSR)."""
        return self

    def _with_values(self, values: Tensor) -> SparseCsrTensor:
        return _make_csr(self._crow, self._col, values, self._shape, self._rows)

    def _values_cotangent(self, g: Tensor) -> Tensor:
        """The gradient of the values given ``g``, one of this matrix (``autograd.grad`` of a sparse output):
        ``g``'s values when it has this pattern's size, else ``g`` read at the entries."""
        if isinstance(g, SparseCsrTensor) and g._vals._shape == self._vals._shape:
            return g._vals
        if isinstance(g, _SparseTensor):
            g = g.to_dense()
        return index_select(g.reshape(-1), 0, _ew.add(_ew.mul(self._rows, self._shape[1]), self._col))

    def detach(self) -> SparseCsrTensor:
        """The same entries, cut from autograd."""
        return _make_csr(self._crow, self._col, self._vals.detach(), self._shape, self._rows)

    def clone(self, *, memory_format=None) -> SparseCsrTensor:
        """A copy of the indices and values."""
        return _make_csr(self._crow.clone(), self._col.clone(), self._vals.clone(), self._shape, self._rows)

    def to(self, *args, **kwargs) -> SparseCsrTensor:
        """The same entries with the values converted (``to(dtype)``); the device must be the CPU."""
        return _make_csr(self._crow, self._col, self._vals.to(*args, **kwargs), self._shape, self._rows)

    def mm(self, mat2: Tensor) -> Tensor:
        """``pyframe.sparse.mm(self, mat2)``."""
        return csr_mm(self, mat2)

    def matmul(self, other: Tensor) -> Tensor:
        """The CSR matrix times a dense matrix, or a vector (as a one-column matrix)."""
        if isinstance(other, Tensor) and other.ndim == 1:
            return csr_mm(self, other.unsqueeze(1)).squeeze(1)
        return csr_mm(self, other)

    __matmul__ = matmul

    def __repr__(self) -> str:
        extra = ", requires_grad=True" if self.requires_grad else ""
        return (f"tensor(crow_indices={self._crow!r},\n       col_indices={self._col!r},\n       "
                f"values={self._vals.detach()!r}, size={tuple(self._shape)}, nnz={self._nnz()}, "
                f"layout=pyframe.sparse_csr{extra})")  # fmt: skip


def _make_csr(crow: Tensor, col: Tensor, values: Tensor, shape: tuple, rows: Tensor) -> SparseCsrTensor:
    t = SparseCsrTensor._blank(values, shape)
    t._crow, t._col, t._rows = crow, col, rows
    return t


def _index(x, what: str) -> Tensor:
    t = x if isinstance(x, Tensor) else _as_tensor(x, dtype=_dtype.int64)
    if t.dtype is _dtype.int32:
        t = t.to(_dtype.int64)
    if t.dtype is not _dtype.int64 or t.ndim != 1:
        raise TypeError(f"sparse_csr_tensor: {what} must be a 1-d int64 tensor, got {t.dtype.name} of shape "
                        f"{list(t._shape)}")  # fmt: skip
    return t.detach().contiguous()


def sparse_csr_tensor(crow_indices, col_indices, values, size=None, *, dtype=None, device=None,
                      requires_grad: bool = False, check_invariants: bool | None = None,
                      pin_memory: bool = False) -> SparseCsrTensor:  # fmt: skip
    """Same as torch.sparse_csr_tensor, for matrices: row ``i`` holds ``values[crow[i]:crow[i + 1]]`` at columns
    ``col_indices[crow[i]:crow[i + 1]]``; ``size`` defaults to ``(len(crow) - 1, max(col) + 1)``. torch's
    invariants are checked (crow starts at 0, never decreases and ends at nnz; columns in range)."""
    check_device(device)
    crow, col = _index(crow_indices, "crow_indices"), _index(col_indices, "col_indices")
    vals = values if isinstance(values, Tensor) else _as_tensor(values, dtype=dtype)
    if dtype is not None and vals.dtype is not as_dtype(dtype):
        vals = vals.to(as_dtype(dtype))
    if vals.ndim != 1:
        raise ShapeError(f"sparse_csr_tensor: values must be 1-d [nnz] (no batch or dense dims in pyframe), got "
                         f"shape {list(vals._shape)}")  # fmt: skip
    nnz = col._shape[0]
    if vals._shape[0] != nnz:
        raise ShapeError(f"sparse_csr_tensor: col_indices has {nnz} entries but values has {vals._shape[0]}")
    if crow._shape[0] < 1:
        raise ShapeError("sparse_csr_tensor: crow_indices must have at least one element (rows + 1)")
    m = crow._shape[0] - 1
    if size is None:
        shape = (m, int(col.amax()) + 1 if nnz else 0)
    else:
        shape = tuple(int(n) for n in (size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size))
        if len(shape) != 2:
            raise ShapeError(f"sparse_csr_tensor: size must be 2-d (batch and dense dims are not supported), got "
                             f"{list(shape)}")  # fmt: skip
        if shape[0] != m:
            raise RuntimeError(f"sparse_csr_tensor: crow_indices has {m + 1} elements, so size[0] must be {m}, "
                               f"got {shape[0]}")  # fmt: skip
    rows = empty_tensor((nnz,), _dtype.int64)
    check(lib.pf_csr_rows(m, shape[1], _i64(crow), nnz, _i64(col), _i64(rows)))
    if requires_grad:
        vals.requires_grad_()
    return _make_csr(crow, col, vals, shape, rows)


def to_sparse_csr(x: Tensor, dense_dim: int | None = None) -> SparseCsrTensor:
    """Same as torch.Tensor.to_sparse_csr, for a 2-d dense or sparse COO matrix: its nonzero (stored) entries
    in CSR form; differentiable to ``x``."""
    if isinstance(x, SparseCsrTensor):
        return x
    if dense_dim:
        raise NotImplementedError("to_sparse_csr: dense dims are not supported")
    if x.ndim != 2:
        raise RuntimeError(f"to_sparse_csr: expected a 2-d matrix (batch dims are not supported), got {x.ndim} dims")
    coo = to_sparse(x).coalesce()
    if coo.dense_dim():
        raise NotImplementedError("to_sparse_csr: a hybrid sparse COO tensor is not supported")
    idx = coo._indices()
    rows, col = idx[0].contiguous(), idx[1].contiguous()
    m = x._shape[0]
    crow = empty_tensor((m + 1,), _dtype.int64)
    check(lib.pf_csr_crow(rows._shape[0], _i64(rows), m, _i64(crow)))
    return _make_csr(crow, col, coo._values(), x._shape, rows)


def _operand(fn: str, csr, dense) -> None:
    if not isinstance(csr, SparseCsrTensor):
        raise TypeError(f"{fn}: expected a sparse CSR matrix, got {type(csr).__name__}")
    if not isinstance(dense, Tensor) or isinstance(dense, _SparseTensor):
        raise TypeError(f"{fn}: expected a dense (strided) tensor, got {type(dense).__name__}")
    if dense.dtype is not csr.dtype:
        raise TypeError(f"{fn}: expected the same dtype, got {csr.dtype.name} and {dense.dtype.name}")
    if csr.dtype not in (_dtype.float32, _dtype.float64):
        raise TypeError(f"{fn}: values must be float32 or float64, got {csr.dtype.name}")


def _arg(arg: Tensor | None):
    return ffi.NULL if arg is None else _i64(arg)


def csr_mm(csr: SparseCsrTensor, dense: Tensor, reduce: str = "sum") -> Tensor:
    """``torch.sparse.mm(csr, dense, reduce)``: row ``i`` of the result is the ``reduce`` ("sum", "mean", "amax",
    "amin") over row ``i``'s entries ``e`` of ``values[e] * dense[col[e], :]`` (0 for an empty row), with
    gradients to the values and to ``dense``; amax and amin pass them to the first extreme entry (a NaN wins)."""
    _operand("sparse.mm", csr, dense)
    if reduce not in _REDUCE:
        raise ValueError(f"sparse.mm: reduce argument must be either sum, mean, amax or amin, got {reduce}")
    if dense.ndim != 2:
        raise ShapeError(f"sparse.mm: expected a 2-d dense matrix, got size {list(dense._shape)}")
    M, K = csr._shape
    if dense._shape[0] != K:
        raise ShapeError(f"sparse.mm: mat1 and mat2 shapes cannot be multiplied ({M}x{K} and "
                         f"{dense._shape[0]}x{dense._shape[1]})")  # fmt: skip
    N, code, dt = dense._shape[1], _REDUCE[reduce], dense.dtype.code
    vals, d = csr._vals.detach().contiguous(), dense.detach().contiguous()
    out = empty_tensor((M, N), dense.dtype)
    arg = empty_tensor((M, N), _dtype.int64) if reduce in ("amax", "amin") else None
    crow, col = csr._crow, csr._col
    check(lib.pf_csr_mm(dt, code, M, K, N, _i64(crow), _i64(col), vals._ptr, d._ptr, out._ptr, _arg(arg)))
    need_v, need_d = csr._vals.requires_grad, dense.requires_grad
    if _grad_mode.enabled and (need_v or need_d):

        def backward(g):
            g = g.detach().contiguous()
            gv = empty_tensor((vals._shape[0],), g.dtype) if need_v else None
            gd = empty_tensor((K, N), g.dtype) if need_d else None
            check(lib.pf_csr_mm_backward(dt, code, M, K, N, _i64(crow), _i64(col), vals._ptr, d._ptr, _arg(arg), g._ptr,
                                         gv._ptr if need_v else ffi.NULL, gd._ptr if need_d else ffi.NULL))  # fmt: skip
            return gv, gd

        name = "SparseAddmmBackward0" if reduce == "sum" else "SparseMmReduceImplBackward0"
        record(name, backward, (csr._vals, dense), out, (vals, d))
    return out


def sampled_addmm(input: SparseCsrTensor, mat1: Tensor, mat2: Tensor, *, beta=1.0, alpha=1.0,  # noqa: A002
                  out=None) -> SparseCsrTensor:  # fmt: skip
    """Same as torch.sparse.sampled_addmm: ``alpha * (mat1 @ mat2)`` at ``input``'s entries only, plus
    ``beta * input`` (a CSR matrix of ``input``'s pattern), with gradients to ``input``'s values, ``mat1`` and
    ``mat2``. ``out=`` is not supported."""
    if out is not None:
        raise NotImplementedError("sparse.sampled_addmm: out= is not supported")
    fn = "sparse.sampled_addmm"
    _operand(fn, input, mat1)
    _operand(fn, input, mat2)
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise ShapeError(f"{fn}: Expected mat1 and mat2 to be 2-d matrices, got sizes {list(mat1._shape)} and "
                         f"{list(mat2._shape)}")  # fmt: skip
    M, N = input._shape
    K = mat1._shape[1]
    if mat1._shape[0] != M or mat2._shape != (K, N):
        raise ShapeError(f"{fn}: mat1 ({list(mat1._shape)}) @ mat2 ({list(mat2._shape)}) does not give input's "
                         f"size {[M, N]}")  # fmt: skip
    nnz, dt = input._nnz(), input.dtype.code
    rows, col = input._rows, input._col
    a, b = mat1.detach().contiguous(), mat2.detach().contiguous()
    c = input._vals.detach().contiguous()
    vals = empty_tensor((nnz,), input.dtype)
    alpha, beta = float(alpha), float(beta)
    check(lib.pf_csr_sampled_addmm(dt, nnz, _i64(rows), _i64(col), c._ptr, M, N, K, a._ptr, b._ptr, alpha, beta,
                                   vals._ptr))  # fmt: skip
    if _grad_mode.enabled and (input._vals.requires_grad or mat1.requires_grad or mat2.requires_grad):

        def backward(g):
            g = g.detach().contiguous()
            gc = _ew.mul(g, beta) if input._vals.requires_grad else None
            ga = gb = None
            if mat1.requires_grad:  # alpha * G @ mat2^T, G the gradient at the pattern
                ga = empty_tensor((M, K), g.dtype)
                bt = b.t().contiguous()
                check(lib.pf_csr_mm(dt, lib.PF_CSR_SUM, M, N, K, _i64(input._crow), _i64(col), g._ptr, bt._ptr,
                                    ga._ptr, ffi.NULL))  # fmt: skip
                ga = _ew.mul(ga, alpha)
            if mat2.requires_grad:  # alpha * mat1^T @ G = alpha * (G^T @ mat1)^T
                gbt = empty_tensor((N, K), g.dtype)
                check(lib.pf_spmm_coo(dt, nnz, _i64(col), _i64(rows), g._ptr, N, M, K, a._ptr, gbt._ptr))
                gb = _ew.mul(gbt.t(), alpha)
            return gc, ga, gb

        record("SparseSampledAddmmBackward0", backward, (input._vals, mat1, mat2), vals, (a, b))
    return _make_csr(input._crow, col, vals, input._shape, rows)


sparse_sampled_addmm = sampled_addmm
