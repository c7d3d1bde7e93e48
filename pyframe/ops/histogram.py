"""Counting into bins: ``bincount``, ``histc``, ``histogram``, ``histogramdd``, each one C call
(core_c/src/histogram.c). None is differentiable, as in torch."""

from __future__ import annotations

import math
from collections import namedtuple

from pyframe import _dtype
from pyframe._backend import check, ffi, lib
from pyframe._dtype import float64, int64
from pyframe.ops import elementwise as ew
from pyframe.ops._common import _tensor_arg, zeros_of
from pyframe.ops.creation import linspace
from pyframe.ops.join import cat
from pyframe.tensor import Tensor

__all__ = [
    "bincount", "histc", "histogram", "histogramdd",
]  # fmt: skip

HistogramResult = namedtuple("histogram", ["hist", "bin_edges"])
HistogramddResult = namedtuple("histogramdd", ["hist", "bin_edges"])


def _weights(op: str, weight, x: Tensor, n: int):
    if weight is None:
        return None
    if not isinstance(weight, Tensor) or weight._numel != n:
        got = list(weight._shape) if isinstance(weight, Tensor) else type(weight).__name__
        raise RuntimeError(f"{op}(): weight must be a tensor with one value per input element ({n}), got {got}")
    return weight.detach().contiguous()


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:  # noqa: A002
    """Same as torch.bincount: how often each value of a 1-d non-negative integer tensor occurs (or the sum of
    its ``weights``), over at least ``minlength`` bins. Counts are int64; weights give their floating dtype
    (float64 for integer weights)."""
    x = _tensor_arg(input, "bincount")
    if x.ndim != 1 or x.dtype.is_floating_point or x.dtype is _dtype.bool_:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, got a {x.ndim}-d "
                           f"{x.dtype.name} tensor")  # fmt: skip
    if minlength < 0:
        raise RuntimeError(f"bincount(): minlength should be >= 0, got {minlength}")
    if weights is not None and (not isinstance(weights, Tensor) or weights._shape != x._shape):
        raise RuntimeError("bincount(): weights should be 1-d and have the same length as input")
    if x._numel and int(x.min()) < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs")
    bins = max(int(x.max()) + 1 if x._numel else 0, minlength)
    dt = int64 if weights is None else weights.dtype if weights.dtype.is_floating_point else float64
    out = zeros_of((bins,), dt)
    w = None if weights is None else weights.detach().contiguous()
    check(lib.pf_bincount(x.contiguous()._d(), ffi.NULL if w is None else w._d(), out._d()))
    return out


def _range_of(x: Tensor, lo, hi, pad: float):
    """The data's range where none is given; an empty one widened by ``pad`` each side (torch's)."""
    if lo == hi:
        if x._numel:
            lo, hi = float(x.min()), float(x.max())
        else:
            lo, hi = 0.0, 0.0
        if lo == hi:
            lo, hi = lo - pad, hi + pad
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"range of [{lo}, {hi}] is not finite")
    if lo > hi:
        raise RuntimeError(f"max must be larger than min, got min {lo} and max {hi}")
    return float(lo), float(hi)


def histc(input: Tensor, bins: int = 100, min=0, max=0) -> Tensor:  # noqa: A002
    """Same as torch.histc: counts in ``bins`` equal-width bins over [min, max] (the data's range when both are
    0), elements outside left out; torch's bin rule ``int((x - min) * bins / (max - min))``."""
    x = _tensor_arg(input, "histc")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"torch.histc: input tensor must be floating point, got {x.dtype.name}")
    if not isinstance(bins, int) or bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = _range_of(x, min, max, 1.0)
    out = zeros_of((bins,), x.dtype)
    check(lib.pf_histc(x.detach().contiguous()._d(), ffi.NULL, lo, hi, out._d()))
    return out


def histogramdd(input: Tensor, bins=10, *, range=None, weight: Tensor | None = None, density: bool = False):  # noqa: A002
    """Same as torch.histogramdd: the counts of the points of ``input`` (its last dim holds a point's D
    coordinates) in a D-dimensional grid of bins; ``bins`` an int, D ints or D tensors of edges; returns
    ``(hist, bin_edges)``. A value on a bin's left edge belongs to it, the last edge to the last bin. Edges
    should increase; as torch, that is not checked."""
    x = _tensor_arg(input, "histogramdd")
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"torch.histogramdd: input tensor must be floating point, got {x.dtype.name}")
    if x.ndim < 1:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 1 dimension")
    D = x._shape[-1]
    points = x.detach().reshape(-1, D).contiguous()
    if isinstance(bins, Tensor) or (isinstance(bins, (list, tuple)) and bins and isinstance(bins[0], Tensor)):
        edges = [bins] if isinstance(bins, Tensor) else list(bins)
        if len(edges) != D:
            raise RuntimeError(f"torch.histogramdd: expected {D} sequences of bin edges, got {len(edges)}")
        for e in edges:
            if e.ndim != 1 or e._numel < 1 or e.dtype is not x.dtype:
                raise RuntimeError("torch.histogramdd: bin edges must be 1-d tensors of the input's dtype with at "
                                   "least one element")  # fmt: skip
        edges = [e.detach().contiguous() for e in edges]
    else:
        counts = [bins] * D if isinstance(bins, int) else list(bins)
        if len(counts) != D or any(not isinstance(c, int) or c <= 0 for c in counts):
            raise RuntimeError(f"torch.histogramdd(): bins must be {D} positive ints, got {bins!r}")
        if range is not None and len(range) != 2 * D:
            raise RuntimeError(f"torch.histogramdd: range should have {2 * D} elements, got {len(range)}")
        edges = []
        for k, c in enumerate(counts):
            col = points[:, k]
            lo, hi = (float(range[2 * k]), float(range[2 * k + 1])) if range is not None else (0.0, 0.0)
            lo, hi = _range_of(col, lo, hi, 0.5)
            edges.append(linspace(lo, hi, c + 1, dtype=x.dtype))
    nedges = [e._numel for e in edges]
    if any(n < 2 for n in nedges):  # one edge: no bin at all
        hist = zeros_of(tuple(max(n - 1, 0) for n in nedges), x.dtype)
        return HistogramddResult(hist, edges)
    w = _weights("histogramdd", weight, x, points._shape[0])
    hist = zeros_of(tuple(n - 1 for n in nedges), x.dtype)
    sizes = ffi.new("int64_t[]", nedges)
    check(lib.pf_histogramdd(points._d(), ffi.NULL if w is None else w._d(), cat(edges)._d(), sizes, hist._d()))
    if density:
        total = hist.sum()
        for k, e in enumerate(edges):
            shape = [1] * D
            shape[k] = nedges[k] - 1
            hist = ew.div(hist, ew.sub(e[1:], e[:-1]).reshape(shape))
        hist = ew.div(hist, total)
    return HistogramddResult(hist, edges)


def histogram(input: Tensor, bins=100, *, range=None, weight: Tensor | None = None, density: bool = False):  # noqa: A002
    """Same as torch.histogram: ``(hist, bin_edges)`` of a tensor's values, ``bins`` equal-width bins over
    ``range`` (the data's by default) or the given edges."""
    x = _tensor_arg(input, "histogram")
    if isinstance(bins, Tensor) and bins.ndim != 1:
        raise RuntimeError(f"torch.histogram(): bins tensor should have one dimension, but got {bins.ndim}")
    hist, edges = histogramdd(x.reshape(-1, 1), bins if isinstance(bins, (int, Tensor)) else bins, range=range,
                              weight=None if weight is None else weight.reshape(-1), density=density)  # fmt: skip
    return HistogramResult(hist, edges[0])
