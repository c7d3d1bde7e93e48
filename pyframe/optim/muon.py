"""Muon: momentum, then the update orthogonalized by a quintic Newton–Schulz iteration run in bfloat16, stepped
with pyframe's ops in torch's order (each computes in the C core; bfloat16 products accumulate in float32 and
round once, as torch's CPU GEMMs)."""

from __future__ import annotations

import math
from typing import Any

from pyframe import _dtype
from pyframe.ops.creation import zeros_like
from pyframe.ops.products import addmm
from pyframe.optim.optimizer import Optimizer
from pyframe.tensor import Tensor

__all__ = ["Muon"]

# Keller Jordan's constants, as torch's
EPS = 1e-7
DEFAULT_A = 3.4445
DEFAULT_B = -4.7750
DEFAULT_C = 2.0315
DEFAULT_NS_STEPS = 5


def zeropower_via_newtonschulz(grad: Tensor, ns_coefficients: tuple, ns_steps: int, eps: float) -> Tensor:
    """The Newton–Schulz orthogonalization of the 2-d ``grad`` (torch's ``_zeropower_via_newtonschulz``): in
    bfloat16, on the wide orientation, first scaled to a spectral norm of at most 1; returns bfloat16
    ``U S' V^T`` with ``S'`` near the identity."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = grad.to(_dtype.bfloat16)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    x.div_(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        gram_update = addmm(gram, gram, gram, beta=b, alpha=c)
        x = addmm(x, gram_update, x, beta=a)
    return x.T if tall else x


def adjust_lr(lr: float, adjust_lr_fn: str | None, param_shape) -> float:
    """torch's learning-rate adjustment: ``"original"`` (the default) scales by sqrt(max(1, A / B)),
    ``"match_rms_adamw"`` by 0.2 sqrt(max(A, B)), for a parameter of shape (A, B)."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Same as torch.optim.Muon (torch's single-tensor update) for 2-d parameters: the state holds
    ``momentum_buffer``; each step lerps it toward the gradient, takes the Nesterov (or plain) momentum update,
    orthogonalizes it in bfloat16 (:func:`zeropower_via_newtonschulz`), applies decoupled weight decay and
    steps by the adjusted learning rate."""

    def __init__(
        self, params, lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95, nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = (DEFAULT_A, DEFAULT_B, DEFAULT_C), eps: float = EPS,
        ns_steps: int = DEFAULT_NS_STEPS, adjust_lr_fn: str | None = None,
    ) -> None:  # fmt: skip
        if isinstance(lr, Tensor) and lr._numel != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not lr >= 0.0:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not momentum >= 0.0:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = dict(
            lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov, ns_coefficients=ns_coefficients,
            eps=eps, ns_steps=ns_steps, adjust_lr_fn=adjust_lr_fn,
        )  # fmt: skip
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        f"Muon only supports 2D parameters whereas we found a parameter with size: {p.size()}"
                    )

    def _update(self, group: dict[str, Any]) -> None:
        lr, wd, momentum = float(group["lr"]), float(group["weight_decay"]), float(group["momentum"])
        for p in group["params"]:
            if p.grad is None:
                continue
            grad = self._grad_of(p)
            if grad.ndim != 2:
                raise ValueError("Param gradient must be a 2D matrix")
            state = self.state[p]
            if "momentum_buffer" not in state:
                state["momentum_buffer"] = zeros_like(grad)
            buf = self._buffer(state, "momentum_buffer", p)
            buf.lerp_(grad, 1 - momentum)
            update = grad.lerp(buf, momentum) if group["nesterov"] else buf
            update = zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
            p.mul_(1 - lr * wd)
            p.add_(update, alpha=-adjust_lr(lr, group["adjust_lr_fn"], p.shape))
