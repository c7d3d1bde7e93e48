"""Arranging and selecting, composed from views, ``cat``, ``gather`` and indexing: ``hstack``,
``vstack``, ``column_stack``, ``dstack``, ``movedim``, ``atleast_*d``, ``broadcast_tensors``,
``tensor_split``, ``rot90``, ``diff``, ``meshgrid``, ``take_along_dim``, ``masked_select``,
``scatter``, ``index_fill``, ``index_copy``, ``tril_indices``/``triu_indices``, ``block_diag``.
Gradients follow from the ops they are built on.
"""

from __future__ import annotations

from pyframe import _dtype
from pyframe._backend import ShapeError
from pyframe.factory import arange
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.ops import shape as sh
from pyframe.ops._common import broadcast_shapes as _broadcast_shapes
from pyframe.tensor import Tensor, normalize_dim

__all__ = [
    "hstack", "vstack", "row_stack", "column_stack", "dstack", "movedim", "moveaxis", "atleast_1d", "atleast_2d",
    "atleast_3d", "broadcast_tensors", "broadcast_shapes", "tensor_split", "hsplit", "vsplit", "rot90", "diff",
    "meshgrid", "take_along_dim", "masked_select", "scatter", "index_fill", "index_copy", "tril_indices",
    "triu_indices", "block_diag", "cartesian_prod",
]  # fmt: skip


def _seq(tensors, name: str) -> list[Tensor]:
    if isinstance(tensors, Tensor) or not all(isinstance(t, Tensor) for t in tensors):
        raise TypeError(f"{name}(): expected a sequence of Tensors")
    if not tensors:
        raise ValueError(f"{name}(): expected a non-empty sequence of tensors")
    return list(tensors)


def atleast_1d(*tensors):
    """Same as torch.atleast_1d."""
    out = [t.reshape(1) if t.ndim == 0 else t for t in _unpack(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_2d(*tensors):
    """Same as torch.atleast_2d."""
    out = [t.reshape(1, -1) if t.ndim < 2 else t for t in _unpack(tensors)]
    return out[0] if len(out) == 1 else tuple(out)


def atleast_3d(*tensors):
    """Same as torch.atleast_3d: 0-d -> (1, 1, 1), (n,) -> (1, n, 1), (m, n) -> (m, n, 1)."""
    out = []
    for t in _unpack(tensors):
        if t.ndim == 0:
            t = t.reshape(1, 1, 1)
        elif t.ndim == 1:
            t = t.reshape(1, -1, 1)
        elif t.ndim == 2:
            t = sh.unsqueeze(t, 2)
        out.append(t)
    return out[0] if len(out) == 1 else tuple(out)


def _unpack(tensors) -> list[Tensor]:
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tensors[0]
    return _seq(tensors, "atleast")


def hstack(tensors) -> Tensor:
    """Same as torch.hstack: along dim 1, or dim 0 for 1-D tensors."""
    ts = [atleast_1d(t) for t in _seq(tensors, "hstack")]
    return sh.cat(ts, 0 if ts[0].ndim == 1 else 1)


def vstack(tensors) -> Tensor:
    """Same as torch.vstack: 1-D tensors become rows, then along dim 0."""
    return sh.cat([atleast_2d(t) for t in _seq(tensors, "vstack")], 0)


row_stack = vstack


def dstack(tensors) -> Tensor:
    """Same as torch.dstack: along dim 2 after atleast_3d."""
    return sh.cat([atleast_3d(t) for t in _seq(tensors, "dstack")], 2)


def column_stack(tensors) -> Tensor:
    """Same as torch.column_stack: 0-d and 1-d tensors become columns, then along dim 1."""
    ts = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in _seq(tensors, "column_stack")]
    return sh.cat(ts, 1)


def movedim(input: Tensor, source, destination) -> Tensor:  # noqa: A002
    """Same as torch.movedim: the ``source`` dims moved to ``destination``, others in order."""
    src = [source] if isinstance(source, int) else list(source)
    dst = [destination] if isinstance(destination, int) else list(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim(): invalid source or destination dims: source ({src}) and destination ({dst}) differ in length"
        )
    n = input.ndim
    src = [normalize_dim(d, n) for d in src]
    dst = [normalize_dim(d, n) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim(): repeated dim in source ({src}) or destination ({dst})")
    order = [None] * n
    for s, d in zip(src, dst, strict=True):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [next(rest) if o is None else o for o in order]
    return sh.permute(input, *order)


moveaxis = movedim


def broadcast_shapes(*shapes):
    """Same as torch.broadcast_shapes."""
    from pyframe.tensor import Size

    out: tuple = ()
    for s in shapes:
        out = _broadcast_shapes(out, (s,) if isinstance(s, int) else tuple(s))
    return Size(out)


def broadcast_tensors(*tensors) -> tuple[Tensor, ...]:
    """Same as torch.broadcast_tensors: views expanded to one shape."""
    ts = _unpack(tensors)
    shape = broadcast_shapes(*(t.shape for t in ts))
    return tuple(sh.expand(t, *shape) for t in ts)


def tensor_split(input: Tensor, indices_or_sections, dim: int = 0) -> tuple[Tensor, ...]:  # noqa: A002
    """Same as torch.tensor_split: ``n`` nearly equal parts (the first ``size % n`` one longer),
    or parts between the given indices. Views."""
    d = normalize_dim(dim, input.ndim)
    size = input.shape[d]
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"tensor_split(): number of sections must be larger than 0, got {n}")
        q, r = divmod(size, n)
        bounds, start = [], 0
        for i in range(n):
            start += q + (1 if i < r else 0)
            bounds.append(start)
        bounds = bounds[:-1]
    else:
        bounds = [int(i) for i in indices_or_sections]
    parts, start = [], 0
    for end in [*bounds, size]:
        lo, hi = min(max(start, 0), size), min(max(end, 0), size)
        parts.append(sh.narrow(input, d, lo, max(hi - lo, 0)))
        start = end
    return tuple(parts)


def hsplit(input: Tensor, sections) -> tuple[Tensor, ...]:  # noqa: A002
    """Same as torch.hsplit."""
    return tensor_split(input, sections, 0 if input.ndim == 1 else 1)


def vsplit(input: Tensor, sections) -> tuple[Tensor, ...]:  # noqa: A002
    """Same as torch.vsplit."""
    return tensor_split(input, sections, 0)


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:  # noqa: A002
    """Same as torch.rot90: rotate by 90 degrees ``k`` times from ``dims[0]`` towards ``dims[1]``."""
    from pyframe.ops.rearrange import flip

    if len(dims) != 2:
        raise RuntimeError(f"rot90(): expected total rotation dims == 2, but got dims = {len(dims)}")
    d0, d1 = (normalize_dim(d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"rot90(): expected rotation dims to be different, got {dims}")
    k %= 4
    if k == 1:
        return sh.transpose(flip(input, [d1]), d0, d1)
    if k == 2:
        return flip(input, [d0, d1])
    if k == 3:
        return flip(sh.transpose(input, d0, d1), [d1])
    return input.clone()


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend=None, append=None) -> Tensor:  # noqa: A002
    """Same as torch.diff: the n-th forward difference along ``dim``."""
    d = normalize_dim(dim, input.ndim)
    x = input
    if prepend is not None or append is not None:
        x = sh.cat([t for t in (prepend, input, append) if t is not None], d)
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = sh.narrow(x, d, 1, m - 1), sh.narrow(x, d, 0, m - 1)
        x = ew.ne(hi, lo) if x.dtype is _dtype.bool_ else ew.plain_sub(hi, lo)
    return x


def meshgrid(*tensors, indexing: str = "ij") -> tuple[Tensor, ...]:
    """Same as torch.meshgrid (``indexing="ij"`` or ``"xy"``): expanded views."""
    ts = _unpack(tensors)
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid(): indexing must be 'ij' or 'xy', got {indexing!r}")
    if any(t.ndim > 1 for t in ts):
        raise RuntimeError("meshgrid(): expects all tensors to be 0-D or 1-D")
    ts = [t.reshape(-1) for t in ts]
    swap = indexing == "xy" and len(ts) >= 2
    if swap:
        ts[0], ts[1] = ts[1], ts[0]
    shape = [t.shape[0] for t in ts]
    grids = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = shape[i]
        grids.append(sh.expand(t.reshape(*view), *shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors) -> Tensor:
    """Same as torch.cartesian_prod: every combination, as rows."""
    ts = _unpack(tensors)
    if len(ts) == 1:
        return ts[0]
    return sh.stack([g.reshape(-1) for g in meshgrid(*ts, indexing="ij")], 1)


def take_along_dim(input: Tensor, indices: Tensor, dim: int | None = None) -> Tensor:  # noqa: A002
    """Same as torch.take_along_dim: ``gather`` with broadcasting (flattened when ``dim`` is None)."""
    if dim is None:
        return ix.gather(input.reshape(-1), 0, indices.reshape(-1))
    d = normalize_dim(dim, input.ndim)
    if input.ndim != indices.ndim:
        raise RuntimeError(
            f"take_along_dim(): input and indices should have the same number of dimensions, "
            f"got {input.ndim} and {indices.ndim}"
        )
    shape_x = list(input.shape)
    shape_i = list(indices.shape)
    shape_x[d] = shape_i[d] = 1
    common = list(broadcast_shapes(shape_x, shape_i))
    sx, si = list(common), list(common)
    sx[d], si[d] = input.shape[d], indices.shape[d]
    return ix.gather(sh.expand(input, *sx), d, sh.expand(indices, *si).contiguous())


def masked_select(input: Tensor, mask: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.masked_select: the elements where ``mask`` (broadcast) is True, as 1-D."""
    if not isinstance(mask, Tensor) or mask.dtype is not _dtype.bool_:
        raise TypeError(f"masked_select(): mask must be a bool tensor, got {getattr(mask, 'dtype', type(mask))}")
    x, m = broadcast_tensors(input, mask)
    return ix.getitem(x, m.contiguous())


def _scatter_key(x: Tensor, dim: int, index: Tensor) -> tuple:
    """The advanced-index key that writes ``x[..., index[i, j, ...], ...]`` along ``dim``."""
    if index.ndim != x.ndim:
        raise RuntimeError(
            f"scatter(): index must have as many dims as self ({x.ndim}), got shape {tuple(index.shape)}"
        )
    for k in range(x.ndim):
        if k != dim and index.shape[k] > x.shape[k]:
            raise RuntimeError(
                f"scatter(): index {tuple(index.shape)} is larger than self {tuple(x.shape)} outside dim {dim}"
            )
    key = []
    for k in range(x.ndim):
        if k == dim:
            key.append(index)
        else:
            shape = [1] * x.ndim
            shape[k] = index.shape[k]
            key.append(arange(index.shape[k]).reshape(*shape))
    return tuple(key)


def scatter(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:  # noqa: A002
    """Same as torch.scatter: a copy of ``input`` with ``src`` (a tensor, or a number as
    ``value``) written at ``index`` along ``dim``; ``reduce`` "add"/"multiply" as torch's."""
    return scatter_(input.clone(), dim, index, src, value=value, reduce=reduce)


def scatter_(input: Tensor, dim: int, index: Tensor, src=None, *, value=None, reduce=None) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.scatter_."""
    if src is None and value is None:
        raise TypeError("scatter_(): expected src (a tensor) or value (a number)")
    if src is None:
        src = value
    d = normalize_dim(dim, input.ndim)
    index = ix._as_index(index)
    if index.numel() == 0:
        return input
    if reduce == "add":
        if not isinstance(src, Tensor):
            src = ew.as_tensor_of(src, input.dtype).expand(*index.shape)
        return ix.scatter_add_(input, d, index, _crop(src, index.shape))
    if reduce not in (None, "multiply"):
        raise ValueError(f"scatter_(): reduce must be 'add' or 'multiply', got {reduce!r}")
    key = _scatter_key(input, d, index)
    values = _crop(src, index.shape) if isinstance(src, Tensor) else src
    if reduce == "multiply":
        values = ew.mul(ix.getitem(input, key), values)
    ix.setitem(input, key, values)
    return input


def _crop(src: Tensor, shape) -> Tensor:
    """torch reads ``src`` over the index's extent only."""
    if src.ndim != len(shape) or any(s < n for s, n in zip(src.shape, shape, strict=True)):
        raise RuntimeError(f"scatter(): src {tuple(src.shape)} must be at least as large as index {tuple(shape)}")
    return src[tuple(slice(0, n) for n in shape)]


def index_fill(input: Tensor, dim: int, index: Tensor, value) -> Tensor:  # noqa: A002
    """Same as torch.index_fill: a copy with the slices at ``index`` along ``dim`` set to ``value``."""
    return index_fill_(input.clone(), dim, index, value)


def index_fill_(input: Tensor, dim: int, index: Tensor, value) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.index_fill_."""
    d = normalize_dim(dim, input.ndim) if input.ndim else 0
    key = (slice(None),) * d + (ix._as_index(index).reshape(-1),)
    ix.setitem(input, key, value)
    return input


def index_copy(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.index_copy: a copy with ``source``'s slices written at ``index`` along ``dim``."""
    return index_copy_(input.clone(), dim, index, source)


def index_copy_(input: Tensor, dim: int, index: Tensor, source: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.index_copy_."""
    d = normalize_dim(dim, input.ndim) if input.ndim else 0
    index = ix._as_index(index).reshape(-1)
    if source.ndim and source.shape[d] != index.shape[0]:
        raise ShapeError(
            f"index_copy_(): source has {source.shape[d]} slices along dim {dim}, index has {index.shape[0]}"
        )
    ix.setitem(input, (slice(None),) * d + (index,), source)
    return input


def _tri_indices(row: int, col: int, offset: int, upper: bool, dtype) -> Tensor:
    r = sh.expand(arange(row).reshape(row, 1), row, col)
    c = sh.expand(arange(col).reshape(1, col), row, col)
    gap = ew.plain_sub(c, r)
    keep = ew.ge(gap, offset) if upper else ew.le(gap, offset)
    return sh.stack([ix.getitem(r, keep), ix.getitem(c, keep)], 0).to(_dtype.as_dtype(dtype))


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=_dtype.int64, device=None) -> Tensor:
    """Same as torch.tril_indices: the (2, N) coordinates of the lower triangle."""
    return _tri_indices(row, col, offset, False, dtype)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=_dtype.int64, device=None) -> Tensor:
    """Same as torch.triu_indices: the (2, N) coordinates of the upper triangle."""
    return _tri_indices(row, col, offset, True, dtype)


def block_diag(*tensors) -> Tensor:
    """Same as torch.block_diag: the tensors (0-d, 1-d rows or matrices) on a block diagonal."""
    ts = [t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t for t in tensors]
    if any(t.ndim != 2 for t in ts):
        raise RuntimeError("block_diag(): input tensors must have 2 or fewer dimensions")
    rows = sum(t.shape[0] for t in ts)
    out_rows, c0 = [], 0
    cols = sum(t.shape[1] for t in ts)
    for t in ts:
        left = t.new_zeros((t.shape[0], c0))
        right = t.new_zeros((t.shape[0], cols - c0 - t.shape[1]))
        out_rows.append(sh.cat([left, t, right], 1))
        c0 += t.shape[1]
    return sh.cat(out_rows, 0) if out_rows else ew.as_tensor_of(0.0, _dtype.float32).new_zeros((rows, cols))
