"""Gradient clipping. Same as torch.nn.utils.clip_grad_norm_ and clip_grad_value_; the work is
a few tensor ops in the C core, not a Python loop over elements."""

from __future__ import annotations

import math
from collections.abc import Iterable

from pyframe import _grad_mode
from pyframe.ops import join as _join
from pyframe.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters: Tensor | Iterable[Tensor]) -> list:
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    return [p.grad for p in parameters if p.grad is not None]


def clip_grad_norm_(parameters: Tensor | Iterable[Tensor], max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:  # fmt: skip
    """Scales all gradients together so that their joint ``norm_type`` norm is at most
    ``max_norm``; returns the norm before clipping (a 0-d tensor). Same as torch's."""
    from pyframe.ops.creation import tensor

    grads = _grads(parameters)
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return tensor(0.0)
    with _grad_mode.no_grad():
        norms = [g.detach().norm(norm_type) for g in grads]
        total = norms[0] if len(norms) == 1 else _join.stack([n.to(norms[0].dtype) for n in norms]).norm(norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise RuntimeError(
                f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot "
                "be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
                "`error_if_nonfinite=False`"
            )
        coef = (max_norm / (total + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float, foreach=None) -> None:
    """Clamps every gradient element to ``[-clip_value, clip_value]`` in place. Same as torch's."""
    clip_value = float(clip_value)
    with _grad_mode.no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
