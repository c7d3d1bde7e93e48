"""Resampling: interpolate (nearest, nearest-exact, linear/bilinear/trilinear, area) and
pixel_shuffle / pixel_unshuffle.

Interpolation is separable: each spatial dim is resampled in turn by index_select (a C
gather whose backward is a C index_add) and, for the linear modes, one weighted sum of
the two neighbours. Source coordinates follow torch's formulas in the input's precision
(float32 for float32 inputs), so indices and weights match torch's."""

from __future__ import annotations

import math
import numbers

from pyframe import _dtype
from pyframe._backend import ShapeError
from pyframe.nn.functional._utils import _float_arg, _tensor_arg, nonempty_spatial
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.tensor import Tensor

__all__ = [
    "interpolate", "pixel_shuffle", "pixel_unshuffle", "upsample",
]  # fmt: skip

_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "trilinear", "area", "bicubic")
_LINEAR = {"linear": 1, "bilinear": 2, "trilinear": 3}


def _coords(out_size: int, dt) -> Tensor:
    from pyframe.ops.creation import arange

    return arange(out_size, dtype=dt)


def _nearest(x: Tensor, dim: int, out_size: int, scale: float, exact: bool) -> Tensor:
    n_in = x._shape[dim]
    if out_size == n_in:
        return x
    # torch: min(floor(dst * scale), in - 1) in float32; "exact": floor((dst + 0.5) * scale)
    src = _coords(out_size, _dtype.float32)
    if exact:
        src = ew.add(src, 0.5)
    idx = ew.clamp(ew.floor(ew.mul(src, scale)), max=n_in - 1).to(_dtype.int64)
    return ix.index_select(x, dim, idx)


def _linear(x: Tensor, dim: int, out_size: int, scale: float, align_corners: bool) -> Tensor:
    n_in = x._shape[dim]
    src = _coords(out_size, x.dtype)
    # torch's area_pixel_compute_source_index; half-pixel centres clamp at 0
    src = ew.mul(src, scale) if align_corners else ew.clamp(ew.sub(ew.mul(ew.add(src, 0.5), scale), 0.5), min=0.0)
    i0f = ew.floor(src)
    i0 = i0f.to(_dtype.int64)
    i1 = ew.clamp(ew.add(i0, 1), max=n_in - 1)
    lam = ew.clamp(ew.sub(src, i0f), 0.0, 1.0)
    shape = [1] * x.ndim
    shape[dim] = out_size
    lam = lam.reshape(shape)
    a, b = ix.index_select(x, dim, i0), ix.index_select(x, dim, i1)
    return ew.add(ew.mul(a, ew.sub(1.0, lam)), ew.mul(b, lam))


def _sizes(fn: str, x: Tensor, size, scale_factor, dims: int) -> tuple[list, list | None]:
    if size is not None and scale_factor is not None:
        raise ValueError(f"{fn}(): only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError(f"{fn}(): either size or scale_factor should be defined")
    spatial = x._shape[2:]
    if size is not None:
        sizes = list(size) if isinstance(size, (tuple, list)) else [size] * dims
        if len(sizes) != dims or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in sizes):
            raise ValueError(f"{fn}(): size must be an int or a sequence of {dims} ints for a {x.ndim}-d input, "
                             f"got {size!r}")  # fmt: skip
        if any(s <= 0 for s in sizes):
            raise ValueError(f"{fn}(): output sizes must be positive, got {tuple(sizes)}")
        return [int(s) for s in sizes], None
    scales = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * dims
    if len(scales) != dims or not all(isinstance(s, numbers.Real) and not isinstance(s, bool) for s in scales):
        raise ValueError(f"{fn}(): scale_factor must be a number or a sequence of {dims} numbers for a "
                         f"{x.ndim}-d input, got {scale_factor!r}")  # fmt: skip
    if any(not s > 0 or not math.isfinite(s) for s in scales):
        raise ValueError(f"{fn}(): scale_factor must be positive and finite, got {scale_factor!r}")
    sizes = [math.floor(float(n) * float(s)) for n, s in zip(spatial, scales, strict=True)]
    if any(s <= 0 for s in sizes):
        raise ValueError(f"{fn}(): scale_factor {scale_factor!r} gives an empty output for input shape "
                         f"{list(x._shape)}")  # fmt: skip
    return sizes, [float(s) for s in scales]


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                recompute_scale_factor=None, antialias: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.interpolate for inputs (N, C, *spatial) with 1-3 spatial
    dims and modes "nearest", "nearest-exact", "linear", "bilinear", "trilinear", "area".
    Differences: "bicubic" and ``antialias=True`` raise NotImplementedError."""
    fn = "interpolate"
    _tensor_arg(input, fn)
    if mode not in _MODES:
        raise ValueError(f"{fn}(): mode must be one of {_MODES}, got {mode!r}")
    if mode == "bicubic" or antialias:
        raise NotImplementedError(f"{fn}(): mode='bicubic' and antialias=True are not supported yet")
    dims = input.ndim - 2
    if dims not in (1, 2, 3):
        raise ShapeError(f"{fn}(): expected a 3-d, 4-d or 5-d input (N, C, *spatial), got shape "
                         f"{list(input._shape)}")  # fmt: skip
    if mode in _LINEAR:
        if _LINEAR[mode] != dims:
            raise NotImplementedError(f"{fn}(): got {input.ndim}D input, but {mode} mode needs "
                                      f"{_LINEAR[mode] + 2}D input")  # fmt: skip
        _float_arg(input, fn)
        align = bool(align_corners)
    elif align_corners is not None:
        raise ValueError(f"{fn}(): align_corners option can only be set with the interpolating modes: "
                         "linear | bilinear | bicubic | trilinear")  # fmt: skip
    sizes, scales = _sizes(fn, input, size, scale_factor, dims)
    nonempty_spatial(fn, input, tuple(sizes))
    if mode == "area":
        from pyframe.nn.functional.pooling import adaptive_avg_pool1d, adaptive_avg_pool2d

        if dims == 3:
            raise NotImplementedError(f"{fn}(): mode='area' on 5-d input is not supported yet")
        return (adaptive_avg_pool1d if dims == 1 else adaptive_avg_pool2d)(input, sizes[0] if dims == 1 else sizes)
    x = input
    for i in range(dims):
        dim, n_in, n_out = 2 + i, input._shape[2 + i], sizes[i]
        use_factor = scales is not None and not recompute_scale_factor
        if mode in _LINEAR and align:
            scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
            x = _linear(x, dim, n_out, scale, True)
            continue
        scale = 1.0 / scales[i] if use_factor else n_in / n_out
        if mode in _LINEAR:
            x = _linear(x, dim, n_out, scale, False)
        else:
            x = _nearest(x, dim, n_out, scale, mode == "nearest-exact")
    return x


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    """Same as torch.nn.functional.upsample (deprecated there): interpolate."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def _factor(v, fn: str, name: str) -> int:
    if not isinstance(v, numbers.Integral) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{fn}(): {name} must be a positive int, got {v!r}")
    return int(v)


def _pixel_args(fn: str, input: Tensor, factor, name: str, layout: str) -> tuple:
    """(lead dims, C, H, W, r) of a pixel (un)shuffle's input, checked."""
    _tensor_arg(input, fn)
    r = _factor(factor, fn, name)
    if input.ndim < 3:
        raise ShapeError(f"{fn}(): expected at least 3 dims {layout}, got shape {list(input._shape)}")
    *lead, c, h, w = input._shape
    return lead, c, h, w, r


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Same as torch.nn.functional.pixel_shuffle: (*, C*r*r, H, W) -> (*, C, H*r, W*r)."""
    lead, c, h, w, r = _pixel_args("pixel_shuffle", input, upscale_factor, "upscale_factor", "(*, C*r^2, H, W)")
    if c % (r * r):
        raise ShapeError(f"pixel_shuffle(): pixel_shuffle expects its input's 'channel' dimension to be "
                         f"divisible by the square of upscale_factor, but input.size(-3)={c} is not divisible by "
                         f"{r * r}")  # fmt: skip
    oc, k = c // (r * r), len(lead)
    x = input.reshape(*lead, oc, r, r, h, w)
    x = x.permute(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return x.reshape(*lead, oc, h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Same as torch.nn.functional.pixel_unshuffle: (*, C, H*r, W*r) -> (*, C*r*r, H, W)."""
    lead, c, h, w, r = _pixel_args("pixel_unshuffle", input, downscale_factor, "downscale_factor", "(*, C, H*r, W*r)")
    if h % r or w % r:
        raise ShapeError(f"pixel_unshuffle(): height {h} and width {w} must be divisible by downscale_factor {r}")
    k = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(k), k, k + 2, k + 4, k + 1, k + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)
