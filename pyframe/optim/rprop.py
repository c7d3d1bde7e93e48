"""Resilient backpropagation: one fused C pass per parameter; parameters whose numbers agree share
one call (``pf_optim_steps``)."""

from __future__ import annotations

from typing import Any

from pyframe import _dtype
from pyframe.ops.creation import full, zeros, zeros_like
from pyframe.optim.optimizer import _FusedOptimizer, check_number
from pyframe.tensor import Tensor

__all__ = ["Rprop"]


class Rprop(_FusedOptimizer):
    """Same as torch.optim.Rprop: the state holds ``step`` (0-d float32), ``prev`` and
    ``step_size``, as torch's; ``foreach`` is accepted and has no effect; ``capturable`` and
    ``differentiable`` are not supported."""

    _kind = "rprop"

    def __init__(
        self, params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
        step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False, foreach: bool | None = None,
        maximize: bool = False, differentiable: bool = False,
    ) -> None:  # fmt: skip
        if isinstance(lr, Tensor) and lr._numel != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_number("learning rate", lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)  # fmt: skip
        super().__init__(params, defaults)

    def _init_state(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = zeros((), dtype=_dtype.float32)
        state["prev"] = zeros_like(p)
        state["step_size"] = full(p._shape, float(group["lr"]), dtype=p.dtype)

    def _buffers(self, group: dict[str, Any]) -> tuple:
        return ("prev", "step_size")

    def _per_param(self, group: dict[str, Any], state: dict[str, Any]) -> tuple:
        self._next_step(state)
        (etaminus, etaplus), (lo, hi) = group["etas"], group["step_sizes"]
        return (float(etaminus), float(etaplus), float(lo), float(hi), float(bool(group["maximize"])))
