"""Gradient clipping. Same as torch.nn.utils' ``clip_grad_norm_`` (``get_total_norm`` then
``clip_grads_with_norm_``), ``clip_grad_value_`` and the deprecated ``clip_grad_norm``; the work is a few tensor
ops in the C core, not a Python loop over elements."""

from __future__ import annotations

import math
import types
import warnings
from collections.abc import Iterable

from pyframe import _dtype, _grad_mode
from pyframe.ops import join as _join
from pyframe.ops import products as _products
from pyframe.ops import reduce as _reduce
from pyframe.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _grads(parameters: Tensor | Iterable[Tensor]) -> list:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def get_total_norm(tensors: Tensor | Iterable[Tensor], norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:  # fmt: skip
    """Same as torch.nn.utils.get_total_norm: the ``norm_type`` norm of all ``tensors`` together, as if they were
    one vector (the norm of their norms); a 0-d tensor, 0 for none. ``error_if_nonfinite`` raises on a NaN or
    infinite norm."""
    from pyframe.ops.creation import tensor

    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with _grad_mode.no_grad():
        total = _total_two_norm(tensors) if norm_type == 2.0 else None
        if total is None:
            norms = [t.detach().norm(norm_type) for t in tensors]
            total = norms[0] if len(norms) == 1 else _join.stack([n.to(norms[0].dtype) for n in norms]).norm(norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot "
            "be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )
    return total


def _total_two_norm(tensors: list) -> Tensor | None:
    """The 2-norm of dense float32/float64 tensors of one dtype as ``sqrt`` of the sum of their squared sums, each
    one C pass (a dot product of the tensor with itself: no squares tensor, no per-tensor overflow check), or None
    for the general path: other dtypes or layouts, and a sum that is not finite (a square overflowing float32, or
    an inf or NaN gradient, whose norm the general path computes as torch does)."""
    dt = tensors[0].dtype
    if dt is not _dtype.float32 and dt is not _dtype.float64:
        return None
    if any(t.dtype is not dt or not t.is_contiguous() or t.is_sparse for t in tensors):
        return None
    flat = [t.detach().reshape(-1) for t in tensors]
    squares = [_products.dot(f, f) for f in flat]
    total = (squares[0] if len(squares) == 1 else _reduce.sum(_join.stack(squares))).sqrt()
    return total if math.isfinite(total.item()) else None


def clip_grads_with_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, total_norm: Tensor,
                          foreach=None) -> None:  # fmt: skip
    """Same as torch.nn.utils.clip_grads_with_norm_: every gradient scaled in place by
    ``min(max_norm / (total_norm + 1e-6), 1)``, for a ``total_norm`` computed beforehand (``get_total_norm``)."""
    grads = _grads(parameters)
    if not grads:
        return
    if not isinstance(total_norm, Tensor):
        raise TypeError(f"clip_grads_with_norm_(): total_norm must be a Tensor, got {type(total_norm).__name__}")
    with _grad_mode.no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:  # fmt: skip
    """Scales all gradients together so that their joint ``norm_type`` norm is at most
    ``max_norm``; returns the norm before clipping (a 0-d tensor). Same as torch's: ``get_total_norm`` of the
    gradients, then ``clip_grads_with_norm_``; an empty generator warns, as torch's."""
    if not isinstance(parameters, Tensor):
        generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=2)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite)
    clip_grads_with_norm_(parameters, max_norm, total)
    return total


def clip_grad_norm(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:  # fmt: skip
    """Same as torch.nn.utils.clip_grad_norm: ``clip_grad_norm_`` under its deprecated name (it warns)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)  # fmt: skip
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach=None) -> None:
    """Clamps every gradient element to ``[-clip_value, clip_value]`` in place. Same as torch's."""
    clip_value = float(clip_value)
    with _grad_mode.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
