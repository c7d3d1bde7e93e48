"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay."""

from __future__ import annotations

from pyframe._backend import NULL, check, ffi, lib
from pyframe.optim.optimizer import Optimizer
from pyframe.tensor import empty_tensor

__all__ = ["SGD"]


class SGD(Optimizer):
    """Same as torch.optim.SGD. Each step is one fused C pass per parameter (``pf_optim_step``);
    ``foreach`` and ``fused`` are accepted and recorded, with no effect; ``differentiable=True``
    is not supported."""

    _param_shaped_state = ("momentum_buffer",)

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        momentum: float = 0,
        dampening: float = 0,
        weight_decay: float = 0,
        nesterov: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        if differentiable:
            raise ValueError("pyframe's SGD does not support differentiable=True")
        defaults = {
            "lr": lr,
            "momentum": momentum,
            "dampening": dampening,
            "weight_decay": weight_decay,
            "nesterov": nesterov,
            "maximize": maximize,
            "foreach": foreach,
            "differentiable": differentiable,
            "fused": fused,
        }
        super().__init__(params, defaults)

    def _update(self, group: dict) -> None:
        lr, momentum = float(group["lr"]), float(group["momentum"])
        dampening, weight_decay = float(group["dampening"]), float(group["weight_decay"])
        nesterov, maximize = int(bool(group["nesterov"])), int(bool(group["maximize"]))
        # pf_optim_step's SGD scalars; the last, first_step, is set per parameter
        hp = ffi.new("double[7]", [lr, momentum, dampening, weight_decay, nesterov, maximize, 0])
        for p in group["params"]:
            if p.grad is None:
                continue
            g = self._grad_of(p)
            buf_ptr, first = NULL, 0
            if momentum != 0:
                state = self.state[p]
                if state.get("momentum_buffer") is None:  # the kernel sets it to the gradient
                    buf = state["momentum_buffer"] = empty_tensor(p._shape, p.dtype)
                    first = 1
                else:
                    buf = self._buffer(state, "momentum_buffer", p)
                    buf._bump()
                buf_ptr = buf._ptr
            t = self._target(p)
            hp[6] = first
            check(
                lib.pf_optim_step(lib.PF_OPTIM_SGD, t.dtype.code, t._numel, t._ptr, g._ptr, buf_ptr, NULL, NULL, hp, 7)
            )
            self._written(p, t)
