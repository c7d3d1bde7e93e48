"""Pooling: max, average, adaptive average and adaptive max pools, 1-d and 2-d."""

from __future__ import annotations

from pyframe import _dtype, _grad_mode
from pyframe._backend import check, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import _as_2d, _back, _pair, _single
from pyframe.nn.functional.conv import _batched, _check_im2col_dtype, _im2col, _out_size, fold
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.ops import reduce as rd
from pyframe.ops._common import zeros_of
from pyframe.ops.join import stack
from pyframe.ops.rearrange import flip
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d", "avg_pool1d",
    "avg_pool2d", "max_pool1d", "max_pool2d", "lp_pool1d", "lp_pool2d",
]  # fmt: skip


def _pool_input(fn: str, input) -> tuple:
    """The pools' input as (N, C, H, W) and whether it was batched; as torch, only the batch dim may be empty
    (the empty-input rule: refused here in the pool's name, not by the kernel or a reshape)."""
    x, batched = _batched(fn, input)
    if 0 in x._shape[1:]:
        raise ValueError(f"{fn}(): expected input to have non-zero size for non-batch dimensions, got shape "
                         f"{list(input._shape)}")  # fmt: skip
    return x, batched


def _pool_args(fn: str, kernel_size, stride, padding, dilation, ceil_mode) -> tuple:
    if ceil_mode:
        raise NotImplementedError(f"{fn}(): ceil_mode=True is not supported; pad the input instead")
    k = _pair(kernel_size, fn, "kernel_size", 1)
    s = (
        k
        if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0)
        else _pair(stride, fn, "stride", 1)
    )
    p, d = _pair(padding, fn, "padding", 0), _pair(dilation, fn, "dilation", 1)
    for i in (0, 1):
        if p[i] * 2 > d[i] * (k[i] - 1) + 1:
            raise ValueError(
                f"{fn}(): pad should be at most half of effective kernel size, but got pad={p[i]}, "
                f"kernel_size={k[i]} and dilation={d[i]}"
            )
    return k, s, p, d


def max_pool2d(
    input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False
):  # fmt: skip
    """Same as torch.nn.functional.max_pool2d: one C pass finds each window's maximum and its
    flat index in the input plane (NaN wins, ties keep the first, as torch); backward adds the
    gradient at those indices. ``ceil_mode=True`` is not supported (NotImplementedError)."""
    x, batched = _pool_input("max_pool2d", input)
    _check_im2col_dtype("max_pool2d", x)
    k, s, p, d = _pool_args("max_pool2d", kernel_size, stride, padding, dilation, ceil_mode)
    n, c, h, w = x._shape
    oh, ow = _out_size("max_pool2d", x._shape, k, s, p, d)
    geometry = (k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1])
    out = empty_tensor((n, c, oh, ow), x.dtype)
    indices = empty_tensor((n, c, oh, ow), _dtype.int64)
    check(lib.pf_max_pool2d(x._d(), out._d(), indices._d(), *geometry))
    if needs_grad(x):

        def backward(gy):
            if _grad_mode.enabled:  # create_graph: a differentiable scatter of gy to the indices
                flat = zeros_of((n, c, h * w), gy.dtype)
                flat = ix.scatter_add(flat, 2, indices.view(n, c, oh * ow), gy.reshape(n, c, oh * ow))
                return (flat.view(n, c, h, w),)
            gx = empty_tensor((n, c, h, w), gy.dtype)
            check(lib.pf_max_pool2d_backward(gy._d(), indices._d(), gx._d(), *geometry))
            return (gx,)

        record("MaxPool2DWithIndicesBackward0", backward, (x,), out)
    if not batched:
        return (out.squeeze(0), indices.squeeze(0)) if return_indices else out.squeeze(0)
    return (out, indices) if return_indices else out


def avg_pool2d(
    input: Tensor, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None
):  # fmt: skip
    """Same as torch.nn.functional.avg_pool2d: im2col, a sum over the kernel positions and one
    division; backward spreads the gradient back with col2im. ``ceil_mode=True`` is not
    supported (NotImplementedError)."""
    x, batched = _pool_input("avg_pool2d", input)
    _check_im2col_dtype("avg_pool2d", x)
    k, s, p, d = _pool_args("avg_pool2d", kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and (not isinstance(divisor_override, int) or divisor_override <= 0):
        raise ValueError(f"avg_pool2d(): divisor_override must be a positive int, got {divisor_override!r}")
    n, c, h, w = x._shape
    oh, ow = _out_size("avg_pool2d", x._shape, k, s, p, d)
    kk, length = k[0] * k[1], oh * ow
    with _grad_mode.no_grad():
        if divisor_override is not None:
            div = float(divisor_override)
        elif count_include_pad or p == (0, 0):
            div = float(kk)
        else:  # the number of real (unpadded) pixels under each window
            ones = ew.fill_(empty_tensor((1, 1, h, w), x.dtype), 1.0)
            div = rd.sum(_im2col(ones, k, s, p, d, oh, ow), 1).view(length)
        col = _im2col(x, k, s, p, d, oh, ow)
        out = ew.div(rd.sum(col.view(n, c, kk, length), 2), div).view(n, c, oh, ow)
    if needs_grad(x):

        def backward(gy):
            g = ew.div(gy.reshape(n, c, 1, length), div)
            return (fold(g.expand(n, c, kk, length).contiguous().view(n, c * kk, length), (h, w), k, d, p, s),)

        record("AvgPool2DBackward0", backward, (x,), out)
    return out if batched else out.squeeze(0)


def _adaptive_size(fn: str, x: Tensor, output_size) -> tuple[int, int]:
    """(oh, ow) of an adaptive pool: an int for both, or a pair where None keeps the input's size."""
    h, w = x._shape[2:]
    if isinstance(output_size, int):
        output_size = (output_size, output_size)
    oh, ow = (h if output_size[0] is None else output_size[0]), (w if output_size[1] is None else output_size[1])
    if oh < 1 or ow < 1:
        raise ValueError(f"{fn}(): output_size must be positive, got {tuple(output_size)}")
    return oh, ow


def _adaptive_windows(x: Tensor, oh: int, ow: int, reduce) -> Tensor:
    """``reduce`` (mean or amax over dims 2 and 3) of each of torch's adaptive windows, for sizes
    that do not divide the input: window i spans floor(i * h / oh) to ceil((i + 1) * h / oh)."""
    h, w = x._shape[2:]
    rows = []
    for i in range(oh):
        h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        cells = [reduce(x[:, :, h0:h1, (j * w) // ow : -(-((j + 1) * w) // ow)], (2, 3)) for j in range(ow)]
        rows.append(stack(cells, -1))
    return stack(rows, -2)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Same as torch.nn.functional.adaptive_avg_pool2d. Sizes that divide the input evenly
    use avg_pool2d; others average each window separately (slower)."""
    x, batched = _pool_input("adaptive_avg_pool2d", input)
    oh, ow = _adaptive_size("adaptive_avg_pool2d", x, output_size)
    h, w = x._shape[2:]
    out = avg_pool2d(x, (h // oh, w // ow)) if h % oh == 0 and w % ow == 0 else _adaptive_windows(x, oh, ow, rd.mean)
    return out if batched else out.squeeze(0)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Same as torch.nn.functional.adaptive_max_pool2d. Sizes that divide the input evenly use
    max_pool2d; others take each window's maximum separately (slower), by torch's rule: the first
    of equal maxima, the last NaN of a window holding NaN, and the gradient to that one element."""
    x, batched = _pool_input("adaptive_max_pool2d", input)
    oh, ow = _adaptive_size("adaptive_max_pool2d", x, output_size)
    h, w = x._shape[2:]
    if h % oh == 0 and w % ow == 0:
        out = max_pool2d(x, (h // oh, w // ow), return_indices=return_indices)
    else:
        out = _adaptive_max_windows(x, oh, ow)
        out = out if return_indices else out[0]
    if return_indices:
        return (out[0], out[1]) if batched else (out[0].squeeze(0), out[1].squeeze(0))
    return out if batched else out.squeeze(0)


def _adaptive_max_windows(x: Tensor, oh: int, ow: int) -> tuple:
    """(values, flat indices into each input plane) of torch's adaptive windows (see _adaptive_windows)."""
    n, c, h, w = x._shape
    values, indices = [], []
    for i in range(oh):
        h0, h1 = (i * h) // oh, -(-((i + 1) * h) // oh)
        row_v, row_i = [], []
        for j in range(ow):
            w0, w1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            k, cw = (h1 - h0) * (w1 - w0), w1 - w0
            cell = x[:, :, h0:h1, w0:w1].reshape(n, c, k)  # explicit: n or c may be 0
            with _grad_mode.no_grad():
                nan = ew.isnan(cell)
                last_nan = ew.sub(k - 1, rd.argmax(flip(nan, [-1]).to(_dtype.int32), -1, keepdim=True))
                at = ew.where(rd.any(nan, -1, keepdim=True), last_nan, rd.argmax(cell, -1, keepdim=True))
                flat = ew.add(ew.mul(ew.add(ew.floor_divide(at, cw), h0), w), ew.add(ew.remainder(at, cw), w0))
            row_v.append(ix.gather(cell, -1, at).squeeze(-1))  # the gradient goes to that element alone
            row_i.append(flat.squeeze(-1))
        values.append(stack(row_v, -1))
        indices.append(stack(row_i, -1))
    return stack(values, -2), stack(indices, -2)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):  # fmt: skip
    """Same as torch.nn.functional.max_pool1d (``ceil_mode=True`` unsupported, as max_pool2d)."""
    x, batched = _as_2d("max_pool1d", input)
    k = _single(kernel_size, "max_pool1d", "kernel_size")
    s = k if stride is None or stride == () else _single(stride, "max_pool1d", "stride")
    p, d = _single(padding, "max_pool1d", "padding"), _single(dilation, "max_pool1d", "dilation")
    out = max_pool2d(x, (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    if return_indices:
        return _back(out[0], batched), _back(out[1], batched)
    return _back(out, batched)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Same as torch.nn.functional.avg_pool1d (``ceil_mode=True`` unsupported, as avg_pool2d)."""
    x, batched = _as_2d("avg_pool1d", input)
    k = _single(kernel_size, "avg_pool1d", "kernel_size")
    s = k if stride is None or stride == () else _single(stride, "avg_pool1d", "stride")
    p = _single(padding, "avg_pool1d", "padding")
    return _back(avg_pool2d(x, (1, k), (1, s), (0, p), ceil_mode, count_include_pad), batched)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Same as torch.nn.functional.adaptive_avg_pool1d."""
    x, batched = _as_2d("adaptive_avg_pool1d", input)
    return _back(adaptive_avg_pool2d(x, (1, _single(output_size, "adaptive_avg_pool1d", "output_size"))), batched)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Same as torch.nn.functional.adaptive_max_pool1d (see adaptive_max_pool2d)."""

    x, batched = _as_2d("adaptive_max_pool1d", input)
    size = (1, _single(output_size, "adaptive_max_pool1d", "output_size"))
    out = adaptive_max_pool2d(x, size, return_indices)
    if return_indices:
        return _back(out[0], batched), _back(out[1], batched)
    return _back(out, batched)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """Same as torch.nn.functional.lp_pool1d: the p-norm of each window, ``(sum x^p)^(1/p)``, from avg_pool1d
    as torch computes it."""
    k = _single(kernel_size, "lp_pool1d", "kernel_size")
    out = avg_pool1d(ew.pow(input, norm_type), k, stride, 0, ceil_mode)
    return ew.pow(ew.mul(ew.mul(ew.sign(out), ew.relu(ew.abs(out))), k), 1.0 / norm_type)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """Same as torch.nn.functional.lp_pool2d: the p-norm of each window, from avg_pool2d as torch computes it."""
    kw, kh = _pair(kernel_size, "lp_pool2d", "kernel_size", 1)
    out = avg_pool2d(ew.pow(input, norm_type), (kw, kh), stride, 0, ceil_mode)
    return ew.pow(ew.mul(ew.mul(ew.sign(out), ew.relu(ew.abs(out))), kw * kh), 1.0 / norm_type)
