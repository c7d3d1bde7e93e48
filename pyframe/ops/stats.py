"""Reductions composed from the C ones: ``count_nonzero``, ``nansum``, ``nanmean``, ``median``,
``nanmedian``, ``std_mean``, ``var_mean``, ``aminmax``, and the small predicates torch has at
the top level (``is_tensor``, ``is_floating_point``, ``numel``)."""

from __future__ import annotations

from collections import namedtuple

from pyframe import _dtype
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.ops import view as sh
from pyframe.ops.index import gather
from pyframe.ops.sorting import sort
from pyframe.tensor import Tensor, normalize_dim

__all__ = [
    "count_nonzero", "nansum", "nanmean", "median", "nanmedian", "std_mean", "var_mean", "aminmax", "is_tensor",
    "is_floating_point", "is_nonzero", "numel", "is_complex",
]  # fmt: skip


MedianResult = namedtuple("median", ["values", "indices"])
AminmaxResult = namedtuple("aminmax", ["min", "max"])


def is_tensor(obj) -> bool:
    """Same as torch.is_tensor."""
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:  # noqa: A002
    """Same as torch.is_floating_point."""
    return input.dtype.is_floating_point


def is_nonzero(input: Tensor) -> bool:  # noqa: A002
    """Same as torch.is_nonzero: the truth of a one-element tensor."""
    if input.numel() != 1:
        what = "no values" if input.numel() == 0 else "more than one value"
        raise RuntimeError(f"Boolean value of Tensor with {what} is ambiguous")
    return bool(input.item())


def numel(input: Tensor) -> int:  # noqa: A002
    """Same as torch.numel."""
    return input.numel()


def count_nonzero(input: Tensor, dim=None) -> Tensor:  # noqa: A002
    """Same as torch.count_nonzero: int64 counts over ``dim`` (all dims by default)."""
    return rd.sum(ew.ne(input, 0), dim, dtype=_dtype.int64)


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """Same as torch.nansum: NaN counted as zero."""
    x = ew.where(ew.isnan(input), 0, input) if input.dtype.is_floating_point else input
    return rd.sum(x, dim, keepdim, dtype=dtype)


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:  # noqa: A002
    """Same as torch.nanmean: the mean of the non-NaN elements."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"nanmean(): expected a floating point tensor, got {input.dtype.name}")
    keep = ew.logical_not(ew.isnan(input))
    total = nansum(input, dim, keepdim, dtype=dtype)
    return ew.div(total, rd.sum(keep, dim, keepdim).to(total.dtype))


def _median(input: Tensor, dim, keepdim: bool, ignore_nan: bool, name: str):
    if dim is None:  # the value is one of the graph (all-NaN too); its gradient shared as max()'s (torch's)
        if not input.dtype.is_floating_point:
            return _median_all(input, ignore_nan)
        return ew.with_derivative(
            "NanmedianBackward0" if ignore_nan else "MedianBackward0", lambda t: _median_all(t, ignore_nan),
            lambda g, t, y: rd.evenly_distributed(g, t, y), input, saves_output=True)  # fmt: skip
    return _median_dim(input, dim, keepdim, ignore_nan, name)


def _median_all(input: Tensor, ignore_nan: bool):
    flat = input.reshape(-1)
    if ignore_nan and flat.dtype.is_floating_point:
        flat = flat[ew.logical_not(ew.isnan(flat))]
    if flat.numel() == 0:
        return ew.as_tensor_of(float("nan"), input.dtype) if input.dtype.is_floating_point else flat.sum()
    values, _ = sort(flat)
    if not ignore_nan and input.dtype.is_floating_point and bool(rd.any(ew.isnan(flat))):
        return ew.as_tensor_of(float("nan"), input.dtype)
    return values[(flat.numel() - 1) // 2]


def _median_dim(input: Tensor, dim, keepdim: bool, ignore_nan: bool, name: str):
    d = normalize_dim(dim, input.ndim) if input.ndim else 0
    if input.ndim and input.shape[d] == 0:
        raise IndexError(f"{name}(): expected a non-empty dimension {dim}")
    x = input if input.ndim else input.reshape(1)
    values, indices = sort(x, d)  # NaN sorts last
    n = x.shape[d]
    if ignore_nan and x.dtype.is_floating_point:
        # the lower middle of each row's non-NaN prefix
        valid = rd.sum(ew.logical_not(ew.isnan(x)), d, keepdim=True)
        pos = ew.clamp(ew.floor_divide(ew.plain_sub(valid, 1), 2), min=0)
    else:
        pos = None
    if pos is None:
        k = (n - 1) // 2
        i = sh.select(indices, d, k)
        if x.dtype.is_floating_point:
            # a row holding NaN has median NaN, at the first NaN's index (sort puts it at the end)
            has_nan = rd.any(ew.isnan(x), d)
            nan_at = rd.argmax(ew.isnan(x).to(_dtype.int32), d)
            i = ew.where(has_nan, nan_at, i)
    else:
        i = sh.squeeze(gather(indices, d, pos), d)
    # the value read at the index: the gradient goes to that one element (NaN rows too), as torch's
    v = sh.squeeze(gather(x, d, sh.unsqueeze(i, d)), d)
    if keepdim and input.ndim:
        v, i = sh.unsqueeze(v, d), sh.unsqueeze(i, d)
    if not input.ndim:
        v, i = v.reshape(()), i.reshape(())
    return MedianResult(v, i)


def median(input: Tensor, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """Same as torch.median: the lower of the two middle values; with ``dim``, a
    ``(values, indices)`` named tuple. NaN propagates."""
    return _median(input, dim, keepdim, False, "median")


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """Same as torch.nanmedian: the median of the non-NaN values."""
    return _median(input, dim, keepdim, True, "nanmedian")


def var_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):  # noqa: A002
    """Same as torch.var_mean: ``(var, mean)``; ``unbiased`` as in ``var`` (a bool in ``dim``'s place too)."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return rd.var(input, dim, unbiased, keepdim, correction=correction), rd.mean(input, dim, keepdim)


def std_mean(input: Tensor, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):  # noqa: A002
    """Same as torch.std_mean: ``(std, mean)``; ``unbiased`` as in ``std`` (a bool in ``dim``'s place too)."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    return rd.std(input, dim, unbiased, keepdim, correction=correction), rd.mean(input, dim, keepdim)


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """Same as torch.aminmax: ``(min, max)`` named tuple."""
    d = () if dim is None else dim
    return AminmaxResult(rd.amin(input, d, keepdim), rd.amax(input, d, keepdim))


def is_complex(input) -> bool:  # noqa: A002
    """Same as torch.is_complex: always False, pyframe has no complex dtypes."""
    return False
