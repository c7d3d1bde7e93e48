"""Adafactor: factored second moments (a row and a column statistic for each matrix), stepped with
pyframe's ops in torch's order (each computes in the C core)."""

from __future__ import annotations

from typing import Any

from pyframe import _dtype
from pyframe.ops.creation import zeros, zeros_like
from pyframe.optim.optimizer import Optimizer
from pyframe.tensor import Tensor

__all__ = ["Adafactor"]

_EPS = {"float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16}


class Adafactor(Optimizer):
    """Same as torch.optim.Adafactor (torch's single-tensor update): the state holds ``step`` (0-d
    float32) and ``row_var``/``col_var`` for a parameter of two or more dims, ``variance`` for a
    vector; ``foreach`` is accepted and has no effect."""

    def __init__(
        self, params, lr: float = 1e-2, beta2_decay: float = -0.8, eps: tuple = (None, 1e-3), d: float = 1.0,
        weight_decay: float = 0.0, *, foreach: bool | None = None, maximize: bool = False,
    ) -> None:  # fmt: skip
        if isinstance(lr, Tensor) and lr._numel != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not lr >= 0.0:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not beta2_decay <= 0.0:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not eps[0] >= 0.0:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not eps[1] >= 0.0:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not d >= 1.0:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not weight_decay >= 0.0:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize)  # fmt: skip
        super().__init__(params, defaults)

    def _update(self, group: dict[str, Any]) -> None:
        lr, wd, d = float(group["lr"]), float(group["weight_decay"]), float(group["d"])
        eps1, eps2 = group["eps"]
        for p in group["params"]:
            if p.grad is None:
                continue
            grad = self._grad_of(p)
            if group["maximize"]:
                grad = -grad
            state = self.state[p]
            if not state:
                state["step"] = zeros((), dtype=_dtype.float32)
                if grad.ndim > 1:
                    state["row_var"] = zeros((*grad.shape[:-1], 1), dtype=grad.dtype)
                    state["col_var"] = zeros((*grad.shape[:-2], 1, grad.shape[-1]), dtype=grad.dtype)
                else:
                    state["variance"] = zeros_like(grad)
            e1 = _EPS[p.dtype.name] if eps1 is None else float(eps1)
            step = self._next_step(state)
            one_minus_beta2_t = step ** float(group["beta2_decay"])
            rho_t = min(lr, 1 / (step**0.5))
            alpha = max(float(eps2), p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
            if wd != 0:
                p.mul_(1 - lr * wd)
            if grad.ndim > 1:
                row_var, col_var = state["row_var"], state["col_var"]
                row_mean = grad.norm(dim=-1, keepdim=True).square_().div_(grad.size(-1))
                row_var.lerp_(row_mean, one_minus_beta2_t)
                col_mean = grad.norm(dim=-2, keepdim=True).square_().div_(grad.size(-2))
                col_var.lerp_(col_mean, one_minus_beta2_t)
                var_estimate = row_var @ col_var
                var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=e1))
            else:
                variance = state["variance"]
                variance.lerp_(grad * grad, one_minus_beta2_t)
                var_estimate = variance.clone()
            update = var_estimate.clamp_(min=e1 * e1).rsqrt_()
            update.mul_(grad)
            denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
            p.add_(update, alpha=-alpha / denom)
