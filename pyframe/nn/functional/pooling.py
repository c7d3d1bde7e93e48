"""Pooling: max, average, power-average, adaptive average, adaptive max and fractional max pools in 1-3
spatial dims, and max_unpool. Every pool is one C kernel over [N, C, D, H, W] (1-d and 2-d inputs are
viewed with size-1 dims) with its backward beside it."""

from __future__ import annotations

import numbers

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError, check, ffi, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import _tensor_arg, in_float32
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.ops._common import zeros_of
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
    "adaptive_max_pool2d", "adaptive_max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d", "lp_pool1d",
    "lp_pool2d", "lp_pool3d", "max_pool1d", "max_pool2d", "max_pool3d", "max_unpool1d", "max_unpool2d",
    "max_unpool3d", "fractional_max_pool2d", "fractional_max_pool3d", "max_pool1d_with_indices",
    "max_pool2d_with_indices", "max_pool3d_with_indices", "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices", "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d_with_indices",
]  # fmt: skip

_INT32_MAX = 2**31 - 1
_LAYOUT = {1: "(C, L) or (N, C, L)", 2: "(C, H, W) or (N, C, H, W)", 3: "(C, D, H, W) or (N, C, D, H, W)"}


def _as_5d(fn: str, input, dims: int, name: str = "input") -> tuple[Tensor, bool]:
    """A [N, C, D, H, W] view of a pool's input with ``dims`` spatial dims (batched or not), and whether it
    was batched. As torch, only the batch dim may be empty."""
    _tensor_arg(input, fn, name)
    if input.ndim not in (dims + 1, dims + 2):
        raise ShapeError(f"{fn}(): expected a {dims + 1}-d or {dims + 2}-d {name} {_LAYOUT[dims]}, got shape "
                         f"{list(input._shape)}")  # fmt: skip
    batched = input.ndim == dims + 2
    x = input if batched else input.unsqueeze(0)
    if 0 in x._shape[1:]:
        raise ValueError(f"{fn}(): expected {name} to have non-zero size for non-batch dimensions, got shape "
                         f"{list(input._shape)}")  # fmt: skip
    for _ in range(3 - dims):
        x = x.unsqueeze(2)
    if x.dtype is not _dtype.float32 and x.dtype is not _dtype.float64:
        raise TypeError(
            f"{fn}(): expected floating operands of one dtype (float16, bfloat16, float32 or float64), "
            f"got {x.dtype.name}"
        )
    return x, batched


def _back(out: Tensor, dims: int, batched: bool) -> Tensor:
    """The 5-d result of a pool in the input's own layout."""
    shape = out._shape[:2] + out._shape[5 - dims :]
    out = out.view(shape) if out._contig else out.reshape(shape)
    return out if batched else out.squeeze(0)


def _ints(v, dims: int, fn: str, name: str, minimum: int) -> tuple:
    """An int or a sequence of ``dims`` ints (a 1-sequence is repeated), each at least ``minimum``."""
    if isinstance(v, (tuple, list)) and len(v) == 1:
        v = v[0]
    if isinstance(v, numbers.Integral) and not isinstance(v, bool):
        v = (int(v),) * dims
    if not (isinstance(v, (tuple, list)) and len(v) == dims and
            all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in v)):  # fmt: skip
        raise TypeError(f"{fn}(): {name} must be an int or a tuple of {dims} ints, got {v!r}")
    if any(n < minimum for n in v):
        raise ValueError(f"{fn}(): {name} must be >= {minimum}, got {tuple(v)}")
    if any(n > _INT32_MAX for n in v):
        raise ValueError(f"{fn}(): {name} must be at most {_INT32_MAX}, got {tuple(v)}")
    return tuple(int(n) for n in v)


def _window_args(fn: str, dims: int, kernel_size, stride, padding, dilation) -> tuple:
    """kernel, stride (default: the kernel), padding and dilation, checked as torch (padding at most half
    the dilated kernel)."""
    k = _ints(kernel_size, dims, fn, "kernel_size", 1)
    empty = stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0)
    s = k if empty else _ints(stride, dims, fn, "stride", 1)
    p, d = _ints(padding, dims, fn, "padding", 0), _ints(dilation, dims, fn, "dilation", 1)
    for i in range(dims):
        if p[i] * 2 > d[i] * (k[i] - 1) + 1:
            raise ValueError(f"{fn}(): pad should be at most half of effective kernel size, but got pad={p[i]}, "
                             f"kernel_size={k[i]} and dilation={d[i]}")  # fmt: skip
    return k, s, p, d


def _out_size(fn: str, size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling_output_shape: floor (or ceil) of the windows that fit; with ceil_mode a last window
    must start inside the input or its left padding."""
    span = size + 2 * p - d * (k - 1) - 1
    o = (span + (s - 1 if ceil_mode else 0)) // s + 1 if span >= 0 else 0
    if ceil_mode and o > 0 and (o - 1) * s >= size + p:
        o -= 1
    if o < 1:
        raise ShapeError(f"{fn}(): input size {size} with padding {p} is too small for kernel size {k} with "
                         f"dilation {d}: the output size would be {o}")  # fmt: skip
    return o


def _geometry(fn: str, x: Tensor, dims: int, k, s, p, d, ceil_mode) -> tuple[list, tuple]:
    """The C kernels' 13 geometry values (size-1 leading dims padded in) and the 5-d output shape."""
    pad = 3 - dims
    k, s, p, d = (1,) * pad + k, (1,) * pad + s, (0,) * pad + p, (1,) * pad + d
    out = tuple(_out_size(fn, x._shape[2 + i], k[i], s[i], p[i], d[i], bool(ceil_mode)) for i in range(3))
    return [*k, *s, *p, *d, int(bool(ceil_mode))], x._shape[:2] + out


def _max_pool(fn: str, dims: int, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, batched = _as_5d(fn, input, dims)
    k, s, p, d = _window_args(fn, dims, kernel_size, stride, padding, dilation)
    geom, shape = _geometry(fn, x, dims, k, s, p, d, ceil_mode)
    out, indices = empty_tensor(shape, x.dtype), empty_tensor(shape, _dtype.int64)
    check(lib.pf_max_pool(x._d(), out._d(), indices._d(), geom))
    if needs_grad(x):
        record(f"MaxPool{max(dims, 2)}DWithIndicesBackward0", _scatter_backward(x._shape, indices), (x,), out)
    out = _back(out, dims, batched)
    return (out, _back(indices, dims, batched)) if return_indices else out


def _scatter_backward(shape: tuple, indices: Tensor):
    """The backward of the max pools: each output's gradient added at its input index."""

    def backward(gy):
        n, c = shape[:2]
        if _grad_mode.enabled:  # create_graph: a differentiable scatter of gy to the indices
            flat = zeros_of((n, c, shape[2] * shape[3] * shape[4]), gy.dtype)
            flat = ix.scatter_add(flat, 2, indices.reshape(n, c, -1), gy.reshape(n, c, -1))
            return (flat.view(shape),)
        gx = empty_tensor(shape, gy.dtype)
        check(lib.pf_max_pool_backward(gy._d(), indices._d(), gx._d()))
        return (gx,)

    return backward


def _avg_pool(fn: str, dims: int, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override) -> Tensor:  # fmt: skip
    x, batched = _as_5d(fn, input, dims)
    k, s, p, d = _window_args(fn, dims, kernel_size, stride, padding, 1)
    if divisor_override is not None and (
        not isinstance(divisor_override, numbers.Integral) or isinstance(divisor_override, bool)
        or divisor_override == 0
    ):  # fmt: skip
        raise ValueError(f"{fn}(): divisor_override must be a non-zero int, got {divisor_override!r}")
    geom, shape = _geometry(fn, x, dims, k, s, p, d, ceil_mode)
    args = (geom, int(bool(count_include_pad)), int(divisor_override or 0))
    if args[2] < 0:  # the C kernel takes a positive divisor; a negative one flips the sign after it
        out = ew.neg(_avg_pool_op(x, shape, (geom, args[1], -args[2]), dims))
    else:
        out = _avg_pool_op(x, shape, args, dims)
    return _back(out, dims, batched)


def _avg_pool_op(x: Tensor, shape: tuple, args: tuple, dims: int) -> Tensor:
    """The average pool of the 5-d x into ``shape``; backward is its transpose (itself differentiable)."""
    out = empty_tensor(shape, x.dtype)
    check(lib.pf_avg_pool(x._d(), out._d(), *args))
    if needs_grad(x):
        record(f"AvgPool{max(dims, 2)}DBackward0", lambda g: (_avg_pool_back(g, x._shape, args, dims),), (x,), out)
    return out


def _avg_pool_back(gy: Tensor, shape: tuple, args: tuple, dims: int) -> Tensor:
    gx = empty_tensor(shape, gy.dtype)
    check(lib.pf_avg_pool_backward(gy._d(), gx._d(), *args))
    if needs_grad(gy):  # linear in gy: its own backward is the forward pool
        record(f"AvgPool{max(dims, 2)}DBackwardBackward0", lambda g: (_avg_pool_op(g, gy._shape, args, dims),),
               (gy,), gx)  # fmt: skip
    return gx


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):  # fmt: skip
    """Same as torch.nn.functional.max_pool1d: each window's maximum (NaN wins, ties keep the first, as
    torch), with ``return_indices`` its flat position in the input."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):  # fmt: skip
    """Same as torch.nn.functional.max_pool2d: one C pass finds each window's maximum and its flat index in
    the input plane (NaN wins, ties keep the first, as torch); backward adds the gradient at those indices."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):  # fmt: skip
    """Same as torch.nn.functional.max_pool3d (indices flat over depth, height and width)."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.avg_pool1d."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.avg_pool2d: each window's sum over torch's divisor (the window within
    the padded input, or within the input when ``count_include_pad=False``, or ``divisor_override``)."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)  # fmt: skip


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.avg_pool3d."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)  # fmt: skip


def _lp_pool(fn: str, dims: int, input, norm_type, kernel_size, stride, ceil_mode) -> Tensor:
    """torch's lp_pool: ``(sign(a) * relu(|a|) * prod(k)) ** (1/p)`` of the average ``a`` of ``x ** p``."""
    k = _ints(kernel_size, dims, fn, "kernel_size", 1)
    _tensor_arg(input, fn)
    out = _avg_pool(fn, dims, ew.pow(input, norm_type), k, stride, 0, ceil_mode, True, None)
    size = 1
    for n in k:
        size *= n
    return ew.pow(ew.mul(ew.mul(ew.sign(out), ew.relu(ew.abs(out))), size), 1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """Same as torch.nn.functional.lp_pool1d: the p-norm of each window, from avg_pool1d as torch computes it."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """Same as torch.nn.functional.lp_pool2d: the p-norm of each window, from avg_pool2d as torch computes it."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """Same as torch.nn.functional.lp_pool3d: the p-norm of each window, from avg_pool3d as torch computes it."""
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


def _adaptive_shape(fn: str, x: Tensor, dims: int, output_size) -> tuple:
    """The 5-d output shape: an int for every dim, or a sequence where None keeps the input's size."""
    if isinstance(output_size, numbers.Integral) and not isinstance(output_size, bool):
        output_size = (output_size,) * dims
    sizes = list(output_size) if isinstance(output_size, (tuple, list)) else None
    if sizes is not None and len(sizes) == 1 and dims > 1:
        sizes = sizes * dims
    if sizes is None or len(sizes) != dims:
        raise ValueError(f"{fn}(): output_size must be an int or a sequence of {dims} ints, got {output_size!r}")
    spatial = x._shape[5 - dims :]
    sizes = [spatial[i] if v is None else v for i, v in enumerate(sizes)]
    if any(not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 0 for v in sizes):
        raise ValueError(f"{fn}(): output_size must be non-negative ints, got {tuple(output_size)}")
    return x._shape[:2] + (1,) * (3 - dims) + tuple(int(v) for v in sizes)


def _adaptive(fn: str, dims: int, input, output_size, return_indices: bool | None):
    """return_indices None: the average pool; True/False: the max pool."""
    x, batched = _as_5d(fn, input, dims)
    shape = _adaptive_shape(fn, x, dims, output_size)
    if 0 in shape[2:]:  # torch gives an empty result
        out = zeros_of(shape, x.dtype)
        idx = zeros_of(shape, _dtype.int64)
    elif return_indices is None:
        out, idx = _adaptive_avg_op(x, shape, dims), None
    else:
        out, idx = empty_tensor(shape, x.dtype), empty_tensor(shape, _dtype.int64)
        check(lib.pf_adaptive_pool(x._d(), out._d(), idx._d()))
        if needs_grad(x):
            record(f"AdaptiveMaxPool{max(dims, 2)}DBackward0", _scatter_backward(x._shape, idx), (x,), out)
    out = _back(out, dims, batched)
    return (out, _back(idx, dims, batched)) if return_indices else out


def _adaptive_avg_op(x: Tensor, shape: tuple, dims: int) -> Tensor:
    out = empty_tensor(shape, x.dtype)
    check(lib.pf_adaptive_pool(x._d(), out._d(), ffi.NULL))
    if needs_grad(x):
        record(f"AdaptiveAvgPool{max(dims, 2)}DBackward0", lambda g: (_adaptive_avg_back(g, x._shape, dims),), (x,),
               out)  # fmt: skip
    return out


def _adaptive_avg_back(gy: Tensor, shape: tuple, dims: int) -> Tensor:
    gx = empty_tensor(shape, gy.dtype)
    check(lib.pf_adaptive_avg_pool_backward(gy._d(), gx._d()))
    if needs_grad(gy):  # linear in gy: its own backward is the forward pool
        record(f"AdaptiveAvgPool{max(dims, 2)}DBackwardBackward0", lambda g: (_adaptive_avg_op(g, gy._shape, dims),),
               (gy,), gx)  # fmt: skip
    return gx


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """Same as torch.nn.functional.adaptive_avg_pool1d: output ``o`` averages inputs
    ``floor(o*L/out)`` to ``ceil((o+1)*L/out)``."""
    return _adaptive("adaptive_avg_pool1d", 1, input, output_size, None)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """Same as torch.nn.functional.adaptive_avg_pool2d (None in ``output_size`` keeps that dim)."""
    return _adaptive("adaptive_avg_pool2d", 2, input, output_size, None)


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """Same as torch.nn.functional.adaptive_avg_pool3d (None in ``output_size`` keeps that dim)."""
    return _adaptive("adaptive_avg_pool3d", 3, input, output_size, None)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """Same as torch.nn.functional.adaptive_max_pool1d: the first of equal maxima, the last NaN of a window
    holding NaN, and the gradient to that one element."""
    return _adaptive("adaptive_max_pool1d", 1, input, output_size, bool(return_indices))


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """Same as torch.nn.functional.adaptive_max_pool2d (see adaptive_max_pool1d)."""
    return _adaptive("adaptive_max_pool2d", 2, input, output_size, bool(return_indices))


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """Same as torch.nn.functional.adaptive_max_pool3d (see adaptive_max_pool1d)."""
    return _adaptive("adaptive_max_pool3d", 3, input, output_size, bool(return_indices))


def _max_unpool(fn: str, dims: int, input, indices, kernel_size, stride, padding, output_size) -> Tensor:
    """torch's max_unpool: zeros of the output size with input[i] written at indices[i] of its plane."""
    x, batched = _as_5d(fn, input, dims)
    _tensor_arg(indices, fn, "indices")
    if indices._shape != input._shape:
        raise ShapeError(f"{fn}(): indices {list(indices._shape)} must have the input's shape "
                         f"{list(input._shape)}")  # fmt: skip
    if indices.dtype is not _dtype.int64:
        raise TypeError(f"{fn}(): indices must be int64, got {indices.dtype.name}")
    k = _ints(kernel_size, dims, fn, "kernel_size", 1)
    empty = stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0)
    s = k if empty else _ints(stride, dims, fn, "stride", 1)
    p = _ints(padding, dims, fn, "padding", 0)
    spatial = input._shape[-dims:]
    default = [(spatial[i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(dims)]
    if output_size is None:
        size = default
    else:
        size = list(output_size)
        if len(size) == dims + 2:
            size = size[2:]
        elif len(size) == dims + 1 and not batched:
            size = size[1:]
        if len(size) != dims:
            raise ValueError(f"{fn}(): output_size should be a sequence of {dims} or {dims + 2} ints, got "
                             f"{output_size!r}")  # fmt: skip
        for i in range(dims):
            if not default[i] - s[i] < size[i] < default[i] + s[i]:
                raise ValueError(f"{fn}(): invalid output_size {tuple(output_size)} (dim {i} must be between "
                                 f"{default[i] - s[i]} and {default[i] + s[i]}, exclusive)")  # fmt: skip
    if any(v < 1 for v in size):
        raise ValueError(f"{fn}(): the output size {tuple(size)} must be positive")
    n, c = x._shape[:2]
    plane = 1
    for v in size:
        plane *= v
    idx = (indices if batched else indices.unsqueeze(0)).reshape(n, c, -1)
    with _grad_mode.no_grad():
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= plane):
            bad = int(idx.min()) if int(idx.min()) < 0 else int(idx.max())
            raise IndexError(f"{fn}(): found an invalid max index {bad} (the output plane has {plane} elements, "
                             f"output_size {tuple(size)})")  # fmt: skip
    out = ix.scatter(zeros_of((n, c, plane), x.dtype), 2, idx, x.reshape(n, c, -1))
    out = out.view((n, c) + tuple(size))
    return out if batched else out.squeeze(0)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """Same as torch.nn.functional.max_unpool1d: the partial inverse of max_pool1d."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """Same as torch.nn.functional.max_unpool2d: the partial inverse of max_pool2d (zeros elsewhere)."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """Same as torch.nn.functional.max_unpool3d: the partial inverse of max_pool3d."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


def _fractional(fn: str, dims: int, input, kernel_size, output_size, output_ratio, return_indices, samples):
    """torch's fractional max pooling: windows of ``kernel_size`` at pseudo-random steps fixed by ``samples``
    (N, C, dims) in [0, 1) (drawn from pyframe's generator when None)."""
    x, batched = _as_5d(fn, input, dims)
    k = _ints(kernel_size, dims, fn, "kernel_size", 1)
    spatial = x._shape[5 - dims :]
    if output_size is None and output_ratio is None:
        raise ValueError(f"{fn}() requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = (output_ratio,) * dims if isinstance(output_ratio, numbers.Real) else tuple(output_ratio)
        if len(ratio) == 1:
            ratio = ratio * dims
        if len(ratio) != dims or not all(0 < r < 1 for r in ratio):
            raise ValueError(f"{fn}(): output_ratio must be a number or {dims} numbers between 0 and 1, got "
                             f"{output_ratio!r}")  # fmt: skip
        size = tuple(int(spatial[i] * ratio[i]) for i in range(dims))
    else:
        size = _ints(output_size, dims, fn, "output_size", 1)
    for i in range(dims):
        if size[i] + k[i] - 1 > spatial[i]:
            raise ValueError(f"{fn}(): pool size {k[i]} too large relative to input size {spatial[i]} and output "
                             f"size {size[i]} (dim {i})")  # fmt: skip
    n, c = x._shape[:2]
    if samples is None:
        from pyframe.ops.random import rand

        samples = rand(n, c, dims, dtype=x.dtype)
    else:
        _tensor_arg(samples, fn, "_random_samples")
        if samples._shape != (n, c, dims):
            raise ShapeError(f"{fn}(): _random_samples must have shape {[n, c, dims]}, got {list(samples._shape)}")
        samples = samples.detach().to(x.dtype)
    if dims == 2:  # torch's samples run (width, height); the kernel takes them in (height, width) order
        samples = samples.flip(-1)
    shape = x._shape[:2] + (1,) * (3 - dims) + size
    out, indices = empty_tensor(shape, x.dtype), empty_tensor(shape, _dtype.int64)
    check(lib.pf_fractional_max_pool(x._d(), samples._d(), out._d(), indices._d(), [1] * (3 - dims) + list(k)))
    if needs_grad(x):
        record(f"FractionalMaxPool{dims}DBackward0", _scatter_backward(x._shape, indices), (x,), out)
    out = _back(out, dims, batched)
    return (out, _back(indices, dims, batched)) if return_indices else out


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):  # fmt: skip
    """Same as torch.nn.functional.fractional_max_pool2d: max pooling at pseudo-random steps (Graham's
    fractional max pooling); ``_random_samples`` (N, C, 2) in [0, 1) fix the steps (drawn when None)."""
    return _fractional("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)  # fmt: skip


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):  # fmt: skip
    """Same as torch.nn.functional.fractional_max_pool3d (``_random_samples`` (N, C, 3))."""
    return _fractional("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, return_indices,
                       _random_samples)  # fmt: skip


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices: bool = True):  # fmt: skip
    """Same as torch.nn.functional.max_pool1d_with_indices: max_pool1d's values and indices."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices: bool = True):  # fmt: skip
    """Same as torch.nn.functional.max_pool2d_with_indices: max_pool2d's values and indices."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices: bool = True):  # fmt: skip
    """Same as torch.nn.functional.max_pool3d_with_indices: max_pool3d's values and indices."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """Same as torch.nn.functional.adaptive_max_pool1d_with_indices: (values, indices)."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """Same as torch.nn.functional.adaptive_max_pool2d_with_indices: (values, indices)."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """Same as torch.nn.functional.adaptive_max_pool3d_with_indices: (values, indices)."""
    return adaptive_max_pool3d(input, output_size, True)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = True, _random_samples: Tensor | None = None):  # fmt: skip
    """Same as torch.nn.functional.fractional_max_pool2d_with_indices: (values, indices)."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = True, _random_samples: Tensor | None = None):  # fmt: skip
    """Same as torch.nn.functional.fractional_max_pool3d_with_indices: (values, indices)."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)


# float16 and bfloat16 computed in float32 and rounded back, as torch's CPU kernels (the C kernels take float32/64)
for _name in __all__:
    globals()[_name] = in_float32(globals()[_name])
