"""matmul with PyTorch's 1-d and batch-broadcast rules over the core's batched GEMM."""

from __future__ import annotations

import math
import string
import struct

from pyframe import _grad_mode
from pyframe._backend import SMALL_BYTES, ShapeError, alloc, alloc_small, check, ffi, lib
from pyframe._dtype import bfloat16, bool_, float16, float32, float64, int8, int16, int64, uint8
from pyframe.autograd.graph import record
from pyframe.ops import elementwise as ew
from pyframe.ops import join as jn
from pyframe.ops import reduce as rd
from pyframe.ops import view as sh
from pyframe.ops._common import broadcast_shapes, result_type
from pyframe.ops.creation import arange
from pyframe.ops.view import expand, squeeze, unsqueeze
from pyframe.tensor import Tensor, empty_tensor, fresh, normalize_dim

_mm, _dot = lib.pf_mm, lib.pf_dot  # bound once: these are the per-call costs of small products
_CHARS = ffi.typeof("char[]")  # resolved once: alloc_small("char[]", n) looks the type up per call

__all__ = [
    "matmul", "mm", "bmm", "dot", "outer", "ger", "mv", "addmm", "addmv", "addr", "baddbmm", "addbmm", "inner", "kron",
    "tensordot", "cross", "cdist", "diag", "diagonal", "trace", "einsum",
]  # fmt: skip


def _matmul_small(a: Tensor, b: Tensor) -> Tensor | None:
    """1-d or 2-d float operands of one dtype outside autograd: one allocation and one C
    call taking pointers and strides (no descriptors: building one costs about as much as a
    16x16 product), a 1-d operand read as a row or a column in place. None when the general
    path is needed (or must report an error)."""
    sa, sb = a._shape, b._shape
    dt = a.dtype
    if len(sa) == 1 and len(sb) == 1:  # a dot product: no GEMM
        if sa != sb:
            return None
        data = alloc_small(_CHARS, dt.itemsize)
        rc = _dot(dt.code, a._ptr, a._strides[0], b._ptr, b._strides[0], sa[0], data)
        if rc:
            check(rc)
        return fresh(data, dt.itemsize, (), (), 1, dt)
    if len(sa) == 2:
        m, k = sa
        rsa, csa = a._strides
    else:
        m, k = 1, sa[0]
        rsa, csa = k * a._strides[0], a._strides[0]
    if len(sb) == 2:
        k2, n = sb
        rsb, csb = b._strides
    else:
        k2, n = sb[0], 1
        rsb, csb = b._strides[0], 1
    if k != k2:
        return None
    nbytes = m * n * dt.itemsize
    data = alloc_small(_CHARS, nbytes) if 0 < nbytes < SMALL_BYTES else alloc(nbytes)
    rc = _mm(dt.code, m, n, k, a._ptr, rsa, csa, b._ptr, rsb, csb, data)
    if rc:
        check(rc)
    if len(sa) == 2:
        if len(sb) == 2:
            return fresh(data, nbytes, (m, n), (n, 1), m * n, dt)
        return fresh(data, nbytes, (m,), (1,), m, dt)
    return fresh(data, nbytes, sb[1:], (1,), n, dt)


def matmul(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - torch's parameter names
    """Same as torch.matmul: 1-d operands are promoted to matrices and the added dim is
    removed after; batch dims broadcast. Transposed inputs are read in place, no copy."""
    a, b = input, other
    if type(a) is Tensor and type(b) is Tensor:  # the common cases first: dense float operands outside autograd
        sa, sb, dt = a._shape, b._shape, a.dtype
        if (
            (dt is float32 or dt is float64)
            and dt is b.dtype
            and not ((a._requires_grad or b._requires_grad) and _grad_mode.enabled)
        ):
            if len(sa) == 2 and len(sb) == 2 and sa[1] == sb[0]:
                m, n = sa[0], sb[1]
                nbytes = m * n * dt.itemsize
                data = alloc_small(_CHARS, nbytes) if 0 < nbytes < SMALL_BYTES else alloc(nbytes)
                (rsa, csa), (rsb, csb) = a._strides, b._strides  # no *-unpacking: that call builds a list
                rc = _mm(dt.code, m, n, sa[1], a._ptr, rsa, csa, b._ptr, rsb, csb, data)
                if rc:
                    check(rc)
                return fresh(data, nbytes, (m, n), (n, 1), m * n, dt)
            if len(sa) == 1 and sa == sb:  # a dot product: one C call, no GEMM
                data = alloc_small(_CHARS, dt.itemsize)
                rc = _dot(dt.code, a._ptr, a._strides[0], b._ptr, b._strides[0], sa[0], data)
                if rc:
                    check(rc)
                return fresh(data, dt.itemsize, (), (), 1, dt)
    elif not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"matmul: expected two Tensors, got {type(a).__name__} and {type(b).__name__}")
    if type(a) is not Tensor and (a.is_sparse or a.is_sparse_csr):  # a sparse matrix's own product (pyframe.sparse)
        return a.matmul(b)
    if type(b) is not Tensor and b.is_sparse:  # dense @ sparse = (sparse^T @ dense^T)^T, as torch's dense result
        if a.ndim != 2 or b.ndim != 2:
            raise ShapeError(f"matmul: a dense @ sparse product takes 2-d operands, got shapes {list(a._shape)} and "
                             f"{list(b._shape)}")  # fmt: skip
        return b.t().matmul(a.t()).t()
    dt = a.dtype
    if (
        (dt is float32 or dt is float64)
        and dt is b.dtype
        and 0 < len(a._shape) <= 2
        and 0 < len(b._shape) <= 2
        and not ((a._requires_grad or b._requires_grad) and _grad_mode.enabled)
    ):
        out = _matmul_small(a, b)
        if out is not None:
            return out
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"matmul: both arguments need at least 1 dim, got shapes {list(a._shape)} and {list(b._shape)}"
        )
    dt = result_type(a, b)
    if dt in _WIDENED:
        # no kernel of their own: 16-bit floats multiply in float32 and round once (torch's CPU GEMMs
        # accumulate them in float32), narrow integers in int64, whose low bits are their wrapped product
        return matmul(a.to(_WIDENED[dt]), b.to(_WIDENED[dt])).to(dt)
    # .to records the cast, so a promoted operand still gets its gradient (as_tensor_of would drop it)
    a, b = a.to(dt), b.to(dt)
    a2 = unsqueeze(a, 0) if a.ndim == 1 else a
    b2 = unsqueeze(b, 1) if b.ndim == 1 else b
    (m, k), (k2, n) = a2._shape[-2:], b2._shape[-2:]
    if k != k2:
        raise ShapeError(
            f"matmul: shapes {list(a._shape)} and {list(b._shape)} cannot be multiplied ({m}x{k} and {k2}x{n})"
        )
    batch = broadcast_shapes(a2._shape[:-2], b2._shape[:-2])
    a3 = expand(a2, *batch, m, k) if a2._shape[:-2] != batch else a2
    b3 = expand(b2, *batch, k, n) if b2._shape[:-2] != batch else b2
    out = empty_tensor(batch + (m, n), dt)
    check(lib.pf_matmul(a3._d(), b3._d(), out._d()))
    if (a3.requires_grad or b3.requires_grad) and _grad_mode.enabled:
        # transposes are read in place by the GEMM's packing: no copies here

        def backward(g):
            return (
                matmul(g, b3.mT) if a3.requires_grad else None,
                matmul(a3.mT, g) if b3.requires_grad else None,
            )

        record("MmBackward0", backward, (a3, b3), out, (a3, b3))
    if a.ndim == 1:
        out = squeeze(out, -2)
    if b.ndim == 1:
        out = squeeze(out, -1)
    return out


_WIDENED = {float16: float32, bfloat16: float32, uint8: int64, int8: int64, int16: int64}


def _ranked(fn: str, ndim: int, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    if a.ndim != ndim or b.ndim != ndim:
        raise ShapeError(f"{fn}: expected {ndim}-d tensors, got shapes {list(a._shape)} and {list(b._shape)}")
    return a, b


def mm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002 - torch's parameter names
    """Same as torch.mm; a sparse COO or CSR ``input`` is ``torch.sparse.mm``."""
    if isinstance(input, Tensor) and (input.is_sparse or input.is_sparse_csr):
        return input.mm(mat2)
    return matmul(*_ranked("mm", 2, input, mat2))


def bmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002 - torch's parameter names
    """Same as torch.bmm."""
    a, b = _ranked("bmm", 3, input, mat2)
    if a._shape[0] != b._shape[0]:
        raise ShapeError(f"bmm: batch sizes differ: {list(a._shape)} and {list(b._shape)}")
    return matmul(a, b)


def dot(input: Tensor, tensor: Tensor) -> Tensor:  # noqa: A002 - torch's parameter names
    """Same as torch.dot."""
    return matmul(*_ranked("dot", 1, input, tensor))


def _dims(x: Tensor, want: int, name: str, what: str = "input") -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{what}' must be a Tensor, not {type(x).__name__}")
    if x.ndim != want:
        raise RuntimeError(f"{name}(): {what} must be a {want}-D tensor, got {x.ndim}-D with shape {tuple(x.shape)}")
    return x


def _scaled_sum(input: Tensor, product: Tensor, beta, alpha) -> Tensor:  # noqa: A002
    if alpha != 1:
        product = ew.mul(product, alpha)
    if beta == 0:  # torch ignores input then, NaN and inf included
        return product
    return ew.plain_add(input if beta == 1 else ew.mul(input, beta), product)


def outer(input: Tensor, vec2: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.outer: ``input[i] * vec2[j]``."""
    return ew.mul(sh.unsqueeze(_dims(input, 1, "outer"), 1), sh.unsqueeze(_dims(vec2, 1, "outer", "vec2"), 0))


ger = outer


def mv(input: Tensor, vec: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.mv: matrix times vector."""
    return matmul(_dims(input, 2, "mv"), _dims(vec, 1, "mv", "vec"))


def _half_in_float32(input, a: Tensor, b: Tensor, beta, alpha) -> Tensor | None:  # noqa: A002
    """``beta * input + alpha * (a @ b)`` for 16-bit float operands as torch's CPU GEMMs compute it: the product
    accumulated in float32 and scaled by ``alpha`` there, then ``beta * input`` added in one rounding (a fused
    multiply-add: ``beta * input`` is exact in float64, the sum is rounded to float32 once), then rounded to the
    16-bit dtype; None for other dtypes. Rounding after each step instead differs from torch in the last bit."""
    dt = result_type(input, a, b) if isinstance(input, Tensor) else result_type(a, b)
    if dt is not float16 and dt is not bfloat16:
        return None
    prod = matmul(a.to(float32), b.to(float32))
    if alpha != 1:
        prod = ew.mul(prod, _as_float32(alpha))
    if beta == 0:
        return prod.to(dt)
    scaled = ew.mul(input.to(float64), _as_float32(beta)) if isinstance(input, Tensor) else input * _as_float32(beta)
    return ew.plain_add(scaled, prod.to(float64)).to(float32).to(dt)


def _as_float32(x: float) -> float:
    """A Python number rounded to float32, as torch's kernels take a 16-bit GEMM's scalars (its opmath type)."""
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """Same as torch.addmm: ``beta * input + alpha * (mat1 @ mat2)`` (16-bit floats in float32, rounded once)."""
    mat1, mat2 = _dims(mat1, 2, "addmm", "mat1"), _dims(mat2, 2, "addmm", "mat2")
    half = _half_in_float32(input, mat1, mat2, beta, alpha)
    return half if half is not None else _scaled_sum(input, matmul(mat1, mat2), beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """Same as torch.addmv: ``beta * input + alpha * (mat @ vec)``."""
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """Same as torch.addr: ``beta * input + alpha * outer(vec1, vec2)`` (``input`` broadcast to the outer product's
    shape; ``beta == 0`` ignores it, NaN included). For bool tensors ``beta`` and ``alpha`` act as logical and,
    the sum as logical or; for integer tensors they must not be floats."""
    vec1, vec2 = _dims(vec1, 1, "addr", "vec1"), _dims(vec2, 1, "addr", "vec2")
    shape = (vec1.shape[0], vec2.shape[0])
    if not isinstance(input, Tensor):
        raise TypeError(f"addr(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if input.ndim > 2 or any(k not in (1, n) for k, n in zip(input.shape[::-1], shape[::-1], strict=False)):
        raise RuntimeError(f"addr(): input of shape {list(input.shape)} cannot be broadcast to the outer product's "
                           f"shape {list(shape)}")  # fmt: skip
    dt = result_type(input, vec1, vec2)
    for name, v in (("beta", beta), ("alpha", alpha)):
        if isinstance(v, float) and not dt.is_floating_point:
            raise RuntimeError(f"addr(): for integral input tensors, argument {name} must not be a floating point "
                               f"number, got {v}")  # fmt: skip
    if dt is bool_:  # torch: (beta and input) or (alpha and vec1 x vec2); bool * and + are and, or
        beta, alpha = bool(beta), bool(alpha)
    return _scaled_sum(input, outer(vec1, vec2), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """Same as torch.baddbmm: ``beta * input + alpha * (batch1 @ batch2)`` per batch (16-bit floats in float32,
    rounded once)."""
    batch1, batch2 = _dims(batch1, 3, "baddbmm", "batch1"), _dims(batch2, 3, "baddbmm", "batch2")
    half = _half_in_float32(input, batch1, batch2, beta, alpha)
    return half if half is not None else _scaled_sum(input, matmul(batch1, batch2), beta, alpha)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """Same as torch.addbmm: ``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``."""
    prod = matmul(_dims(batch1, 3, "addbmm", "batch1"), _dims(batch2, 3, "addbmm", "batch2"))
    return _scaled_sum(input, rd.sum(prod, 0), beta, alpha)


def inner(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.inner: the sum over the last dims of both."""
    if input.ndim == 0 or other.ndim == 0:
        return ew.mul(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(
            f"inner(): the last dimensions must match, got {tuple(input.shape)} and {tuple(other.shape)}"
        )
    return tensordot(input, other, ([input.ndim - 1], [other.ndim - 1]))


def kron(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.kron: the Kronecker product."""
    nd = max(input.ndim, other.ndim)
    a = input.reshape(*((1,) * (nd - input.ndim) + tuple(input.shape)))
    b = other.reshape(*((1,) * (nd - other.ndim) + tuple(other.shape)))
    # a[i0, 1, i1, 1, ...] * b[1, j0, 1, j1, ...] -> (i0 j0, i1 j1, ...)
    ai, bi = [], []
    for n, m in zip(a.shape, b.shape, strict=True):
        ai += [n, 1]
        bi += [1, m]
    out = ew.mul(a.reshape(*ai), b.reshape(*bi))
    return out.reshape(*[n * m for n, m in zip(a.shape, b.shape, strict=True)])


def tensordot(a: Tensor, b: Tensor, dims=2) -> Tensor:
    """Same as torch.tensordot: contracts ``dims`` (a count, or two lists of dims)."""
    if isinstance(dims, int):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise RuntimeError(f"tensordot(): dims must be in [0, {min(a.ndim, b.ndim)}], got {dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    da = [normalize_dim(d, a.ndim) for d in da]
    db = [normalize_dim(d, b.ndim) for d in db]
    if len(da) != len(db) or len(set(da)) != len(da) or len(set(db)) != len(db):
        raise RuntimeError(f"tensordot(): dims must be two lists of the same length without repeats, got {da} "
                           f"and {db}")  # fmt: skip
    for i, j in zip(da, db, strict=True):
        # torch broadcasts a contracted dim of size 1: the other side's dim is summed out first
        if b.shape[j] == 1 and a.shape[i] != 1:
            a = rd.sum(a, i, keepdim=True)
        elif a.shape[i] == 1 and b.shape[j] != 1:
            b = rd.sum(b, j, keepdim=True)
        elif a.shape[i] != b.shape[j]:
            raise RuntimeError(
                f"tensordot(): contracted dims {da} of {tuple(a.shape)} and {db} of {tuple(b.shape)} do not match"
            )
    free_a = [d for d in range(a.ndim) if d not in da]
    free_b = [d for d in range(b.ndim) if d not in db]
    k = 1
    for d in da:
        k *= a.shape[d]
    left = sh.permute(a, *(free_a + da)).reshape(-1, k)
    right = sh.permute(b, *(db + free_b)).reshape(k, -1)
    return matmul(left, right).reshape(*[a.shape[d] for d in free_a], *[b.shape[d] for d in free_b])


def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """Same as torch.cross (``linalg.cross``): the 3-vector cross product along ``dim`` (default:
    the last dim of size 3)."""
    if dim is None:
        dim = -1
    d = normalize_dim(dim, input.ndim)
    if input.shape[d] != 3 or other.shape[normalize_dim(dim, other.ndim)] != 3:
        raise RuntimeError(
            f"cross(): dimension {dim} must have size 3, got {tuple(input.shape)} and {tuple(other.shape)}"
        )
    a = [sh.select(input, d, i) for i in range(3)]
    b = [sh.select(other, normalize_dim(dim, other.ndim), i) for i in range(3)]
    parts = [
        ew.plain_sub(ew.mul(a[1], b[2]), ew.mul(a[2], b[1])),
        ew.plain_sub(ew.mul(a[2], b[0]), ew.mul(a[0], b[2])),
        ew.plain_sub(ew.mul(a[0], b[1]), ew.mul(a[1], b[0])),
    ]
    return jn.stack(parts, d)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:
    """Same as torch.cdist: pairwise p-norm distances between the rows of ``x1`` (..., P, M)
    and ``x2`` (..., R, M)."""
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(
            f"cdist(): x1 and x2 must be (..., P, M) and (..., R, M), got {tuple(x1.shape)} and {tuple(x2.shape)}"
        )
    if p < 0:
        raise RuntimeError(f"cdist(): p must be non-negative, got {p}")
    diff = ew.plain_sub(sh.unsqueeze(x1, -2), sh.unsqueeze(x2, -3))
    if p == 2:
        return rd._sqrt0(rd.sum(ew.mul(diff, diff), -1))
    if p == 0:  # the count of differing coordinates: zero gradient, still a function of x1 and x2 (torch's)
        return rd.norm(diff, 0, -1)
    if p == float("inf"):
        return rd.amax(ew.abs(diff), -1)
    if p == 1:
        return rd.sum(ew.abs(diff), -1)
    return ew.pow(rd.sum(ew.pow(ew.abs(diff), p), -1), 1.0 / p)


def diagonal(input: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:  # noqa: A002
    """Same as torch.diagonal: a view of the diagonal over ``dim1`` and ``dim2``, appended last."""
    x = input
    if x.ndim < 2:
        raise RuntimeError(f"diagonal(): input must have at least 2 dims, got shape {tuple(x.shape)}")
    d1, d2 = normalize_dim(dim1, x.ndim), normalize_dim(dim2, x.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal(): dim1 and dim2 cannot be the same dimension ({dim1})")
    n1, n2 = x.shape[d1], x.shape[d2]
    n = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    start = (offset * x.stride(d2) if offset >= 0 else -offset * x.stride(d1)) if n else 0
    keep = [d for d in range(x.ndim) if d not in (d1, d2)]
    shape = tuple(x.shape[d] for d in keep) + (n,)
    strides = tuple(x.stride(d) for d in keep) + (x.stride(d1) + x.stride(d2),)

    old = tuple(x.shape)

    def diagonal_back(g: Tensor) -> Tensor:
        z = g.new_zeros(old)
        diagonal(z, offset, d1, d2).copy_(g)
        return z

    return sh.view_op(x, shape, strides, x._offset + start, diagonal_back)


def diag(input: Tensor, diagonal: int = 0) -> Tensor:  # noqa: A002
    """Same as torch.diag: a 1-D input becomes a square matrix with it on a diagonal; a 2-D
    input gives that diagonal (a copy)."""
    if input.ndim == 1:
        # v spread along rows (k >= 0) or columns (k < 0), then masked to the diagonal: a
        # product, so gradients reach v
        n, k = input.shape[0] + abs(diagonal), abs(diagonal)
        mask = input.new_zeros((n, n), dtype=bool_)
        globals()["diagonal"](mask, diagonal).fill_(True)
        padded = sh.unsqueeze(_pad_front(input, k), 0 if diagonal >= 0 else 1)
        return ew.where(mask, sh.expand(padded, n, n), 0)
    if input.ndim == 2:
        return globals()["diagonal"](input, diagonal).clone()
    raise RuntimeError(f"diag(): input must be 1-D or 2-D, got shape {tuple(input.shape)}")


def _pad_front(v: Tensor, k: int) -> Tensor:
    return v if k == 0 else jn.cat([v.new_zeros((k,)), v], 0)


def trace(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.trace: the sum of a matrix's diagonal."""
    if input.ndim != 2:
        raise RuntimeError(f"trace(): expected a matrix, got shape {tuple(input.shape)}")
    return rd.sum(diagonal(input))


_LETTERS = set(string.ascii_letters)


def _parse(equation: str, operands: tuple) -> tuple[list[str], str]:
    eq = equation.replace(" ", "")
    if "->" in eq:
        lhs, out = eq.split("->", 1)
        explicit = True
    else:
        lhs, out, explicit = eq, "", False
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): the equation has {len(terms)} operands but {len(operands)} tensors were given")
    # an ellipsis becomes fresh upper-case-free labels, right-aligned across operands
    used = set(eq) & _LETTERS
    spare = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in used]
    ell_ndim = 0
    for t, x in zip(terms, operands, strict=True):
        if "..." in t:
            ell_ndim = max(ell_ndim, x.ndim - (len(t) - 3))
    if len(spare) < ell_ndim:
        raise ValueError("einsum(): too many dims under '...'")
    ell = "".join(spare[:ell_ndim])
    labels = []
    for t, x in zip(terms, operands, strict=True):
        if "..." in t:
            k = x.ndim - (len(t) - 3)
            if k < 0:
                raise ShapeError(f"einsum(): term {t!r} has more labels than the operand's {x.ndim} dims")
            t = t.replace("...", ell[ell_ndim - k :])
        if set(t) - _LETTERS:
            raise ValueError(f"einsum(): invalid subscript in {t!r}; use letters and '...'")
        if len(t) != x.ndim:
            raise ShapeError(f"einsum(): term {t!r} names {len(t)} dims but the operand has {x.ndim}")
        labels.append(t)
    if explicit:
        out = out.replace("...", ell)
        if set(out) - _LETTERS or len(set(out)) != len(out):
            raise ValueError(f"einsum(): invalid output subscripts {out!r}")
        for c in out:
            if not any(c in t for t in labels):
                raise ValueError(f"einsum(): output label {c!r} appears in no operand")
    else:  # implicit output: the ellipsis dims, then every label seen once, in alphabetical order
        counts = {}
        for t in labels:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return labels, out


def _diagonal(x: Tensor, t: str) -> tuple[Tensor, str]:
    """A repeated label within one term ("ii") takes the diagonal: advanced indexing, a C gather."""
    while len(set(t)) != len(t):
        c = next(c for c in t if t.count(c) > 1)
        i, j = t.index(c), t.index(c, t.index(c) + 1)
        if x._shape[i] != x._shape[j]:
            raise ShapeError(f"einsum(): label {c!r} has sizes {x._shape[i]} and {x._shape[j]}")
        perm = [i, j] + [k for k in range(x.ndim) if k not in (i, j)]
        x = x.permute(*perm)
        r = arange(x._shape[0])
        x = x[r, r]
        t = c + "".join(t[k] for k in perm[2:])
    return x, t


def _sum_out(x: Tensor, t: str, keep: set) -> tuple[Tensor, str]:
    dims = tuple(i for i, c in enumerate(t) if c not in keep)
    if not dims:
        return x, t
    return x.sum(dims), "".join(c for c in t if c in keep)


def _contract(a: Tensor, ta: str, b: Tensor, tb: str, keep: set) -> tuple[Tensor, str]:
    """a (labels ta) times b (labels tb), summed over shared labels not in ``keep``."""
    batch = [c for c in ta if c in tb and c in keep]
    summed = [c for c in ta if c in tb and c not in keep]
    a_only = [c for c in ta if c not in tb]
    b_only = [c for c in tb if c not in ta]
    size = {}
    for x, t in ((a, ta), (b, tb)):
        for c, n in zip(t, x._shape, strict=True):
            if c in size and size[c] != n and 1 not in (size[c], n):
                raise ShapeError(f"einsum(): label {c!r} has sizes {size[c]} and {n}")
            size[c] = max(size.get(c, n), n)
    am = a.permute(*[ta.index(c) for c in batch + a_only + summed]) if ta else a
    bm = b.permute(*[tb.index(c) for c in batch + summed + b_only]) if tb else b
    nb = [size[c] for c in batch]
    m, k, n = (math.prod(size[c] for c in g) for g in (a_only, summed, b_only))
    am = am.expand(*[size[c] for c in batch + a_only + summed]).reshape(*nb, m, k)
    bm = bm.expand(*[size[c] for c in batch + summed + b_only]).reshape(*nb, k, n)
    out = (am @ bm).reshape(*nb, *[size[c] for c in a_only], *[size[c] for c in b_only])
    return out, "".join(batch + a_only + b_only)


def einsum(equation: str, *operands) -> Tensor:
    """Same as torch.einsum (explicit and implicit output, '...', repeated labels for diagonals).
    Operands are contracted left to right; ``opt_einsum`` path optimisation is not done."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the equation must be a string, got {type(equation).__name__}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands or not all(isinstance(x, Tensor) for x in operands):
        raise TypeError("einsum(): operands must be one or more Tensors")
    labels, out = _parse(equation, operands)
    xs = []
    for x, t in zip(operands, labels, strict=True):
        xs.append(_diagonal(x, t))
    # sum out what no later operand and not the output needs, then contract pairwise
    acc, tacc = xs[0]
    rest_labels = [t for _, t in xs[1:]]
    acc, tacc = _sum_out(acc, tacc, set(out).union(*rest_labels))
    for i, (b, tb) in enumerate(xs[1:]):
        later = set(out).union(*rest_labels[i + 1 :])
        b, tb = _sum_out(b, tb, later | set(tacc))
        acc, tacc = _contract(acc, tacc, b, tb, later)
    acc, tacc = _sum_out(acc, tacc, set(out))
    if tacc != out:
        acc = acc.permute(*[tacc.index(c) for c in out])
    return acc if acc is not operands[0] else acc.clone()
