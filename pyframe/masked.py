"""pyframe.masked: same as torch.masked's reductions and normalizations on strided tensors with a ``mask``.

Each is torch's own composition: the masked-out elements are replaced by the reduction's identity (0 for
``sum``, 1 for ``prod``, -inf for ``amax``/``logsumexp``, NaN for ``median``, ...) with ``where``, and the
ordinary op runs on the result, so gradients flow to the masked-in elements only. ``mask`` is a bool tensor
broadcastable to ``input`` (not of more dims); ``mask=None`` keeps every element. ``mean``, ``var`` and
``std`` of a fully masked-out slice are NaN, as torch's. Sparse layouts and ``MaskedTensor`` are not there.
"""

from __future__ import annotations

import math

from pyframe import _dtype, ops
from pyframe.linalg import vector_norm
from pyframe.nn import functional as _F
from pyframe.tensor import Tensor

__all__ = [
    "sum", "prod", "cumsum", "cumprod", "amax", "amin", "argmax", "argmin", "mean", "median", "logsumexp",
    "logaddexp", "norm", "var", "std", "softmax", "log_softmax", "softmin", "normalize",
]  # fmt: skip

_SMALL_INTS = (_dtype.bool_, _dtype.int32)  # summed and multiplied in int64, as torch


def _identity(op: str, input: Tensor, ord=2.0):
    """The value that leaves ``op``'s result unchanged (torch.masked._reduction_identity), or None."""
    dt = input.dtype
    if op in ("sum", "cumsum"):
        return 0
    if op in ("prod", "cumprod"):
        return 1
    if op in ("amax", "argmax", "logaddexp", "logsumexp"):
        return -math.inf if dt.is_floating_point else _dtype.iinfo(dt).min
    if op in ("amin", "argmin"):
        return math.inf if dt.is_floating_point else _dtype.iinfo(dt).max
    if op == "norm":
        return math.inf if ord == -math.inf else 0
    if op == "median":
        return math.nan
    return None


def _input_mask(input: Tensor, mask) -> Tensor:
    """``mask`` broadcast to ``input``'s shape as bool (torch.masked._input_mask)."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask must be a Tensor, got {type(mask).__name__}")
    if mask.ndim > input.ndim:
        raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of the input)")
    if tuple(mask.shape) != tuple(input.shape):
        mask = ops.broadcast_to(mask, input.shape)
    return mask if mask.dtype is _dtype.bool_ else mask.to(_dtype.bool_)


def _masked(op: str, input: Tensor, mask, ord=2.0) -> Tensor:
    """``input`` with its masked-out elements replaced by ``op``'s identity."""
    if not isinstance(input, Tensor):
        raise TypeError(f"masked {op}: input must be a Tensor, got {type(input).__name__}")
    if mask is None:
        return input
    fill = ops.full((), _identity(op, input, ord), dtype=input.dtype)
    return ops.where(_input_mask(input, mask), input, fill)


def _dims(dim, ndim: int) -> tuple[int, ...]:
    """``dim`` as a sorted tuple of non-negative dims; None and () are every dim (torch.masked._canonical_dim)."""
    if dim is None or dim == ():
        return tuple(range(ndim))
    n = max(ndim, 1)
    out: list[int] = []
    for d in (dim,) if isinstance(dim, int) else dim:
        if d >= n or d < -n:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
        if d % n in out:
            raise RuntimeError(f"dim={d} appears multiple times in the list of dims")
        out.append(d % n)
    return tuple(sorted(out))


def _int64_if_small(input: Tensor, dtype):
    return dtype if dtype is not None else (_dtype.int64 if input.dtype in _SMALL_INTS else input.dtype)


def sum(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:  # noqa: A001
    """Same as torch.masked.sum: the sum of the masked-in elements over ``dim`` (all dims when None)."""
    dtype = _int64_if_small(input, dtype)
    x = _masked("sum", input, mask)
    return ops.sum(x, _dims(dim, x.ndim), bool(keepdim), dtype=dtype)


def prod(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.prod: the product of the masked-in elements over ``dim`` (all dims when None)."""
    dtype = _int64_if_small(input, dtype)
    x = _masked("prod", input, mask).to(dtype)
    for d in reversed(_dims(dim, x.ndim)):
        x = ops.prod(x, d, keepdim=bool(keepdim))
    return x


def cumsum(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.cumsum: the running sum along ``dim``, masked-out elements counting as 0."""
    dtype = input.dtype if dtype is None else dtype
    return ops.cumsum(_masked("sum", input, mask), _dims(dim, input.ndim)[0], dtype=dtype).to(dtype)


def cumprod(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.cumprod: the running product along ``dim``, masked-out elements counting as 1."""
    dtype = input.dtype if dtype is None else dtype
    return ops.cumprod(_masked("prod", input, mask), _dims(dim, input.ndim)[0], dtype=dtype).to(dtype)


def amax(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.amax: the largest masked-in element over ``dim`` (-inf where all are masked out)."""
    x = _masked("amax", input, mask)
    return ops.amax(x, _dims(dim, x.ndim), bool(keepdim)).to(input.dtype if dtype is None else dtype)


def amin(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.amin: the smallest masked-in element over ``dim`` (inf where all are masked out)."""
    x = _masked("amin", input, mask)
    return ops.amin(x, _dims(dim, x.ndim), bool(keepdim)).to(input.dtype if dtype is None else dtype)


def argmax(input: Tensor, dim: int | None = None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """Same as torch.masked.argmax: the index of the largest masked-in element along ``dim``, in ``dtype``
    (the input's by default, as torch's)."""
    x = _masked("argmax", input, mask)
    return ops.argmax(x, dim, bool(keepdim)).to(input.dtype if dtype is None else dtype)


def argmin(input: Tensor, dim: int | None = None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """Same as torch.masked.argmin: the index of the smallest masked-in element along ``dim``, in ``dtype``
    (the input's by default, as torch's)."""
    x = _masked("argmin", input, mask)
    return ops.argmin(x, dim, bool(keepdim)).to(input.dtype if dtype is None else dtype)


def _float_dtype(input: Tensor, dtype, fn: str):
    source = "Optional" if dtype is not None else "Input"
    dtype = input.dtype if dtype is None else dtype
    if not dtype.is_floating_point:
        raise ValueError(
            f"{fn}(): Could not infer output dtype. {source} dtype must be either a floating point or complex dtype. "
            f"Got: {dtype}"
        )
    return dtype


def _count(input: Tensor, mask, dim, keepdim: bool):
    """How many elements each slice keeps, and the canonical mask (None: every element)."""
    if mask is None:
        return sum(ops.ones(input.shape, dtype=_dtype.int64), dim, keepdim=keepdim), None
    inmask = _input_mask(input, mask)
    return ops.sum(inmask, _dims(dim, input.ndim), keepdim), inmask


def mean(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.mean: the mean of the masked-in elements over ``dim`` (NaN where all are masked
    out); floating dtypes only."""
    dtype = _float_dtype(input, dtype, "mean")
    count, inmask = _count(input, mask, dim, bool(keepdim))
    return ops.div(sum(input, dim, keepdim=keepdim, dtype=dtype, mask=inmask), count)


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.median: the median of the masked-in elements along ``dim`` (NaN where all are
    masked out; an integer input with such a slice raises)."""
    dtype = input.dtype if dtype is None else dtype
    d = _dims(dim, input.ndim)[0]
    is_float = input.dtype.is_floating_point
    x = input if is_float else input.to(_dtype.float32)
    out = ops.nanmedian(_masked("median", x, mask), d, keepdim).values
    if is_float:
        return out
    if bool(ops.any(ops.isnan(out))):
        raise ValueError("masked median expects no fully masked out rows if dtype is not floating point")
    return out.to(dtype)


def logsumexp(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.logsumexp: ``log(sum(exp(x)))`` of the masked-in elements over ``dim``."""
    x = _masked("logsumexp", input, mask)
    return ops.logsumexp(x, _dims(dim, input.ndim), keepdim=keepdim).to(input.dtype if dtype is None else dtype)


def logaddexp(input: Tensor, other: Tensor, *, dtype=None, input_mask=None, other_mask=None) -> Tensor:
    """Same as torch.masked.logaddexp: ``logaddexp`` of ``input`` and ``other`` with their masked-out elements
    taken as -inf."""
    x, y = _masked("logaddexp", input, input_mask), _masked("logaddexp", other, other_mask)
    return ops.logaddexp(x, y).to(input.dtype if dtype is None else dtype)


def norm(input: Tensor, ord=2.0, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.norm: the vector ``ord``-norm of the masked-in elements over ``dim``."""
    x = _masked("norm", input, mask, ord)
    return vector_norm(x, ord, _dims(dim, input.ndim), bool(keepdim), dtype=input.dtype if dtype is None else dtype)


def _std_var(input: Tensor, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt: bool) -> Tensor:
    if unbiased is not None and correction is not None:
        raise ValueError("Only one of unbiased and correction may be given")
    corr = 1.0 if unbiased is None else (1.0 if unbiased else 0.0)
    if correction is not None:
        corr = float(correction)
    if dtype is None:
        dtype = input.dtype if input.dtype.is_floating_point else _dtype.float32
    compute = dtype if dtype.is_floating_point else _dtype.float32
    count, inmask = _count(input, mask, dim, True)
    sample_mean = ops.div(sum(input, dim, keepdim=True, dtype=dtype, mask=inmask), count)
    x = ops.sub(input, sample_mean)
    total = sum(ops.mul(x, x), dim, keepdim=keepdim, dtype=compute, mask=inmask)
    if not keepdim:
        count = count.reshape(total.shape)
    if corr != 0:
        count = ops.clamp(ops.sub(count.to(compute), corr), min=0)
    out = ops.div(total, count).to(dtype)
    return ops.sqrt(out) if take_sqrt else out


def var(input: Tensor, dim=None, unbiased: bool | None = None, *, correction=None, keepdim: bool = False,
        dtype=None, mask: Tensor | None = None) -> Tensor:  # fmt: skip
    """Same as torch.masked.var: the variance of the masked-in elements over ``dim`` with ``correction``
    (Bessel's, 1, by default; NaN where too few are kept)."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=False)


def std(input: Tensor, dim=None, unbiased: bool | None = None, *, correction=None, keepdim: bool = False,
        dtype=None, mask: Tensor | None = None) -> Tensor:  # fmt: skip
    """Same as torch.masked.std: the standard deviation of the masked-in elements over ``dim``."""
    return _std_var(input, dim, unbiased, correction, keepdim, dtype, mask, take_sqrt=True)


def softmax(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.softmax: softmax along ``dim`` over the masked-in elements (0 at the others; NaN
    where a slice is all masked out)."""
    x = _masked("amax", input, mask)
    return _F.softmax(x, _dims(dim, input.ndim)[0], dtype=input.dtype if dtype is None else dtype)


def log_softmax(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.log_softmax: log_softmax along ``dim`` over the masked-in elements."""
    x = _masked("amax", input, mask)
    return _F.log_softmax(x, _dims(dim, input.ndim)[0], dtype=input.dtype if dtype is None else dtype)


def softmin(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """Same as torch.masked.softmin: softmin along ``dim`` over the masked-in elements."""
    x = _masked("amin", input, mask)
    return _F.softmin(x, _dims(dim, input.ndim)[0], dtype=input.dtype if dtype is None else dtype)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype=None, mask=None) -> Tensor:
    """Same as torch.masked.normalize: the masked-in elements divided by their ``ord``-norm along ``dim``
    (at least ``eps``); masked-out elements are 0."""
    x = _masked("sum", input, mask)
    nrm = norm(input, ord, dim, keepdim=True, dtype=input.dtype if dtype is None else dtype, mask=mask)
    return ops.div(x, ops.maximum(nrm, ops.full((), eps, dtype=nrm.dtype)))
