"""Norms: vector_norm, matrix_norm and norm, composed of differentiable pyframe ops (and svdvals for the
spectral and nuclear norms), so they carry no derivative code of their own."""

from __future__ import annotations

import math

from pyframe import _dtype
from pyframe._backend import ShapeError
from pyframe.linalg.decomp import svdvals
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.tensor import Tensor, normalize_dim

__all__ = ["vector_norm", "matrix_norm", "norm"]


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Same as torch.linalg.vector_norm: ``ord`` any real number, inf or -inf, over ``dim`` (all dims by
    default, the tensor read as one flat vector); ``dtype`` casts first. The gradient at the zero vector
    is 0 for ord=2, as torch's."""
    fn = "linalg.vector_norm"
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}: x must be a Tensor, got {type(x).__name__}")
    if dtype is not None:
        x = x.to(dtype)
    if not x.dtype.is_floating_point:
        raise TypeError(f"{fn}: expected a floating point input, got {x.dtype.name}")
    if isinstance(ord, bool) or not isinstance(ord, (int, float)):
        raise TypeError(f"{fn}: ord must be a number, got {ord!r}")
    if isinstance(dim, int):
        dim = (dim,)
    if x.numel() == 0 and ord < 0 or (x.numel() == 0 and math.isinf(ord)):
        raise ShapeError(
            f"{fn}: cannot compute the {ord} norm of an empty tensor because the operation has no identity"
        )
    if ord < 0 and not math.isinf(ord):
        # (sum |x|^ord)^(1/ord): 0 when any element is 0, as torch
        return ew.pow(rd.sum(ew.pow(ew.abs(x), float(ord)), dim, keepdim), 1.0 / ord)
    return rd.norm(x, float(ord) if ord not in (1, 2, 0) else ord, dim, keepdim)


def matrix_norm(A: Tensor, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None) -> Tensor:
    """Same as torch.linalg.matrix_norm: ``ord`` "fro", "nuc", inf, -inf, 1, -1, 2 or -2 over the two
    dims ``dim``; 2, -2 and "nuc" use the singular values."""
    fn = "linalg.matrix_norm"
    if not isinstance(A, Tensor):
        raise TypeError(f"{fn}: A must be a Tensor, got {type(A).__name__}")
    if dtype is not None:
        A = A.to(dtype)
    if A.dtype not in (_dtype.float32, _dtype.float64):
        raise TypeError(f"{fn}: A must be float32 or float64, got {A.dtype.name}")
    if A.ndim < 2:
        raise ShapeError(f"{fn}: A must have at least 2 dimensions, got shape {list(A.shape)}")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise ShapeError(f"{fn}: dim must be a 2-tuple, got {dim!r}")
    d0, d1 = (normalize_dim(d, A.ndim) for d in dim)
    if d0 == d1:
        raise ShapeError(f"{fn}: dims must be different, got ({dim[0]}, {dim[1]})")
    if ord == "fro":
        return rd.norm(A, 2, [d0, d1], keepdim)
    if ord not in ("nuc", 2, -2, 1, -1, math.inf, -math.inf):
        raise ValueError(f"{fn}: order {ord!r} not supported; use 'fro', 'nuc', inf, -inf, 1, -1, 2 or -2")
    if ord in ("nuc", 2, -2):
        # move the two dims last, as svdvals wants
        rest = [d for d in range(A.ndim) if d not in (d0, d1)]
        S = svdvals(A.permute(*rest, d0, d1))
        out = rd.sum(S, -1) if ord == "nuc" else (rd.amax(S, -1) if ord == 2 else rd.amin(S, -1))
        if keepdim:
            for d in sorted((d0, d1)):
                out = out.unsqueeze(d)
        return out
    # 1 / -1: max / min absolute column sum; inf / -inf: over rows
    inner, outer = (d0, d1) if ord in (1, -1) else (d1, d0)
    sums = rd.sum(ew.abs(A), inner, True)
    pick = rd.amax if ord > 0 else rd.amin
    out = pick(sums, outer, True)
    return out if keepdim else out.squeeze(max(d0, d1)).squeeze(min(d0, d1))


def norm(A: Tensor, ord=None, dim=None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """Same as torch.linalg.norm: a vector norm when ``dim`` is an int or ``ord`` is None with ``dim``
    None (the flattened tensor's 2-norm), a matrix norm when ``dim`` is a 2-tuple or the input is 2-d."""
    if isinstance(dim, int) or (dim is not None and len(dim) == 1):
        return vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if dim is None:
        if not isinstance(A, Tensor) or A.ndim not in (1, 2):
            raise ShapeError("linalg.norm: with ord given and dim None, the input must be 1-D or 2-D")
        if A.ndim == 1:
            return vector_norm(A, ord, None, keepdim, dtype=dtype)
        dim = (-2, -1)
    return matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
