"""Scans: ``cumsum``, ``cumprod``, ``logcumsumexp`` (``pf_scan``) and ``cummax``/``cummin`` with their indices
(``pf_scan_extreme``) along a dim, one C call each way."""

from __future__ import annotations

from collections import namedtuple

from pyframe import _dtype, _grad_mode
from pyframe._backend import check, lib
from pyframe._dtype import as_dtype, int64
from pyframe.autograd.graph import SavedOutput, record
from pyframe.ops import elementwise as ew
from pyframe.ops._common import _tensor_arg, zeros_of
from pyframe.ops.creation import ones
from pyframe.ops.index import scatter_add_
from pyframe.ops.join import cat, stack
from pyframe.tensor import Tensor, empty_tensor, normalize_dim

__all__ = [
    "cumsum", "cumprod", "logcumsumexp", "cummax", "cummin",
]  # fmt: skip

CummaxResult = namedtuple("cummax", ["values", "indices"])
CumminResult = namedtuple("cummin", ["values", "indices"])


def _scan(op: int, x: Tensor, dim: int, dtype, name: str) -> Tensor:
    x = _tensor_arg(x, name)
    if dim is None:
        raise TypeError(f"{name}(): missing required argument 'dim'")
    d = normalize_dim(dim, x.ndim)
    if dtype is not None:
        out_dt = as_dtype(dtype)
    elif x.dtype.is_floating_point:
        out_dt = x.dtype
    else:  # torch: integer and bool scans accumulate and return int64
        out_dt = int64
    src = x if x._contig else x.contiguous()
    out = empty_tensor(x._shape, out_dt)
    check(lib.pf_scan(op, src._d(), d, out._d()))
    return out


def _flip1(g: Tensor, d: int) -> Tensor:
    return g.flip((d,))  # the method: rearrange (flip's module) builds on scan


def _reverse_cumsum(g: Tensor, d: int) -> Tensor:
    return _flip1(cumsum(_flip1(g, d), d), d)


def _scanned(op: int, name: str, input: Tensor, dim: int, dtype, grad, saved: bool = False) -> Tensor:
    """The scan, and its node when floating-point ``input`` needs a gradient: ``grad(g, x, out, d)`` (``out``
    None unless ``saved``: the derivative reads the result)."""
    out = _scan(op, input, dim, dtype, name)
    x = input
    if x.requires_grad and _grad_mode.enabled and out.dtype.is_floating_point:
        d = normalize_dim(dim, x.ndim)
        ys = SavedOutput(out) if saved else None  # the output itself would be a cycle through its node
        dt = out.dtype

        def backward(g):
            return ((g if not x._shape else grad(g, x.to(dt), None if ys is None else ys(), d)).to(x.dtype),)

        record(f"{name.capitalize()}Backward0", backward, (x,), out, (ys,) if saved else ())
    return out


def _cumsum_grad(g: Tensor, x: Tensor, out: Tensor, d: int) -> Tensor:
    return _reverse_cumsum(g, d)


def _cumprod_grad(g: Tensor, x: Tensor, out: Tensor, d: int) -> Tensor:
    if x._shape[d] == 1:  # torch's: a single element's gradient is g (not g x / x, NaN at inf)
        return g
    if not ew.eq(x, 0.0).any().item():  # no zeros: d out_i / d x_j = out_i / x_j
        return ew.div(_reverse_cumsum(ew.mul(g, out), d), x)
    if _grad_mode.enabled:  # create_graph: the exact recurrence, whose own derivative is cumprod's second
        return _cumprod_grad_with_zeros(g, x, d)
    return _cumprod_grad_zeros_as_torch(g, x, out, d)


def _cumprod_grad_zeros_as_torch(g: Tensor, x: Tensor, out: Tensor, d: int) -> Tensor:
    """torch's O(n) form with zeros (so infinities and NaN combine as in torch): before a row's first zero
    z1, the reversed cumsum of g * out divided by x; at z1, the products x[z1+1..k] (up to the second zero)
    times g_k, summed, times the product before z1; after z1, 0."""
    zeros_before = cumsum(ew.eq(x, 0.0), d)  # int64: how many zeros up to here
    before = ew.eq(zeros_before, 0)
    grad = ew.where(before, ew.div(_reverse_cumsum(ew.where(before, ew.mul(g, out), 0.0), d), x), 0.0)
    segment = ew.eq(zeros_before, 1)
    first = ew.logical_and(segment, ew.eq(x, 0.0))
    inner = ew.logical_and(segment, ew.logical_not(first))
    n = x._shape[d]
    one = ones(*x._shape[:d], 1, *x._shape[d + 1 :], dtype=x.dtype)
    left = cat([one, out.narrow(d, 0, n - 1)], d) if n > 1 else one
    term = ew.mul(cumprod(ew.where(inner, x, 1.0), d), ew.where(segment, g, 0.0)).sum(d, keepdim=True)
    return ew.where(first, ew.mul(term, left), grad)


def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:  # noqa: A002
    """Same as torch.cumsum (integer and bool inputs give int64)."""
    return _scanned(lib.PF_SCAN_SUM, "cumsum", input, dim, dtype, _cumsum_grad)


def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:  # noqa: A002
    """Same as torch.cumprod; the gradient is exact also where the input has zeros."""
    return _scanned(lib.PF_SCAN_PROD, "cumprod", input, dim, dtype, _cumprod_grad, saved=True)


def _cumprod_grad_with_zeros(g: Tensor, x: Tensor, d: int) -> Tensor:
    """grad_j = L_j * R_j with L_j = prod_{k<j} x_k (exclusive cumprod) and the backward recurrence
    R_j = g_j + x_{j+1} R_{j+1}: no division, so zeros are exact. One step per element along d."""
    n = x._shape[d]
    one = ones(*x._shape[:d], 1, *x._shape[d + 1 :], dtype=x.dtype)
    left = cat([one, cumprod(x.narrow(d, 0, n - 1), d)], d) if n > 1 else one
    r = [None] * n
    r[n - 1] = g.select(d, n - 1)
    for j in range(n - 2, -1, -1):
        r[j] = ew.add(g.select(d, j), ew.mul(x.select(d, j + 1), r[j + 1]))
    return ew.mul(left, stack(r, d))


def logcumsumexp(input: Tensor, dim: int) -> Tensor:  # noqa: A002
    """Same as torch.logcumsumexp: ``log(cumsum(exp(input)))`` without overflow (floating inputs only)."""
    x = _tensor_arg(input, "logcumsumexp")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"logcumsumexp(): expected a floating point tensor, got {x.dtype.name}")
    return _scanned(lib.PF_SCAN_LOGSUMEXP, "logcumsumexp", x, dim, None, _logcumsumexp_grad, saved=True)


def _logcumsumexp_grad(g: Tensor, x: Tensor, out: Tensor, d: int) -> Tensor:
    """torch's: sum_{i >= j} g_i exp(x_j - out_i), with positive and negative g summed apart in log space."""
    lowest = -_dtype.finfo(g.dtype).max
    log_abs = ew.log(ew.abs(g))

    def reverse(t):
        return _flip1(logcumsumexp(_flip1(t, d), d), d)

    pos = ew.exp(ew.add(reverse(ew.sub(ew.where(ew.gt(g, 0.0), log_abs, lowest), out)), x))
    neg = ew.exp(ew.add(reverse(ew.sub(ew.where(ew.lt(g, 0.0), log_abs, lowest), out)), x))
    return ew.sub(pos, neg)


def _cum_extreme(input: Tensor, dim: int, largest: bool, name: str):
    x = _tensor_arg(input, name)
    d = normalize_dim(dim, x.ndim)
    src = x if x._contig else x.contiguous()
    values, indices = empty_tensor(x._shape, x.dtype), empty_tensor(x._shape, int64)
    check(lib.pf_scan_extreme(src._d(), d, int(largest), values._d(), indices._d()))
    if x.requires_grad and _grad_mode.enabled:  # each output's gradient goes to the element it copied
        record(f"{name.capitalize()}Backward0", lambda g: (scatter_add_(zeros_of(x._shape, g.dtype), d, indices, g),),
               (x,), values)  # fmt: skip
    return (CummaxResult if largest else CumminResult)(values, indices)


def cummax(input: Tensor, dim: int):  # noqa: A002
    """Same as torch.cummax: the running maximum along ``dim`` and the index where it was found (the latest of
    equal values; a NaN takes over and stays)."""
    return _cum_extreme(input, dim, True, "cummax")


def cummin(input: Tensor, dim: int):  # noqa: A002
    """Same as torch.cummin: the running minimum along ``dim`` and its index (as ``cummax``)."""
    return _cum_extreme(input, dim, False, "cummin")
