"""SparseAdam: Adam for parameters whose gradients are sparse (``nn.Embedding(sparse=True)``)."""

from __future__ import annotations

import math
from typing import Any

from pyframe.ops.creation import zeros_like
from pyframe.ops.sparse import sparse_adam_step
from pyframe.optim.optimizer import Optimizer
from pyframe.tensor import Tensor

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """Same as torch.optim.SparseAdam: Adam's update on the rows a sparse gradient holds, the moments and the
    parameter elsewhere untouched (one C pass per parameter over its coalesced gradient, ``pf_sparse_adam``,
    in torch's order of operations). Parameters must be dense, their gradients sparse."""

    _sparse_grads = True

    def __init__(self, params, lr: float | Tensor = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:  # fmt: skip
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not lr > 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not eps > 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        sparse_params = [[i, j] for i, group in enumerate(self.param_groups)
                         for j, p in enumerate(group["params"]) if p.is_sparse]  # fmt: skip
        if sparse_params:
            raise ValueError(f"Sparse params at indices {sparse_params}: SparseAdam requires dense parameter tensors")

    def _grad_of(self, p: Tensor) -> Tensor:
        g = super()._grad_of(p)
        if not g.is_sparse:
            raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return g

    def _update(self, group: dict[str, Any]) -> None:
        beta1, beta2 = (float(b) for b in group["betas"])
        lr, eps = float(group["lr"]), float(group["eps"])
        for p in group["params"]:
            if p.grad is None:
                continue
            g = self._grad_of(p)
            state = self.state[p]
            if not state:
                state["step"] = 0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
            state["step"] += 1
            if g._values()._numel == 0:  # torch skips an empty gradient (its step still counts)
                continue
            step = state["step"]
            step_size = lr * math.sqrt(1 - beta2**step) / (1 - beta1**step)
            t = self._target(p)
            sparse_adam_step(t, g, self._buffer(state, "exp_avg", p), self._buffer(state, "exp_avg_sq", p),
                             step_size, beta1, beta2, eps, bool(group["maximize"]))  # fmt: skip
            if t is not p:
                p.copy_(t)
