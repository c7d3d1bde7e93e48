"""Rearranging copies: flip, roll, repeat, repeat_interleave, tile, flatten/unflatten as functions, combinations,
and differences along a dim (diff, gradient). Each is composed from C-backed gathers (index_select), expand and
copies, whose gradients compose too, so nothing here carries derivative code of its own."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from pyframe import _dtype
from pyframe._backend import ShapeError
from pyframe._dtype import as_number, int64
from pyframe.ops import elementwise as ew
from pyframe.ops import join as jn
from pyframe.ops import view as sh
from pyframe.ops._common import size_args
from pyframe.ops.creation import arange, tensor, zeros
from pyframe.ops.index import index_add_, index_select
from pyframe.ops.join import cat
from pyframe.ops.scan import cumsum
from pyframe.tensor import Tensor, _int_args, empty_tensor, normalize_dim

__all__ = [
    "flip", "fliplr", "flipud", "roll", "repeat_interleave", "tile", "flatten", "unflatten", "rot90", "diff",
    "combinations", "gradient",
]  # fmt: skip


def _dims_arg(dims, ndim: int, op: str) -> tuple:
    dims = as_number(dims)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    norm = tuple(normalize_dim(d, ndim) for d in dims)
    if len(set(norm)) != len(norm):
        raise ValueError(f"{op}(): dims {list(dims)} name the same dim twice")
    return norm


def _index_along(x: Tensor, d: int, idx: Tensor) -> Tensor:
    return index_select(x, d, idx)


def flip(input: Tensor, dims) -> Tensor:  # noqa: A002 - torch's names
    """Same as torch.flip: a copy with the order of each dim in ``dims`` reversed."""

    x = input
    out = x
    for d in _dims_arg(dims, x.ndim, "flip"):
        if not x._shape:
            break
        n = x._shape[d]
        out = _index_along(out, d, arange(n - 1, -1, -1) if n else arange(0))
    return out.clone() if out is x else out


def fliplr(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.fliplr: ``input`` with dim 1 reversed (at least 2 dims; a copy, as torch)."""
    if input.ndim < 2:
        raise ValueError(f"fliplr(): input must have at least 2 dims, got {input.ndim}")
    return flip(input, (1,))


def flipud(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.flipud: ``input`` with dim 0 reversed (at least 1 dim; a copy, as torch)."""
    if input.ndim < 1:
        raise ValueError("flipud(): input must have at least 1 dim")
    return flip(input, (0,))


def roll(input: Tensor, shifts, dims=None) -> Tensor:  # noqa: A002
    """Same as torch.roll: elements shifted along dims, wrapping around; without dims, over the flattened input."""

    x = input
    shifts = as_number(shifts)
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise ValueError(f"roll(): without dims, shifts must be one int, got {list(shifts)}")
        return roll(x.reshape(-1), shifts, 0).reshape(x._shape)
    dims = as_number(dims)
    dims = (dims,) if isinstance(dims, int) else tuple(dims)
    if not x._shape and dims:
        raise IndexError(f"roll(): dimension specified as {dims[0]} but the tensor has no dimensions")
    if len(shifts) != len(dims):
        raise ValueError(f"roll(): shifts {list(shifts)} and dims {list(dims)} must have the same length")
    out = x
    for s, d in zip(shifts, dims, strict=True):
        if not isinstance(s, int) or isinstance(s, bool):
            raise TypeError(f"roll(): shifts must be ints, got {type(s).__name__}")
        d = normalize_dim(d, x.ndim)
        n = x._shape[d] if x._shape else 1
        if n == 0 or s % n == 0:
            continue
        idx = ew.remainder(ew.sub(arange(n), s % n), n)  # out[j] = x[(j - s) mod n]
        out = _index_along(out, d, idx)
    return out.clone() if out is x else out


def repeat(input: Tensor, *sizes, repeats=None) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.repeat: tiles the tensor ``sizes[i]`` times along dim i (leading dims added)."""
    x = input
    reps = _int_args(size_args("repeat", sizes, repeats, "repeats"))
    if len(reps) < x.ndim:
        raise ValueError(
            f"repeat(): number of repeat dims {len(reps)} can not be smaller than the number of tensor dims {x.ndim}"
        )
    if any(r < 0 for r in reps):
        raise ValueError(f"repeat(): repeats must be non-negative, got {list(reps)}")
    shape = (1,) * (len(reps) - x.ndim) + x._shape
    # [s0, s1] -> [1, s0, 1, s1] expanded to [r0, s0, r1, s1], then merged pairwise: one copy in C
    inter = tuple(v for n in shape for v in (1, n))
    big = tuple(v for r, n in zip(reps, shape, strict=True) for v in (r, n))
    if len(big) > 8:  # pairs would pass the 8-dim limit: repeat dim by dim instead
        out = x.reshape(shape)
        for d, r in enumerate(reps):
            if r != 1:
                out = cat([out] * r, d) if r else out.narrow(d, 0, 0)
        return out if out is not x else x.clone()
    out = x.reshape(inter).expand(*big).reshape(tuple(r * n for r, n in zip(reps, shape, strict=True)))
    return out.clone() if out._storage is x._storage else out


def tile(input: Tensor, dims) -> Tensor:  # noqa: A002
    """Same as torch.tile: repeat, with fewer dims than the tensor padded with 1s in front."""
    dims = _int_args((dims,) if isinstance(dims, int) else tuple(dims))
    dims = (1,) * (input.ndim - len(dims)) + dims
    return repeat(input, *dims)


def repeat_interleave(input, repeats=None, dim: int | None = None, *, output_size: int | None = None) -> Tensor:  # noqa: A002
    """Same as torch.repeat_interleave: each element (or slice along dim) repeated ``repeats`` times;
    ``repeats`` is an int or a 1-d int tensor with one count per element. ``repeat_interleave(counts)``
    alone gives ``[0]*counts[0] + [1]*counts[1] + ...``."""
    if repeats is None:  # repeat_interleave(repeats): the indices
        counts = input
        if not isinstance(counts, Tensor) or counts.ndim != 1 or counts.dtype.is_floating_point:
            raise TypeError("repeat_interleave(repeats): repeats must be a 1-d integer tensor")
        return repeat_interleave(arange(counts._numel), counts, 0, output_size=output_size)
    x = input
    if not isinstance(x, Tensor):
        raise TypeError(f"repeat_interleave(): input must be a Tensor, got {type(x).__name__}")
    if dim is None:
        x, d = x.reshape(-1), 0
    else:
        d = normalize_dim(dim, x.ndim)
        if not x._shape:
            x = x.reshape(1)
    n = x._shape[d]
    if isinstance(repeats, Tensor) and repeats._numel == 1 and repeats.ndim <= 1 and n != 1:
        repeats = int(repeats.item())
    if isinstance(repeats, int) and not isinstance(repeats, bool):
        if repeats < 0:
            raise ValueError(f"repeat_interleave(): repeats must be non-negative, got {repeats}")
        if output_size is not None and output_size != n * repeats:
            raise ValueError(f"repeat_interleave(): output_size={output_size} but {n} elements repeated {repeats} "
                             f"times give {n * repeats}")  # fmt: skip
        shape = x._shape
        out = x.unsqueeze(d + 1).expand(*shape[: d + 1], repeats, *shape[d + 1 :])
        out = out.reshape(*shape[:d], n * repeats, *shape[d + 1 :])
        return out.clone() if out._storage is x._storage else out
    if not isinstance(repeats, Tensor) or repeats.dtype.is_floating_point or repeats.ndim > 1:
        raise TypeError("repeat_interleave(): repeats must be an int or a 1-d integer tensor")
    counts = repeats.reshape(-1).to(int64)
    if counts._numel != n:
        raise ShapeError(f"repeat_interleave(): repeats has {counts._numel} counts for a dim of size {n}")
    if n and ew.lt(counts, 0).any().item():
        raise ValueError("repeat_interleave(): repeats must be non-negative")
    ends = cumsum(counts, 0)
    total = int(ends[-1].item()) if n else 0
    if output_size is not None and output_size != total:
        raise ValueError(f"repeat_interleave(): output_size={output_size} but the repeats sum to {total}")
    # a 1 where each source index starts (after the first), summed up: the source index of each output slot
    marks = zeros(total, dtype=int64)
    starts = ends[:-1]
    starts = starts[ew.lt(starts, total)]
    if starts._numel:
        index_add_(marks, 0, starts, zeros(starts._numel, dtype=int64).fill_(1))
    idx = cumsum(marks, 0)
    return _index_along(x, d, idx)


def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:  # noqa: A002
    """Same as torch.flatten."""
    return input.flatten(start_dim, end_dim)


def unflatten(input: Tensor, dim: int, sizes: Sequence[int]) -> Tensor:  # noqa: A002
    """Same as torch.unflatten: dim ``dim`` split into ``sizes`` (one entry may be -1)."""
    x = input
    d = normalize_dim(dim, x.ndim)
    sizes = _int_args(tuple(sizes))
    if not sizes:
        raise ValueError("unflatten(): sizes must be non-empty")
    n = x._shape[d]
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    if sizes.count(-1) > 1 or (-1 not in sizes and known != n) or (-1 in sizes and (known == 0 or n % known)):
        raise ShapeError(f"unflatten(): sizes {list(sizes)} don't multiply up to the size {n} of dim {dim}")
    return x.reshape(*x._shape[:d], *sizes, *x._shape[d + 1 :])


def rot90(input: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:  # noqa: A002
    """Same as torch.rot90: rotate by 90 degrees ``k`` times from ``dims[0]`` towards ``dims[1]``."""

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
    if not isinstance(n, int) or n < 0:
        raise RuntimeError(f"diff(): order must be a non-negative int but got {n!r}")
    if not input.ndim:
        raise RuntimeError("diff(): expects input to be at least one-dimensional")
    d = normalize_dim(dim, input.ndim)
    x = input
    if prepend is not None or append is not None:
        x = jn.cat([t for t in (prepend, input, append) if t is not None], d)
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = sh.narrow(x, d, 1, m - 1), sh.narrow(x, d, 0, m - 1)
        x = ew.ne(hi, lo) if x.dtype is _dtype.bool_ else ew.plain_sub(hi, lo)
    return x


def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:  # noqa: A002
    """Same as torch.combinations: the length-``r`` combinations of a 1-d tensor's elements (with repeats when
    ``with_replacement``), in itertools' order, as rows of an [N, r] tensor."""
    if not isinstance(input, Tensor) or input.ndim != 1:
        got = input.ndim if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"combinations(): expect a 1D vector, but got a {got}-d input")
    if not isinstance(r, int) or r < 0:
        raise RuntimeError(f"combinations(): expect a non-negative number, but got {r!r}")
    if r == 0:
        return empty_tensor((0,), input.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input._shape[0]), r))  # positions only: the values are read by one indexing call
    if not rows:
        return empty_tensor((0, r), input.dtype)
    return input[tensor(rows, dtype=int64)]


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:  # noqa: A002
    """Same as torch.gradient: the derivative estimated along each of ``dim`` (all by default) by central
    differences inside and one-sided ones (first or second order, ``edge_order``) at the ends; ``spacing`` a
    number, one per dim, or coordinate tensors (one 1-d tensor per dim)."""
    x = input
    dims = list(range(x.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    dims = [normalize_dim(d, x.ndim) for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError(f"torch.gradient(): dim {dims} names a dim more than once")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    if spacing is None:
        spacing = 1
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length "
                               f"{len(dims)} (one per dim), but got a list of length {len(spacing)}")  # fmt: skip
        spacings = list(spacing)
    else:
        spacings = [spacing] * len(dims)
    if not x.dtype.is_floating_point:
        x = x.to(_dtype.get_default_dtype())
    out = []
    for d, h in zip(dims, spacings, strict=True):
        n = x._shape[d]
        if n < edge_order + 1:
            raise RuntimeError(f"torch.gradient expected each dimension size to be at least edge_order+1, got size "
                               f"{n} at dim {d}")  # fmt: skip
        out.append(_gradient_along(x, d, h, edge_order))
    return tuple(out)


def _gradient_along(f: Tensor, d: int, h, edge_order: int) -> Tensor:
    """NumPy's and torch's formulas: second-order accurate central differences inside (for uneven coordinates
    too), first- or second-order one-sided ones at the two ends."""
    n = f._shape[d]

    def part(t, start, length):
        return sh.narrow(t, d, start, length)

    if isinstance(h, Tensor):  # coordinates along d
        if h.ndim != 1 or h._numel != n:
            raise RuntimeError(f"torch.gradient expected each tensor in spacing to be 1-d of the dim's size {n}")
        shape = [1] * f.ndim
        shape[d] = -1
        x = h.to(f.dtype)
        dx = ew.plain_sub(x[1:], x[:-1])
        dx1, dx2 = dx[:-1].reshape(shape), dx[1:].reshape(shape)
        a = ew.div(ew.neg(dx2), ew.mul(dx1, ew.plain_add(dx1, dx2)))
        b = ew.div(ew.plain_sub(dx2, dx1), ew.mul(dx1, dx2))
        c = ew.div(dx1, ew.mul(dx2, ew.plain_add(dx1, dx2)))
        inside = ew.plain_add(ew.plain_add(ew.mul(a, part(f, 0, n - 2)), ew.mul(b, part(f, 1, n - 2))),
                              ew.mul(c, part(f, 2, n - 2)))  # fmt: skip
        steps = [float(v) for v in (dx[0], dx[1] if n > 2 else dx[0], dx[-2] if n > 2 else dx[-1], dx[-1])]
    else:
        step = float(h)
        inside = ew.div(ew.plain_sub(part(f, 2, n - 2), part(f, 0, n - 2)), 2.0 * step)
        steps = [step] * 4
    f0, f1, fl, fk = part(f, 0, 1), part(f, 1, 1), part(f, n - 1, 1), part(f, n - 2, 1)
    if edge_order == 1:
        first = ew.div(ew.plain_sub(f1, f0), steps[0])
        last = ew.div(ew.plain_sub(fl, fk), steps[3])
    else:
        f2, fj = part(f, 2, 1), part(f, n - 3, 1)
        h1, h2 = steps[0], steps[1]
        a, b, c = -(2 * h1 + h2) / (h1 * (h1 + h2)), (h1 + h2) / (h1 * h2), -h1 / (h2 * (h1 + h2))
        first = ew.plain_add(ew.plain_add(ew.mul(f0, a), ew.mul(f1, b)), ew.mul(f2, c))
        h1, h2 = steps[2], steps[3]
        a, b, c = h2 / (h1 * (h1 + h2)), -(h2 + h1) / (h1 * h2), (2 * h2 + h1) / (h2 * (h1 + h2))
        last = ew.plain_add(ew.plain_add(ew.mul(fj, a), ew.mul(fk, b)), ew.mul(fl, c))
    return jn.cat([first, inside, last], d)
