"""Scans: ``cumsum`` and ``cumprod`` along a dim, one C call each way (``pf_scan``)."""

from __future__ import annotations

from pyframe import _grad_mode
from pyframe._backend import check, lib
from pyframe._dtype import as_dtype, int64
from pyframe.autograd.graph import record
from pyframe.ops import elementwise as ew
from pyframe.ops._common import _tensor_arg
from pyframe.ops.creation import ones
from pyframe.ops.join import cat, stack
from pyframe.tensor import Tensor, empty_tensor, normalize_dim

__all__ = [
    "cumsum", "cumprod",
]  # fmt: skip


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


def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:  # noqa: A002
    """Same as torch.cumsum (integer and bool inputs give int64)."""
    out = _scan(lib.PF_SCAN_SUM, input, dim, dtype, "cumsum")
    x = input
    if x.requires_grad and _grad_mode.enabled and out.dtype.is_floating_point:
        d = normalize_dim(dim, x.ndim)

        def backward(g):
            if not x._shape:
                return (g.to(x.dtype),)
            return (_reverse_cumsum(g, d).to(x.dtype),)

        record("CumsumBackward0", backward, (x,), out)
    return out


def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:  # noqa: A002
    """Same as torch.cumprod; the gradient is exact also where the input has zeros."""
    out = _scan(lib.PF_SCAN_PROD, input, dim, dtype, "cumprod")
    x = input
    if x.requires_grad and _grad_mode.enabled and out.dtype.is_floating_point:
        d = normalize_dim(dim, x.ndim)

        def backward(g):
            if not x._shape:
                return (g.to(x.dtype),)
            xv = x.to(out.dtype)
            if not ew.eq(xv, 0.0).any().item():  # no zeros: d out_i / d x_j = out_i / x_j
                return (ew.div(_reverse_cumsum(ew.mul(g, out), d), xv).to(x.dtype),)
            return (_cumprod_grad_with_zeros(g, xv, d).to(x.dtype),)

        record("CumprodBackward0", backward, (x,), out, (out,))
    return out


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
