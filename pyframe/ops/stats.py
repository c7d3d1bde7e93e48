"""Reductions composed from the C ones: ``count_nonzero``, ``nansum``, ``nanmean``, ``median``,
``nanmedian``, ``std_mean``, ``var_mean``, ``aminmax``, and the small predicates torch has at
the top level (``is_tensor``, ``is_floating_point``, ``numel``)."""

from __future__ import annotations

import warnings
from collections import namedtuple

from pyframe import _dtype
from pyframe.ops import elementwise as ew
from pyframe.ops import pointwise as pw
from pyframe.ops import reduce as rd
from pyframe.ops import view as sh
from pyframe.ops.index import gather
from pyframe.ops.sorting import sort
from pyframe.tensor import Tensor, normalize_dim

__all__ = [
    "count_nonzero", "nansum", "nanmean", "median", "nanmedian", "std_mean", "var_mean", "aminmax", "is_tensor",
    "is_floating_point", "is_nonzero", "numel", "is_complex", "quantile", "nanquantile", "cov", "corrcoef",
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


# ---- quantiles, covariance --------------------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(input: Tensor, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool, name: str) -> Tensor:
    """torch's algorithm: sort (NaN last), a rank per q from the count of values (of non-NaN values for
    nanquantile; the last index when quantile meets a NaN), then the neighbours read and interpolated."""
    if not isinstance(input, Tensor) or input.dtype not in (_dtype.float32, _dtype.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest. "
                           f"Got {interpolation!r}")  # fmt: skip
    scalar_q = not isinstance(q, Tensor)
    if scalar_q:
        qt = ew.as_tensor_of(float(q), input.dtype)
    else:
        if q.ndim > 1:
            raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
        qt = q.detach()
    if qt._numel and not bool(ew.logical_and(ew.ge(qt, 0.0), ew.le(qt, 1.0)).all()):
        raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
    if input._numel == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if dim is None:
        rows, kept = input.reshape(-1), ()
    else:
        d = normalize_dim(dim, input.ndim)
        rows = sh.movedim(input, d, -1) if input.ndim else input.reshape(1)
        kept = tuple(s for k, s in enumerate(input._shape) if k != d)
    ordered = sort(rows, -1).values  # (..., n)
    n = ordered._shape[-1]
    qv = qt.reshape((-1,) + (1,) * ordered.ndim)  # (k, ..., 1)
    nan = ew.isnan(ordered)
    if ignore_nan:
        ranks = ew.mul(qv, ew.sub(rd.sum(ew.logical_not(nan), -1, keepdim=True), 1).to(input.dtype))
        ranks = ew.where(ew.lt(ranks, 0.0), 0.0, ranks)
    else:
        ranks = ew.where(rd.any(nan, -1, keepdim=True), float(n - 1), ew.mul(qv, float(n - 1)))
    ranks = {"lower": ew.floor, "higher": ew.ceil, "nearest": ew.round}.get(interpolation, lambda r: r)(ranks)
    spread = sh.expand(ordered.unsqueeze(0), ranks._shape[0], *ordered._shape)
    below_at = ranks.to(_dtype.int64)
    below = gather(spread, -1, below_at)
    if interpolation in ("linear", "midpoint"):
        weight = ew.sub(ranks, below_at.to(input.dtype)) if interpolation == "linear" else 0.5
        above = gather(spread, -1, ew.ceil(ranks).to(_dtype.int64))
        below = pw.lerp(below, above, weight)
    out = below.reshape((ranks._shape[0],) + kept)
    if keepdim:
        ones = (1,) * input.ndim if dim is None else tuple(1 if k == d else s for k, s in enumerate(input._shape))
        out = out.reshape((ranks._shape[0],) + ones)
    return out.reshape(out._shape[1:]) if scalar_q or qt.ndim == 0 else out


def quantile(input: Tensor, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:  # noqa: A002
    """Same as torch.quantile: the q-th quantiles (q a number or a 1-d tensor in [0, 1]) over ``dim`` or all
    elements, interpolated as ``interpolation`` says; a NaN in a row makes its quantile NaN. With a tensor q
    the quantiles come first in the result's dims."""
    return _quantile(input, q, dim, keepdim, interpolation, False, "quantile")


def nanquantile(input: Tensor, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear") -> Tensor:  # noqa: A002
    """Same as torch.nanquantile: ``quantile`` of the non-NaN values (NaN where a row has none)."""
    return _quantile(input, q, dim, keepdim, interpolation, True, "nanquantile")


def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None, aweights: Tensor | None = None):  # noqa: A002
    """Same as torch.cov: the covariance of the variables in ``input``'s rows (observations in its columns; a
    1-d input is one variable), with Bessel's ``correction`` and optional integer frequency weights and
    floating observation weights."""
    if not isinstance(input, Tensor) or input.ndim > 2:
        got = input.ndim if isinstance(input, Tensor) else type(input).__name__
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with {got}")
    if input.dtype is _dtype.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    n = x._shape[1]
    w = None
    for kind, t in (("fweights", fweights), ("aweights", aweights)):
        if t is None:
            continue
        if t.ndim > 1:
            raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got {kind} with "
                               f"{t.ndim} dimensions")  # fmt: skip
        if (kind == "fweights") == t.dtype.is_floating_point:
            want = "integral" if kind == "fweights" else "floating point"
            raise RuntimeError(f"cov(): expected {kind} to have {want} dtype but got {kind} with {t.dtype.name} dtype")
        if t._numel != n:
            raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are observations in the "
                               f"input but got {t._numel} != {n}")  # fmt: skip
        if n and bool(ew.lt(t, 0).any()):
            raise RuntimeError(f"cov(): {kind} cannot be negative")
        w = t if w is None else ew.mul(w, t)
    w_sum = rd.sum(w) if w is not None else n
    if w is not None and not bool(ew.ne(w_sum, 0)):
        raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = ew.div(rd.sum(x if w is None else ew.mul(x, w), 1), w_sum)
    if w is not None and aweights is not None and correction != 0:
        norm = ew.sub(w_sum, ew.div(ew.mul(rd.sum(ew.mul(w, aweights)), correction), w_sum))
    else:
        norm = ew.sub(w_sum, correction) if isinstance(w_sum, Tensor) else w_sum - correction
    if float(norm) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)  # fmt: skip
        norm = 0.0
    centred = ew.sub(x, avg.unsqueeze(1))
    c = centred.matmul((centred if w is None else ew.mul(centred, w)).t())
    return ew.div(c, norm).squeeze()


def corrcoef(input: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.corrcoef: Pearson's correlation coefficients of the variables in ``input``'s rows, clipped
    to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return ew.div(c, c)
    std = ew.sqrt(c.diagonal())
    c = ew.div(ew.div(c, std.unsqueeze(1)), std.unsqueeze(0))
    return ew.clamp(c, -1.0, 1.0)
