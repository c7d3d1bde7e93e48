"""Resampling: interpolate (nearest, nearest-exact, linear/bilinear/trilinear, bicubic, area, and the
antialiased bilinear and bicubic), upsample_nearest / upsample_bilinear, pixel_shuffle / pixel_unshuffle.

Interpolation is separable: each spatial dim is resampled in turn by index_select (a C
gather whose backward is a C index_add) and, for the linear and cubic modes, one weighted sum of
the neighbours. Source coordinates follow torch's formulas in the input's precision
(float32 for float32 inputs), so indices and weights match torch's. Antialiasing (a filter as wide as
the downscale) multiplies by each dim's weight matrix; "area" is the adaptive average pool."""

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
    "interpolate", "pixel_shuffle", "pixel_unshuffle", "upsample", "upsample_bilinear", "upsample_nearest",
    "channel_shuffle", "native_channel_shuffle",
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


def _cubic_weights(t: Tensor, a: float) -> list:
    """torch's cubic convolution coefficients of the 4 neighbours at fraction t (a = -0.75, as torch)."""
    x1, x2 = ew.add(t, 1.0), ew.sub(1.0, t)
    x3 = ew.add(x2, 1.0)

    def near(x):  # ((a + 2) x - (a + 3)) x^2 + 1, for |x| <= 1
        return ew.add(ew.mul(ew.mul(ew.sub(ew.mul(x, a + 2), a + 3), x), x), 1.0)

    def far(x):  # ((a x - 5a) x + 8a) x - 4a, for 1 < |x| < 2
        return ew.sub(ew.mul(ew.add(ew.mul(ew.sub(ew.mul(x, a), 5 * a), x), 8 * a), x), 4 * a)

    return [far(x1), near(t), near(x2), far(x3)]


def _cubic(x: Tensor, dim: int, out_size: int, scale: float, align_corners: bool) -> Tensor:
    n_in = x._shape[dim]
    src = _coords(out_size, x.dtype)
    src = ew.mul(src, scale) if align_corners else ew.sub(ew.mul(ew.add(src, 0.5), scale), 0.5)
    i0f = ew.floor(src)
    t = ew.sub(src, i0f)
    i0 = i0f.to(_dtype.int64)
    shape = [1] * x.ndim
    shape[dim] = out_size
    out = None
    for k, w in enumerate(_cubic_weights(t, -0.75)):
        idx = ew.clamp(ew.add(i0, k - 1), 0, n_in - 1)
        term = ew.mul(ix.index_select(x, dim, idx), w.reshape(shape))
        out = term if out is None else ew.add(out, term)
    return out


def _aa_matrix(n_in: int, n_out: int, scale: float, cubic: bool, dt) -> Tensor:
    """torch's antialiased weights [n_out, n_in] (PIL's: a filter stretched by the downscale, normalized)."""
    from pyframe.ops.creation import tensor

    support = (2.0 if cubic else 1.0) * (scale if scale >= 1.0 else 1.0)
    inv = 1.0 / scale if scale >= 1.0 else 1.0

    def filt(x):
        x = abs(x)
        if not cubic:
            return 1.0 - x if x < 1.0 else 0.0
        a = -0.5  # torch's antialiased bicubic uses PIL's a
        if x < 1.0:
            return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        return (((x - 5.0) * x + 8.0) * x - 4.0) * a if x < 2.0 else 0.0

    rows = []
    for i in range(n_out):
        center = scale * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), n_in)
        w = [filt((j - center + 0.5) * inv) for j in range(lo, hi)]
        total = sum(w)
        row = [0.0] * n_in
        for j, v in zip(range(lo, hi), w, strict=True):
            row[j] = v / total if total != 0.0 else 0.0
        rows.append(row)
    return tensor(rows, dtype=dt)


def _antialiased(x: Tensor, dim: int, out_size: int, scale: float, cubic: bool) -> Tensor:
    from pyframe.ops.products import matmul

    weights = _aa_matrix(x._shape[dim], out_size, scale, cubic, x.dtype)
    moved = x.transpose(dim, -1)
    return matmul(moved, weights.mT).transpose(dim, -1)


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
    dims = input.ndim - 2
    if dims not in (1, 2, 3):
        raise ShapeError(f"{fn}(): expected a 3-d, 4-d or 5-d input (N, C, *spatial), got shape "
                         f"{list(input._shape)}")  # fmt: skip
    if antialias and (mode not in ("bilinear", "bicubic") or dims != 2):
        raise NotImplementedError(f"{fn}(): anti-alias option is restricted to bilinear and bicubic modes and 4-D "
                                  f"input, got mode {mode!r} and a {input.ndim}-d input")  # fmt: skip
    if mode == "bicubic":
        if dims != 2:
            raise NotImplementedError(f"{fn}(): got {input.ndim}D input, but bicubic mode needs 4D input")
        _float_arg(input, fn)
        align = bool(align_corners)
    elif mode in _LINEAR:
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
        from pyframe.nn.functional.pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d

        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[dims - 1]
        return pool(input, sizes[0] if dims == 1 else sizes)
    x = input
    for i in range(dims):
        dim, n_in, n_out = 2 + i, input._shape[2 + i], sizes[i]
        use_factor = scales is not None and not recompute_scale_factor
        if (mode in _LINEAR or mode == "bicubic") and align:
            scale = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            scale = 1.0 / scales[i] if use_factor else n_in / n_out
        if antialias:
            x = _antialiased(x, dim, n_out, scale, mode == "bicubic")
        elif mode == "bicubic":
            x = _cubic(x, dim, n_out, scale, align)
        elif mode in _LINEAR:
            x = _linear(x, dim, n_out, scale, align)
        else:
            x = _nearest(x, dim, n_out, scale, mode == "nearest-exact")
    return x


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    """Same as torch.nn.functional.upsample (deprecated there): interpolate."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Same as torch.nn.functional.upsample_nearest (deprecated there): interpolate with mode "nearest"."""
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Same as torch.nn.functional.upsample_bilinear (deprecated there): interpolate with mode "bilinear"
    and ``align_corners=True``."""
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


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


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Same as torch.nn.functional.channel_shuffle (and torch.channel_shuffle): channels regrouped as
    (groups, C / groups), transposed."""
    b, c = input.shape[0], input.shape[1]
    if groups <= 0 or c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape(b, groups, c // groups, *rest).transpose(1, 2).reshape(b, c, *rest)


native_channel_shuffle = channel_shuffle
