"""Sparse COO tensors: ``sparse_coo_tensor``, ``to_sparse``, ``to_dense``, ``coalesce``, and the sparse-dense
product (``torch.sparse.mm``, ``spmm``, ``sparse @ dense``) with gradients to the dense operand and the values.

A sparse tensor is the ``indices`` (int64, ``[ndim, nnz]``) and ``values`` (``[nnz]``) of its nonzero entries,
with duplicates allowed until ``coalesce`` sums them. pyframe keeps no dense memory for it: it is a Tensor whose
element access raises, so an op that has no sparse form says so instead of reading garbage. Its ``values`` carry
autograd: a sparse tensor built from values that require grad passes gradients back to them through
``to_dense``, ``coalesce`` and the product. The keys, coalescing and the product compute in
``core_c/src/sparse.c``; the rest is existing ops (``nonzero``, indexing, ``index_add_``).
"""

from __future__ import annotations

import math

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError, check, ffi, lib
from pyframe._device import check_device, sparse_coo
from pyframe._dtype import as_dtype
from pyframe.autograd.graph import record
from pyframe.ops import elementwise as _ew
from pyframe.ops._common import result_type, zeros_of
from pyframe.ops.creation import tensor as _as_tensor
from pyframe.ops.index import index_add_, index_copy_, index_select
from pyframe.ops.join import cat
from pyframe.tensor import Storage, Tensor, contiguous_strides, empty_tensor

__all__ = ["sparse_coo_tensor", "spmm", "sparse_coo", "sparse_mask"]

_NULL = ffi.cast("char *", 0)


class _SparseStorage(Storage):
    """A sparse tensor's (absent) dense memory: a view of it cannot be made."""

    __slots__ = ()

    @staticmethod
    def view_class(cls: type) -> type:
        raise NotImplementedError(
            "views of a sparse tensor are not supported in pyframe (it has no dense memory); use to_dense() first"
        )


def _dense_only(self, *args):
    raise NotImplementedError(
        f"this operation has no sparse form in pyframe: a {self._kind} of size {list(self._shape)} has no dense "
        f"memory; use to_dense() first (a {self._kind} supports {self._supported})"
    )


class _SparseTensor(Tensor):
    """What the sparse layouts share: no dense memory (element access raises, naming what is supported), and
    autograd carried by the stored ``_vals``. A subclass adds its index tensors, ``_kind`` and ``_supported``."""

    __slots__ = ("_vals",)
    _kind = "sparse tensor"
    _supported = "to_dense"
    _ptr = property(_dense_only, lambda self, value: None)
    _d = _dense_only
    numpy = _dense_only
    item = _dense_only
    tolist = _dense_only

    @classmethod
    def _blank(cls, values: Tensor, shape: tuple):
        """A tensor of this class over no memory, of ``shape`` and the values' dtype: a leaf outside autograd
        whose index tensors the caller sets."""
        t = object.__new__(cls)
        t._storage = _SparseStorage(_NULL, 0)
        t._shape = tuple(shape)
        t._strides = contiguous_strides(shape)
        t._offset = 0
        t.dtype = values.dtype
        t._numel = math.prod(shape)
        t._contig = False  # never the dense fast paths
        t._desc = t._grad = t.grad_fn = t._base = t._grad_edge = None
        t._requires_grad = t._retains_grad = False
        t._output_nr = t._grad_version = 0
        t._vals = values
        return t

    @property
    def requires_grad(self) -> bool:
        """Whether the values require grad (gradients reach them through this tensor's ops)."""
        return self._vals.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._vals.requires_grad = value

    def requires_grad_(self, requires_grad: bool = True):
        """Make the values require grad (they must be a leaf)."""
        self._vals.requires_grad_(requires_grad)
        return self

    def _nnz(self) -> int:
        """The number of stored entries (duplicates counted)."""
        return self._vals._shape[0]


class SparseCooTensor(_SparseTensor):
    """A sparse COO tensor: ``indices()`` ``[ndim, nnz]`` and ``values()`` ``[nnz]``. Same as a torch tensor of
    layout ``torch.sparse_coo`` for what graph code uses (see ``pyframe.sparse``); other ops raise
    NotImplementedError naming what is supported."""

    __slots__ = ("_idx", "_coalesced")
    is_sparse = True
    layout = sparse_coo
    _kind = "sparse COO tensor"
    _supported = "to_dense, coalesce, indices, values, torch.sparse.mm / spmm / @ with a dense matrix"

    @property
    def grad(self) -> SparseCooTensor | None:
        """The gradient of the values, as a sparse tensor at this one's indices (None before backward); one entry
        per position when this tensor is not coalesced, as torch's."""
        g = self._vals.grad
        return None if g is None else _gradient(self, g)

    def sparse_dim(self) -> int:
        """The number of sparse dims (the rows of ``indices``)."""
        return self._idx._shape[0]

    def dense_dim(self) -> int:
        """The number of dense dims: each value is a tensor of that many dims (0: one number per entry)."""
        return self._vals.ndim - 1

    def is_coalesced(self) -> bool:
        """Whether the entries are sorted and free of duplicates."""
        return self._coalesced

    def _indices(self) -> Tensor:
        """The stored indices, coalesced or not."""
        return self._idx

    def _values(self) -> Tensor:
        """The stored values, coalesced or not."""
        return self._vals

    def indices(self) -> Tensor:
        """Same as torch.Tensor.indices: the ``[ndim, nnz]`` indices of a coalesced tensor."""
        if not self._coalesced:
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._idx

    def values(self) -> Tensor:
        """Same as torch.Tensor.values: the ``[nnz]`` values of a coalesced tensor."""
        if not self._coalesced:
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._vals

    def coalesce(self) -> SparseCooTensor:
        """Same as torch.Tensor.coalesce: entries sorted by index, duplicates summed."""
        return coalesce(self)

    def to_dense(self, dtype=None, *, masked_grad: bool | None = None) -> Tensor:
        """Same as torch.Tensor.to_dense: the dense tensor (duplicates summed); differentiable to the values."""
        return to_dense(self, dtype)

    def to_sparse(self, sparse_dim: int | None = None, **kwargs) -> SparseCooTensor:
        """The tensor itself (already sparse COO)."""
        return self

    def mm(self, mat2: Tensor) -> Tensor:
        """``pyframe.sparse.mm(self, mat2)``."""
        return mm(self, mat2)

    matmul = __matmul__ = mm

    def t(self) -> SparseCooTensor:
        """The 2-d sparse matrix transposed (indices swapped)."""
        if len(self._shape) != 2 or self.dense_dim():
            raise ShapeError(f"t() expects a 2-d sparse matrix, got size {list(self._shape)} with "
                             f"{self.dense_dim()} dense dims")  # fmt: skip
        return _make(self._idx.flip(0), self._vals, self._shape[::-1], False)

    def detach(self) -> SparseCooTensor:
        """The same entries, cut from autograd."""
        return _make(self._idx, self._vals.detach(), self._shape, self._coalesced)

    def to(self, *args, **kwargs) -> SparseCooTensor:
        """The same entries with the values converted (``to(dtype)``); the device must be the CPU."""
        return _make(self._idx, self._vals.to(*args, **kwargs), self._shape, self._coalesced)

    def _with_values(self, values: Tensor) -> SparseCooTensor:  # autograd.grad's gradient of this tensor
        return _gradient(self, values)

    def _values_cotangent(self, g: Tensor) -> Tensor:
        """The gradient of the values given ``g``, one of this tensor (``autograd.grad`` of a sparse output):
        ``g``'s values when it is sparse with as many entries, else ``g`` read at the entries."""
        if isinstance(g, SparseCooTensor) and g._vals._shape == self._vals._shape:
            return g._vals
        return sparse_mask(g.to_dense() if g.layout is not Tensor.layout else g, self)._vals

    def clone(self, *, memory_format=None) -> SparseCooTensor:
        """Same as torch.Tensor.clone: a copy of the indices and values (the values' graph kept)."""
        return _make(self._idx.clone(), self._vals.clone(), self._shape, self._coalesced)

    def zero_(self) -> SparseCooTensor:
        """Same as torch.Tensor.zero_ of a sparse tensor: no entries left (nnz 0)."""
        self._set(
            _make(
                empty_tensor((self.sparse_dim(), 0), _dtype.int64),
                zeros_of((0, *self._vals._shape[1:]), self.dtype),
                self._shape,
                True,
            )
        )
        return self

    def _set(self, other: SparseCooTensor) -> SparseCooTensor:
        self._idx, self._vals, self._coalesced = other._idx, other._vals, other._coalesced
        self.dtype = other.dtype
        return self

    def add(self, other, *, alpha=1) -> SparseCooTensor:
        """Same as torch.Tensor.add of a sparse tensor: ``self + alpha * other`` with ``other`` sparse of the same
        size (a sparse result; ``dense + sparse`` is dense)."""
        return _binary("add", self, other if alpha == 1 else other * alpha, None)

    def add_(self, other, *, alpha=1) -> SparseCooTensor:
        """In-place ``add``: this tensor takes the sum's entries."""
        return _binary("add", self, other if alpha == 1 else other * alpha, self)

    def sub(self, other, *, alpha=1) -> SparseCooTensor:
        """Same as torch.Tensor.sub of a sparse tensor: ``self - alpha * other``."""
        return _binary("sub", self, other if alpha == 1 else other * alpha, None)

    def mul(self, other) -> SparseCooTensor:
        """Same as torch.Tensor.mul of a sparse tensor by a number: the values scaled."""
        return _binary("mul", self, other, None)

    def mul_(self, other) -> SparseCooTensor:
        """In-place ``mul`` by a number."""
        return _binary("mul", self, other, self)

    def div(self, other) -> SparseCooTensor:
        """Same as torch.Tensor.div of a sparse tensor by a number."""
        return _binary("div", self, other, None)

    def neg(self) -> SparseCooTensor:
        """Same as torch.Tensor.neg: the values negated."""
        return _make(self._idx, _ew.neg(self._vals), self._shape, self._coalesced)

    def norm(self, p="fro", dim=None, keepdim: bool = False, dtype=None) -> Tensor:
        """Same as torch.Tensor.norm of a sparse tensor, over all elements: the norm of the coalesced values."""
        if dim is not None:
            raise NotImplementedError("norm of a sparse tensor: dim= is not supported (the norm of all elements is)")
        values = coalesce(self)._vals
        return (values if dtype is None else values.to(as_dtype(dtype))).norm(p)

    def __add__(self, other):
        return _binary("add", self, other, None)

    def __radd__(self, other):  # dense + sparse: Python asks the subclass first
        return _binary("add", other, self, None)

    def __sub__(self, other):
        return _binary("sub", self, other, None)

    def __rsub__(self, other):
        return _binary("sub", other, self, None)

    def __mul__(self, other):
        return _binary("mul", self, other, None)

    def __rmul__(self, other):
        return _binary("mul", other, self, None)

    def __truediv__(self, other):
        return _binary("div", self, other, None)

    __neg__ = neg
    __iadd__ = add_
    __imul__ = mul_

    def __repr__(self) -> str:
        extra = ", requires_grad=True" if self.requires_grad else ""
        return (f"tensor(indices={self._idx!r},\n       values={self._vals.detach()!r},\n       "
                f"size={tuple(self._shape)}, nnz={self._nnz()}, layout=pyframe.sparse_coo{extra})")  # fmt: skip


def _make(indices: Tensor, values: Tensor, shape: tuple, coalesced: bool) -> SparseCooTensor:
    t = SparseCooTensor._blank(values, shape)
    t._idx, t._coalesced = indices, coalesced
    return t


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, requires_grad: bool = False,
                      check_invariants: bool | None = None,
                      is_coalesced: bool | None = None) -> SparseCooTensor:  # fmt: skip
    """Same as torch.sparse_coo_tensor: a sparse tensor with ``values[k]`` at ``indices[:, k]``
    (``indices`` int64 ``[sparse_dim, nnz]``, ``values`` ``[nnz, *dense_shape]``: values with dims of their own
    make a hybrid tensor, as torch's); ``size`` defaults to each sparse dim's largest index plus one, then the
    values' dims. Duplicate indices are kept until ``coalesce`` (or a product, or ``to_dense``) sums them."""
    check_device(device)
    idx = indices if isinstance(indices, Tensor) else _as_tensor(indices, dtype=_dtype.int64)
    if idx.dtype is not _dtype.int64:
        raise TypeError(f"sparse_coo_tensor: indices must be an int64 tensor, got {idx.dtype.name}")
    vals = values if isinstance(values, Tensor) else _as_tensor(values, dtype=dtype)
    if dtype is not None and vals.dtype is not as_dtype(dtype):
        vals = vals.to(as_dtype(dtype))
    if idx.ndim != 2:
        raise ShapeError(f"sparse_coo_tensor: indices must be 2-d [ndim, nnz], got shape {list(idx._shape)}")
    if vals.ndim < 1:
        raise ShapeError("sparse_coo_tensor: values must have at least 1 dim [nnz, ...], got a 0-d tensor")
    nnz = idx._shape[1]
    if vals._shape[0] != nnz:
        raise ShapeError(f"sparse_coo_tensor: indices have {nnz} entries but values have {vals._shape[0]}")
    idx = idx.detach().contiguous()
    if nnz:
        lo = idx.amin(1).tolist()
        if min(lo) < 0:
            raise RuntimeError(f"sparse_coo_tensor: found negative index {min(lo)} in indices")
        hi = [h + 1 for h in idx.amax(1).tolist()]
    else:
        hi = [0] * idx._shape[0]
    dense_shape = vals._shape[1:]
    if size is None:
        shape = tuple(hi) + dense_shape
    else:
        shape = tuple(int(n) for n in (size[0] if len(size) == 1 and isinstance(size[0], (tuple, list)) else size))
        if len(shape) != idx._shape[0] + len(dense_shape) or shape[idx._shape[0] :] != dense_shape:
            raise ShapeError(f"sparse_coo_tensor: size {list(shape)} does not match {idx._shape[0]} sparse dims "
                             f"(the rows of indices) followed by the values' dims {list(dense_shape)}")  # fmt: skip
        for d, (n, h) in enumerate(zip(shape, hi, strict=False)):
            if h > n:
                raise RuntimeError(
                    f"size is inconsistent with indices: for dim {d}, size is {n} but found index {h - 1}"
                )
    if requires_grad:
        vals.requires_grad_()
    return _make(idx, vals, shape, nnz <= 1 or bool(is_coalesced))  # is_coalesced=True: the caller's promise


def _sparse_shape(s: SparseCooTensor) -> tuple:
    return s._shape[: s._idx._shape[0]]


def _keys(s: SparseCooTensor) -> Tensor:
    """Each entry's linear (row-major) index over the sparse dims, int64 [nnz]."""
    strides = contiguous_strides(_sparse_shape(s))
    keys = zeros_of((s._idx._shape[1],), _dtype.int64)
    for d, st in enumerate(strides):
        keys = keys + s._idx[d] * st
    return keys


def coalesce(s: SparseCooTensor) -> SparseCooTensor:
    """``s`` with its entries sorted by index and duplicates summed (a new tensor; ``s`` itself if already)."""
    if s._coalesced:
        return s
    indices, slot, n = _slots(s)
    values = index_add_(zeros_of((n, *s._vals._shape[1:]), s._vals.dtype), 0, slot, s._vals)
    return _make(indices, values, s._shape, True)


def _slots(s: SparseCooTensor) -> tuple[Tensor, Tensor, int]:
    """The coalesced indices of ``s``, each entry's position among them, and their count (``pf_coo_coalesce``)."""
    nnz = s._vals._shape[0]
    keys = _keys(s).contiguous()
    slot = empty_tensor((nnz,), _dtype.int64)
    unique = empty_tensor((nnz,), _dtype.int64)
    count = ffi.new("int64_t *")
    sparse_shape = _sparse_shape(s)
    check(lib.pf_coo_coalesce(nnz, _i64(keys), max(math.prod(sparse_shape), 1), _i64(slot), _i64(unique), count))
    n = count[0]
    return _unravel(unique[:n], sparse_shape), slot, n


def _gradient(s: SparseCooTensor, gv: Tensor) -> SparseCooTensor:
    """The gradient of ``s`` from its values' gradient ``gv``, as torch gives it: at ``s``'s indices, one entry per
    position (every op reads duplicates as their sum, so each duplicate's value gradient is its position's)."""
    if s._coalesced:
        return _make(s._idx, gv, s._shape, True)
    indices, slot, n = _slots(s)
    return _make(indices, index_copy_(zeros_of((n, *gv._shape[1:]), gv.dtype), 0, slot, gv), s._shape, True)


def _unravel(keys: Tensor, sparse_shape: tuple) -> Tensor:
    """The ``[len(sparse_shape), n]`` indices of linear (row-major) keys."""
    out = empty_tensor((len(sparse_shape), keys._shape[0]), _dtype.int64)
    for d, (n_d, st) in enumerate(zip(sparse_shape, contiguous_strides(sparse_shape), strict=True)):
        out[d] = (keys // st) % max(n_d, 1)
    return out


def _sparse_size_check(fn: str, a: Tensor, b: Tensor) -> None:
    if a._shape != b._shape:
        raise RuntimeError(f"{fn}: expected 'self' and 'other' to have same size, but self has size {list(a._shape)} "
                           f"while other has size {list(b._shape)} (FYI: dense-sparse addition does not currently "
                           "support broadcasting)")  # fmt: skip


def add_sparse(t: SparseCooTensor, s: SparseCooTensor, alpha=1) -> SparseCooTensor:
    """``t + alpha * s`` for two sparse tensors, as torch adds them: with both values contiguous, one walk over
    the two entry lists (``pf_coo_merge``: equal indices met together become one entry; the result is coalesced
    when both are); otherwise the entries concatenated (coalesced once there are more than elements)."""
    _sparse_size_check("add", t, s)
    if t.sparse_dim() != s.sparse_dim():
        raise RuntimeError(f"add: expected 'self' and 'other' to have same density, but 'self' has {t.sparse_dim()} "
                           f"sparse dimensions while 'other' has {s.sparse_dim()} sparse dimensions")  # fmt: skip
    dt = result_type(t._vals, s._vals)
    tv, sv = t._vals.to(dt), s._vals.to(dt)
    if s._nnz() == 0:
        return _make(t._idx.clone(), tv.clone(), t._shape, t._coalesced)
    if t._nnz() == 0:
        return _make(s._idx.clone(), sv * alpha if alpha != 1 else sv.clone(), s._shape, s._coalesced)
    if tv.is_contiguous() and sv.is_contiguous():
        nt, ns = t._nnz(), s._nnz()
        tk, sk = _keys(t).contiguous(), _keys(s).contiguous()
        tslot, sslot = empty_tensor((nt,), _dtype.int64), empty_tensor((ns,), _dtype.int64)
        keys, count = empty_tensor((nt + ns,), _dtype.int64), ffi.new("int64_t *")
        check(lib.pf_coo_merge(nt, _i64(tk), ns, _i64(sk), _i64(tslot), _i64(sslot), _i64(keys), count))
        n = count[0]
        values = index_add_(zeros_of((n, *tv._shape[1:]), dt), 0, tslot, tv)
        values = index_add_(values, 0, sslot, sv, alpha=alpha)
        return _make(_unravel(keys[:n], _sparse_shape(t)), values, t._shape, t._coalesced and s._coalesced)
    r = _make(cat([t._idx, s._idx], 1), cat([tv, sv * alpha if alpha != 1 else sv]), t._shape, False)
    return coalesce(r) if r._nnz() > r._numel else r


def add_dense_sparse(d: Tensor, s: SparseCooTensor, alpha=1, out: Tensor | None = None) -> Tensor:
    """``d + alpha * s`` as a dense tensor: a copy of ``d`` (or ``out``, which may be ``d`` itself) with the
    values added at their indices (``index_add_``)."""
    _sparse_size_check("add", d, s)
    dt = result_type(d, s._vals)
    if out is not None and out is not d:
        out.copy_(add_dense_sparse(d, s, alpha))
        return out
    r = d if out is not None else d.to(dt).clone()
    work = r if r.is_contiguous() else r.contiguous()
    flat = work.view(math.prod(_sparse_shape(s)), *s._vals._shape[1:])
    index_add_(flat, 0, _keys(s), s._vals.to(r.dtype), alpha=alpha)
    if work is not r:
        r.copy_(work)
    return r


def _number(x) -> bool:
    return isinstance(x, (int, float, bool)) or (isinstance(x, Tensor) and not x.is_sparse and x.ndim == 0)


def _binary(name: str, a, b, out):
    """A binary op with a sparse COO operand (``pyframe.ops.elementwise`` sends them here): ``add``/``sub`` of two
    sparse tensors (sparse) or of a dense and a sparse one (dense), ``mul``/``div`` by a number (the values)."""
    sa, sb = isinstance(a, SparseCooTensor), isinstance(b, SparseCooTensor)
    if name in ("add", "sub"):
        sign = 1 if name == "add" else -1
        if sa and sb:
            r = add_sparse(a, b, sign)
            return a._set(r) if out is a else r if out is None else out.copy_(r.to_dense())
        if sa and isinstance(b, Tensor):
            raise RuntimeError(f"{name}(sparse, dense) is not supported. Use {name}(dense, sparse) instead.")
        if sb and isinstance(a, Tensor):
            return add_dense_sparse(a, b, sign, out)
    elif name in ("mul", "div") and (sa != sb) and _number(b if sa else a) and not (name == "div" and sb):
        sp, x = (a, b) if sa else (b, a)
        vals = (_ew.mul if name == "mul" else _ew.div)(sp._vals, x)
        r = _make(sp._idx, vals, sp._shape, sp._coalesced)
        return sp._set(r) if out is sp else r if out is None else out.copy_(r.to_dense())
    _dense_only(b if sb else a)


_ew.sparse_binary[SparseCooTensor] = _binary


def sparse_mask(input: Tensor, mask: SparseCooTensor) -> SparseCooTensor:  # noqa: A002
    """Same as torch.Tensor.sparse_mask: ``input``'s elements at ``mask``'s stored indices, as a sparse tensor
    with those indices (duplicates kept; coalesced when ``mask`` is)."""
    if not isinstance(mask, SparseCooTensor):
        raise TypeError(f"sparse_mask: mask must be a sparse COO tensor, got {type(mask).__name__}")
    if isinstance(input, SparseCooTensor):
        input = input.to_dense()  # noqa: A001
    _sparse_size_check("sparse_mask", input, mask)
    rows = input.reshape(math.prod(_sparse_shape(mask)), *input._shape[mask.sparse_dim() :])
    return _make(mask._idx, index_select(rows, 0, _keys(mask)), mask._shape, mask._coalesced)


def _i64(t: Tensor):
    return ffi.cast("int64_t *", t._ptr)


def to_dense(s: SparseCooTensor, dtype=None) -> Tensor:
    """The dense tensor of ``s``: its values added at their indices (duplicates summed)."""
    values = s._vals if dtype is None else s._vals.to(as_dtype(dtype))
    rows = math.prod(_sparse_shape(s))
    flat = index_add_(zeros_of((rows, *values._shape[1:]), values.dtype), 0, _keys(s), values)
    return flat.reshape(s._shape)


def to_sparse(x: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None,
              dense_dim: int | None = None) -> SparseCooTensor:  # fmt: skip
    """Same as torch.Tensor.to_sparse: the nonzero elements of ``x`` as a coalesced sparse COO tensor (its values
    take ``x``'s gradient)."""
    if isinstance(x, SparseCooTensor):
        return x
    if getattr(layout, "name", None) == "sparse_csr" and blocksize is None:
        return x.to_sparse_csr()  # pyframe.ops.sparse_csr, bound as a method
    if layout not in (None, sparse_coo) or blocksize is not None:
        raise NotImplementedError(f"to_sparse: only the sparse COO and CSR layouts are supported, got {layout}")
    k = x.ndim if sparse_dim is None else int(sparse_dim)
    if x.ndim == 0 or not 1 <= k <= x.ndim:
        raise RuntimeError(f"to_sparse: sparse_dim must be in [1, {x.ndim}] for a tensor of {x.ndim} dims, got {k}")
    sparse_shape = x._shape[:k]
    rows = x.reshape(math.prod(sparse_shape), *x._shape[k:])  # one row per sparse position
    mask = rows.detach() != 0
    if k < x.ndim:  # a position is stored when any of its dense elements is nonzero
        mask = mask.reshape(mask._shape[0], -1).any(1)
    pos = mask.nonzero().reshape(-1)
    indices = empty_tensor((k, pos._shape[0]), _dtype.int64)
    for d, (n_d, st) in enumerate(zip(sparse_shape, contiguous_strides(sparse_shape), strict=True)):
        indices[d] = (pos // st) % max(n_d, 1)
    return _make(indices, rows[pos], x._shape, True)


def mm(sparse: Tensor, dense: Tensor) -> Tensor:
    """Same as torch.sparse.mm (and ``torch.spmm``, ``sparse @ dense``): a 2-d sparse COO matrix times a 2-d
    dense one, computed over the stored entries (duplicates add up), with gradients to ``dense`` and to the
    sparse tensor's values. The gradients themselves are not differentiable again."""
    if not isinstance(sparse, SparseCooTensor):
        raise TypeError(f"sparse.mm: the first operand must be a sparse COO tensor, got {type(sparse).__name__}")
    if isinstance(dense, SparseCooTensor):
        dense = dense.to_dense()
    if not isinstance(dense, Tensor):
        raise TypeError(f"sparse.mm: the second operand must be a Tensor, got {type(dense).__name__}")
    if sparse.dense_dim():
        raise NotImplementedError("sparse.mm: hybrid sparse tensors (values with dims of their own) are not supported")
    if len(sparse._shape) != 2 or dense.ndim != 2:
        raise ShapeError(f"sparse.mm: expected 2-d operands, got sizes {list(sparse._shape)} and {list(dense._shape)}")
    M, K = sparse._shape
    if dense._shape[0] != K:
        raise ShapeError(f"sparse.mm: mat1 and mat2 shapes cannot be multiplied ({M}x{K} and "
                         f"{dense._shape[0]}x{dense._shape[1]})")  # fmt: skip
    if dense.dtype is not sparse.dtype:
        raise TypeError(f"sparse.mm: expected the same dtype, got {sparse.dtype.name} and {dense.dtype.name}")
    N = dense._shape[1]
    rows, cols = sparse._idx[0].contiguous(), sparse._idx[1].contiguous()
    vals, d = sparse._vals.detach().contiguous(), dense.detach().contiguous()
    out = empty_tensor((M, N), dense.dtype)
    nnz = vals._shape[0]
    dt = dense.dtype.code
    check(lib.pf_spmm_coo(dt, nnz, _i64(rows), _i64(cols), vals._ptr, M, K, N, d._ptr, out._ptr))
    if _grad_mode.enabled and (sparse._vals.requires_grad or dense.requires_grad):
        need_v, need_d = sparse._vals.requires_grad, dense.requires_grad

        def backward(g):
            g = g.detach().contiguous()
            gv = gd = None
            if need_v:
                gv = empty_tensor((nnz,), g.dtype)
                check(lib.pf_spmm_coo_values_grad(dt, nnz, _i64(rows), _i64(cols), M, K, N, g._ptr, d._ptr, gv._ptr))
            if need_d:  # S^T g: the entries with rows and columns exchanged
                gd = empty_tensor((K, N), g.dtype)
                check(lib.pf_spmm_coo(dt, nnz, _i64(cols), _i64(rows), vals._ptr, K, M, N, g._ptr, gd._ptr))
            return gv, gd

        record("SparseAddmmBackward0", backward, (sparse._vals, dense), out, (vals, d))
    return out


def spmm(input: SparseCooTensor, mat2: Tensor) -> Tensor:
    """Same as torch.spmm: ``pyframe.sparse.mm``."""
    return mm(input, mat2)


def sparse_adam_step(param: Tensor, grad: SparseCooTensor, exp_avg: Tensor, exp_avg_sq: Tensor, step_size: float,
                     beta1: float, beta2: float, eps: float, maximize: bool) -> None:  # fmt: skip
    """SparseAdam's update (``pf_sparse_adam``) of the contiguous ``param`` and its moments, in place, at the
    entries of ``grad`` (coalesced first: the update is not linear)."""
    g = coalesce(grad)
    keys = _keys(g).contiguous()
    values = g._vals.detach().to(param.dtype).contiguous()
    rows = math.prod(_sparse_shape(g))
    for t in (param, exp_avg, exp_avg_sq):
        t._bump()
    check(lib.pf_sparse_adam(param.dtype.code, keys._shape[0], _i64(keys), rows, param._numel // max(rows, 1),
                             values._ptr, param._ptr, exp_avg._ptr, exp_avg_sq._ptr, step_size, beta1, beta2, eps,
                             int(maximize)))  # fmt: skip
