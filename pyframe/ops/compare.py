"""Whole-tensor comparisons and distances, composed from C-backed elementwise ops and reductions."""

from __future__ import annotations

from pyframe.ops import elementwise as ew
from pyframe.ops._common import broadcast_shapes, result_type
from pyframe.ops.reduce import norm
from pyframe.tensor import Tensor

__all__ = [
    "isclose", "allclose", "equal", "dist",
]  # fmt: skip


def _pair(input, other, op: str) -> tuple[Tensor, Tensor]:
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"{op}(): expected two Tensors, got {type(input).__name__} and {type(other).__name__}")
    dt = result_type(input, other)
    return input.detach().to(dt), other.detach().to(dt)


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:  # noqa: A002
    """Same as torch.isclose: ``|input - other| <= atol + rtol * |other|`` elementwise (equal infinities
    are close; NaNs only with ``equal_nan``). Differs: operands of different dtypes are promoted."""
    if rtol < 0 or atol < 0:
        raise ValueError(f"isclose(): rtol and atol must be non-negative, got rtol={rtol}, atol={atol}")
    a, b = _pair(input, other, "isclose")
    same = ew.eq(a, b)
    if not a.dtype.is_floating_point:
        close = ew.le(ew.abs(ew.sub(a.double(), b.double())), ew.add(ew.mul(ew.abs(b.double()), rtol), atol))
        return ew.logical_or(same, close)
    diff = ew.abs(ew.sub(a, b))
    close = ew.logical_and(ew.isfinite(diff), ew.le(diff, ew.add(ew.mul(ew.abs(b), rtol), atol)))
    out = ew.logical_or(same, close)
    if equal_nan:
        out = ew.logical_or(out, ew.logical_and(ew.isnan(a), ew.isnan(b)))
    return out


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:  # noqa: A002
    """Same as torch.allclose: whether every element is close (see isclose); shapes must broadcast."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input: Tensor, other: Tensor) -> bool:  # noqa: A002
    """Same as torch.equal: True when both have the same shape and the same values (NaN is never equal)."""
    a, b = _pair(input, other, "equal")
    if a._shape != b._shape:
        return False
    return bool(ew.eq(a, b).all().item())


def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:  # noqa: A002
    """Same as torch.dist: the p-norm of ``input - other`` (broadcast), differentiable."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"dist(): expected two Tensors, got {type(input).__name__} and {type(other).__name__}")
    broadcast_shapes(input._shape, other._shape)
    return norm(ew.sub(input, other), p)
