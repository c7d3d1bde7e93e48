"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay."""

from __future__ import annotations

from typing import Any

from pyframe.optim.optimizer import _FusedOptimizer, check_number
from pyframe.tensor import Tensor

__all__ = ["SGD"]


class SGD(_FusedOptimizer):
    """Same as torch.optim.SGD. Each step is one C call over the group's parameters (``pf_optim_steps``);
    ``foreach`` and ``fused`` are accepted and recorded, with no effect; ``differentiable=True``
    is not supported. A sparse gradient steps only its rows, as torch's (its momentum buffer is sparse;
    ``weight_decay`` refuses it)."""

    _kind = "sgd"
    _sparse_grads = True
    _param_shaped_state = ("momentum_buffer",)

    def __init__(
        self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0, weight_decay: float = 0,
        nesterov: bool = False, *, maximize: bool = False, foreach: bool | None = None, differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:  # fmt: skip
        check_number("learning rate", lr)
        check_number("momentum value", momentum)
        check_number("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize, foreach=foreach, differentiable=differentiable, fused=fused)  # fmt: skip
        super().__init__(params, defaults)

    def _buffers(self, group: dict) -> tuple:
        return ("momentum_buffer",) if float(group["momentum"]) != 0 else ()

    def _per_param(self, group: dict, state: dict | None) -> tuple:
        # first_step: a new momentum buffer, which the kernel sets to the gradient
        return (1.0 if state is not None and state.get("momentum_buffer") is None else 0.0,)

    def _scalars(self, group: dict) -> tuple:
        return (float(group["lr"]), float(group["momentum"]), float(group["dampening"]), float(group["weight_decay"]),
                float(bool(group["nesterov"])), float(bool(group["maximize"])))  # fmt: skip

    def _sparse_step(self, p: Tensor, g: Tensor, group: dict[str, Any], state: dict[str, Any] | None) -> None:
        # torch's single-tensor SGD, whose sparse arithmetic keeps the gradient sparse
        if group["fused"]:
            raise RuntimeError("`_fused_sgd` does not support sparse gradients")
        if group["maximize"]:
            g = -g
        if float(group["weight_decay"]) != 0:
            g = g.add(p, alpha=float(group["weight_decay"]))  # raises as torch: add(sparse, dense)
        momentum = float(group["momentum"])
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = g.clone().detach()
            else:
                buf.mul_(momentum).add_(g, alpha=1 - float(group["dampening"]))
            g = g.add(buf, alpha=momentum) if group["nesterov"] else buf
        p.add_(g, alpha=-float(group["lr"]))
