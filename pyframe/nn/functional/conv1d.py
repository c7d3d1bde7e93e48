"""1-d convolution and pools: each is its 2-d counterpart on an (N, C, 1, L) view, so they
share the im2col/GEMM kernels and dedicated backwards."""

from __future__ import annotations

from pyframe._backend import ShapeError
from pyframe.nn.functional._utils import _tensor_arg
from pyframe.nn.functional.conv import conv2d
from pyframe.nn.functional.pooling import adaptive_avg_pool2d, avg_pool2d, max_pool2d
from pyframe.tensor import Tensor


def _single(v, fn: str, name: str) -> int:
    if isinstance(v, (tuple, list)) and len(v) == 1:
        v = v[0]
    if not isinstance(v, int) or isinstance(v, bool):
        raise TypeError(f"{fn}(): {name} must be an int or a 1-tuple of ints, got {v!r}")
    return v


def _as_2d(fn: str, x: Tensor, name: str = "input") -> tuple[Tensor, bool]:
    """(N, C, 1, L) view of an (N, C, L) or unbatched (C, L) input, and whether it was batched."""
    _tensor_arg(x, fn, name)
    if x.ndim == 3:
        return x.unsqueeze(2), True
    if x.ndim == 2:
        return x.unsqueeze(0).unsqueeze(2), False
    raise ShapeError(f"{fn}(): expected a 2-d (C, L) or 3-d (N, C, L) {name}, got shape {list(x._shape)}")


def _back(out: Tensor, batched: bool) -> Tensor:
    out = out.squeeze(2)
    return out if batched else out.squeeze(0)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1, groups=1):
    """Same as torch.nn.functional.conv1d (weight ``(out, in/groups, k)``), computed by conv2d."""
    x, batched = _as_2d("conv1d", input)
    _tensor_arg(weight, "conv1d", "weight")
    if weight.ndim != 3:
        raise ShapeError(f"conv1d(): weight must be 3-d [out_channels, in_channels/groups, k], got shape "
                         f"{list(weight._shape)}")  # fmt: skip
    s, d = _single(stride, "conv1d", "stride"), _single(dilation, "conv1d", "dilation")
    p = padding if isinstance(padding, str) else (0, _single(padding, "conv1d", "padding"))
    return _back(conv2d(x, weight.unsqueeze(2), bias, (1, s), p, (1, d), groups), batched)


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
    from pyframe.nn.functional.pooling import adaptive_max_pool2d

    x, batched = _as_2d("adaptive_max_pool1d", input)
    size = (1, _single(output_size, "adaptive_max_pool1d", "output_size"))
    out = adaptive_max_pool2d(x, size, return_indices)
    if return_indices:
        return _back(out[0], batched), _back(out[1], batched)
    return _back(out, batched)
