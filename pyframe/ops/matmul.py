"""matmul with PyTorch's 1-d and batch-broadcast rules over the core's batched GEMM."""

from __future__ import annotations

from pyframe import _grad_mode
from pyframe._backend import ShapeError, alloc, alloc_small, check, desc, lib
from pyframe._dtype import float32, float64
from pyframe.autograd.graph import record
from pyframe.ops._common import broadcast_shapes, result_type
from pyframe.ops.shape import expand, squeeze, unsqueeze
from pyframe.tensor import Tensor, empty_tensor, fresh


def _matmul_small(a: Tensor, b: Tensor) -> Tensor | None:
    """1-d or 2-d float operands of one dtype outside autograd: one allocation and one C
    call, with the 1-d operands described as a row or a column in place. None when the
    general path is needed (or must report an error)."""
    sa, sb = a._shape, b._shape
    if len(sa) == 1 and len(sb) == 1:  # a dot product: no GEMM, no descriptors
        if sa != sb:
            return None
        dt = a.dtype
        data = alloc_small("char[]", dt.itemsize)
        rc = lib.pf_dot(dt.code, a._ptr, a._strides[0], b._ptr, b._strides[0], sa[0], data)
        if rc:
            check(rc)
        return fresh(data, dt.itemsize, (), (), 1, dt)
    if len(sa) == 2:
        m, k = sa
        da = a._d()
    else:
        m, k = 1, sa[0]
        da = desc(a._ptr, a.dtype.code, (1, k), (k * a._strides[0], a._strides[0]))
    if len(sb) == 2:
        k2, n = sb
        db = b._d()
    else:
        k2, n = sb[0], 1
        db = desc(b._ptr, b.dtype.code, (k2, 1), (b._strides[0], 1))
    if k != k2:
        return None
    shape = sa[:-1] + sb[1:]  # drops the dim a 1-d operand gained
    dt = a.dtype
    nbytes = m * n * dt.itemsize
    data = alloc(nbytes)
    check(lib.pf_matmul(da, db, desc(data, dt.code, (m, n), (n, 1))))
    return fresh(data, nbytes, shape, (n, 1)[2 - len(shape) :], m * n, dt)


def matmul(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - torch's parameter names
    """Same as torch.matmul: 1-d operands are promoted to matrices and the added dim is
    removed after; batch dims broadcast. Transposed inputs are read in place, no copy."""
    a, b = input, other
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(f"matmul: expected two Tensors, got {type(a).__name__} and {type(b).__name__}")
    if (
        a.dtype is b.dtype
        and (a.dtype is float32 or a.dtype is float64)
        and 0 < len(a._shape) <= 2
        and 0 < len(b._shape) <= 2
        and not ((a.requires_grad or b.requires_grad) and _grad_mode.enabled)
    ):
        out = _matmul_small(a, b)
        if out is not None:
            return out
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(
            f"matmul: both arguments need at least 1 dim, got shapes {list(a._shape)} and {list(b._shape)}"
        )
    dt = result_type(a, b)
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


def mm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002 - torch's parameter names
    """Same as torch.mm."""
    a, b = input, mat2
    if a.ndim != 2 or b.ndim != 2:
        raise ShapeError(f"mm: expected 2-d tensors, got shapes {list(a._shape)} and {list(b._shape)}")
    return matmul(a, b)


def bmm(input: Tensor, mat2: Tensor) -> Tensor:  # noqa: A002 - torch's parameter names
    """Same as torch.bmm."""
    a, b = input, mat2
    if a.ndim != 3 or b.ndim != 3:
        raise ShapeError(f"bmm: expected 3-d tensors, got shapes {list(a._shape)} and {list(b._shape)}")
    if a._shape[0] != b._shape[0]:
        raise ShapeError(f"bmm: batch sizes differ: {list(a._shape)} and {list(b._shape)}")
    return matmul(a, b)


def dot(input: Tensor, tensor: Tensor) -> Tensor:  # noqa: A002 - torch's parameter names
    """Same as torch.dot."""
    a, b = input, tensor
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"dot: expected 1-d tensors, got shapes {list(a._shape)} and {list(b._shape)}")
    return matmul(a, b)
