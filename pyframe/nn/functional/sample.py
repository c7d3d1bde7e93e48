"""Sampling at points: grid_sample (bilinear, nearest, bicubic; zeros, border and reflection padding) computed
in the C core with its gradients to the input and the grid, and affine_grid, the sampling grid of an affine
transform (a batched matmul of the base grid, differentiable in theta)."""

from __future__ import annotations

from pyframe import _dtype
from pyframe._backend import ShapeError, check, ffi, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import _float_arg
from pyframe.ops import elementwise as ew
from pyframe.ops.creation import linspace, ones
from pyframe.ops.join import stack
from pyframe.ops.products import matmul
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "affine_grid", "grid_sample",
]  # fmt: skip

_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDING = {"zeros": 0, "border": 1, "reflection": 2}


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.grid_sample: ``input`` (N, C, H, W) sampled at ``grid`` (N, OH, OW, 2) of
    (x, y) points in [-1, 1], or (N, C, D, H, W) at (N, OD, OH, OW, 3); "bilinear" is trilinear on 5-d input
    and "bicubic" takes 4-d input only. Gradients flow to both input and grid (once: the gradient itself is
    not differentiable again)."""
    return _grid_sample("grid_sample", input, grid, mode, padding_mode, align_corners)


def _grid_sample(fn: str, input, grid, mode, padding_mode, align_corners) -> Tensor:
    _float_arg(input, fn)
    _float_arg(grid, fn, "grid")
    if mode not in _MODES:
        raise ValueError(f"{fn}(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDING:
        raise ValueError(f"{fn}(): expected padding_mode to be 'zeros', 'border', or 'reflection', but got: "
                         f"'{padding_mode}'")  # fmt: skip
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise ShapeError(f"{fn}(): expected 4-d or 5-d input and grid with the same number of dimensions, but got "
                         f"input with sizes {list(input._shape)} and grid with sizes {list(grid._shape)}")  # fmt: skip
    nd = input.ndim - 2
    if grid._shape[-1] != nd:
        raise ShapeError(f"{fn}(): expected grid to have size {nd} in last dimension, but got grid with sizes "
                         f"{list(grid._shape)}")  # fmt: skip
    if input._shape[0] != grid._shape[0]:
        raise ShapeError(f"{fn}(): expected grid and input to have same batch size, but got input with sizes "
                         f"{list(input._shape)} and grid with sizes {list(grid._shape)}")  # fmt: skip
    if 0 in input._shape[2:]:
        raise ValueError(f"{fn}(): expected input to have non-empty spatial dimensions, but input has sizes "
                         f"{list(input._shape)}")  # fmt: skip
    if mode == "bicubic" and nd != 2:
        raise ValueError(f"{fn}(): bicubic interpolation only supports 4D input")
    if input.dtype is not grid.dtype:
        raise TypeError(f"{fn}(): expected input and grid to have the same dtype, but input has "
                        f"{input.dtype.name} and grid has {grid.dtype.name}")  # fmt: skip
    if input.dtype is not _dtype.float32 and input.dtype is not _dtype.float64:
        raise TypeError(f"{fn}(): only float32 and float64 are supported, got {input.dtype.name}")
    args = (_MODES[mode], _PADDING[padding_mode], int(bool(align_corners)))
    out = empty_tensor(input._shape[:2] + grid._shape[1:-1], input.dtype)
    check(lib.pf_grid_sample(input._d(), grid._d(), out._d(), *args))
    if needs_grad(input, grid):
        x = input if input._contig else input.detach().contiguous()

        def backward(gy):
            gx = empty_tensor(x._shape, x.dtype) if input.requires_grad else None
            gg = empty_tensor(grid._shape, grid.dtype) if grid.requires_grad else None
            check(lib.pf_grid_sample_backward(gy._d(), x._d(), grid._d(), gx._d() if gx is not None else ffi.NULL,
                                              gg._d() if gg is not None else ffi.NULL, *args))  # fmt: skip
            return gx, gg

        record(f"GridSampler{nd}DBackward0", backward, (input, grid), out, (input, grid))
    return out


def _base(n: int, align_corners: bool, dtype) -> Tensor:
    """torch's _linspace_from_neg_one: n points over [-1, 1], pulled in to pixel centres unless align_corners."""
    if n <= 1:
        return linspace(0.0, 0.0, 1, dtype=dtype)
    points = linspace(-1.0, 1.0, n, dtype=dtype)
    return points if align_corners else ew.mul(points, (n - 1) / n)


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """Same as torch.nn.functional.affine_grid: the (N, H, W, 2) grid (or (N, D, H, W, 3) for a 5-d ``size``)
    of the points ``theta`` (N, 2, 3) (or (N, 3, 4)) maps the output's pixel centres to, for grid_sample."""
    fn = "affine_grid"
    _float_arg(theta, fn, "theta")
    size = [int(v) for v in size]
    if len(size) not in (4, 5):
        raise ValueError(f"{fn}(): only 4-d and 5-d sizes are supported (2-d and 3-d affine transforms), got size "
                         f"{size}")  # fmt: skip
    nd = len(size) - 2
    if theta.ndim != 3 or theta._shape[1:] != (nd, nd + 1):
        raise ValueError(f"{fn}(): expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size "
                         f"{size}, got {list(theta._shape)}")  # fmt: skip
    if theta._shape[0] != size[0]:
        raise ValueError(f"{fn}(): theta has {theta._shape[0]} matrices but size asks for a batch of {size[0]}")
    if min(size) <= 0:
        raise ValueError(f"{fn}(): expected non-zero, positive output size, got {size}")
    align = bool(align_corners)
    spatial = size[2:]  # (H, W) or (D, H, W); the grid's coordinates run x (W) first
    axes = [_base(v, align, theta.dtype) for v in spatial]
    shape = tuple(spatial)
    coords = []
    for i in reversed(range(nd)):  # x, y, (z): the axis of dim i broadcast over the others
        view = [1] * nd
        view[i] = spatial[i]
        coords.append(axes[i].reshape(view).expand(shape))
    coords.append(ones(shape, dtype=theta.dtype))
    base = stack(coords, -1).reshape(1, -1, nd + 1)  # [1, P, nd + 1]
    grid = matmul(base, theta.transpose(1, 2))  # [N, P, nd]
    return grid.reshape(size[0], *spatial, nd)
