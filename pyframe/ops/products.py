"""Products and matrix helpers built on matmul and einsum: ``outer``, ``mv``, ``addmm``,
``addmv``, ``baddbmm``, ``addbmm``, ``inner``, ``kron``, ``tensordot``, ``cross``, ``cdist``,
``diag``, ``diagonal``, ``trace``. Each composes C-backed ops, so gradients follow from theirs.
"""

from __future__ import annotations

from pyframe._dtype import bool_
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.ops import shape as sh
from pyframe.ops.linalg import matmul
from pyframe.tensor import Tensor, normalize_dim

__all__ = [
    "outer", "ger", "mv", "addmm", "addmv", "baddbmm", "addbmm", "inner", "kron", "tensordot", "cross", "cdist",
    "diag", "diagonal", "trace",
]  # fmt: skip


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


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """Same as torch.addmm: ``beta * input + alpha * (mat1 @ mat2)``."""
    return _scaled_sum(input, matmul(_dims(mat1, 2, "addmm", "mat1"), _dims(mat2, 2, "addmm", "mat2")), beta, alpha)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """Same as torch.addmv: ``beta * input + alpha * (mat @ vec)``."""
    return _scaled_sum(input, mv(mat, vec), beta, alpha)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1) -> Tensor:  # noqa: A002
    """Same as torch.baddbmm: ``beta * input + alpha * (batch1 @ batch2)`` per batch."""
    prod = matmul(_dims(batch1, 3, "baddbmm", "batch1"), _dims(batch2, 3, "baddbmm", "batch2"))
    return _scaled_sum(input, prod, beta, alpha)


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
    if len(da) != len(db) or any(a.shape[i] != b.shape[j] for i, j in zip(da, db, strict=True)):
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
    return sh.stack(parts, d)


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
    if p == 0:
        return rd.sum(ew.ne(diff, 0).to(x1.dtype), -1)
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

    def backward(g: Tensor) -> Tensor:
        z = g.new_zeros(tuple(x.shape))
        diagonal(z, offset, d1, d2).copy_(g)
        return z

    return sh.view_op(x, shape, strides, x._offset + start, backward)


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
    return v if k == 0 else sh.cat([v.new_zeros((k,)), v], 0)


def trace(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.trace: the sum of a matrix's diagonal."""
    if input.ndim != 2:
        raise RuntimeError(f"trace(): expected a matrix, got shape {tuple(input.shape)}")
    return rd.sum(diagonal(input))
