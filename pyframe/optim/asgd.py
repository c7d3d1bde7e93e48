"""Averaged stochastic gradient descent: one fused C pass per parameter; parameters whose numbers
agree share one call (``pf_optim_steps``)."""

from __future__ import annotations

import struct
from typing import Any

from pyframe import _dtype
from pyframe.ops.creation import full, zeros, zeros_like
from pyframe.optim.optimizer import _FusedOptimizer, check_number
from pyframe.tensor import Tensor

__all__ = ["ASGD"]


def _float32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", x))[0]


class ASGD(_FusedOptimizer):
    """Same as torch.optim.ASGD: the state holds ``step``, ``eta`` and ``mu`` as 0-d float32 tensors
    and the average ``ax``, as torch's; ``foreach`` is accepted and has no effect; ``capturable``
    and ``differentiable`` are not supported."""

    _kind = "asgd"

    def __init__(
        self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
        weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False, differentiable: bool = False,
        capturable: bool = False,
    ) -> None:  # fmt: skip
        if isinstance(lr, Tensor) and lr._numel != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_number("learning rate", lr)
        check_number("weight_decay value", weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, foreach=foreach,
                        maximize=maximize, differentiable=differentiable, capturable=capturable)  # fmt: skip
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = zeros((), dtype=_dtype.float32)
        state["eta"] = full((), float(group["lr"]), dtype=_dtype.float32)
        state["mu"] = full((), 1.0, dtype=_dtype.float32)
        state["ax"] = zeros_like(p)

    def _buffers(self, group: dict[str, Any]) -> tuple:
        return ("ax",)

    def _per_param(self, group: dict[str, Any], state: dict[str, Any]) -> tuple:
        step = self._next_step(state)
        lr, lambd = float(group["lr"]), float(group["lambd"])
        eta, mu = float(state["eta"].item()), float(state["mu"].item())
        numbers = (1 - lambd * eta, -eta, float(group["weight_decay"]), float(bool(group["maximize"])), mu,
                   float(mu == 1))  # fmt: skip
        # the next step's eta and mu, rounded to float32 as torch's as_tensor (the default dtype) makes them,
        # whatever the dtype of the state (a loaded state has the parameter's)
        state["eta"].fill_(_float32(lr / ((1 + lambd * lr * step) ** float(group["alpha"]))))
        state["mu"].fill_(_float32(1 / max(1, step - float(group["t0"]))))
        return numbers
