"""Adam and AdamW (decoupled weight decay), with amsgrad and maximize."""

from __future__ import annotations

from pyframe import _dtype
from pyframe.ops.creation import zeros
from pyframe.optim.optimizer import _FusedOptimizer, check_adam_args
from pyframe.tensor import Tensor

__all__ = ["Adam", "AdamW"]


class Adam(_FusedOptimizer):
    """Same as torch.optim.Adam (``decoupled_weight_decay=True`` is AdamW). Each step is one
    C call per group and dtype (``pf_optim_steps``: a fused pass per parameter, step counts
    included); ``foreach`` and ``fused`` are accepted and recorded, with no effect;
    ``capturable`` and ``differentiable`` are not supported. Betas may be ints or floats
    (torch insists on floats or tensors)."""

    _kind = "adam"
    _param_shaped_state = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")
    _sparse_message = "Adam does not support sparse gradients, please consider SparseAdam instead"

    def __init__(
        self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
        weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None, maximize: bool = False,
        capturable: bool = False, differentiable: bool = False, fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:  # fmt: skip
        if isinstance(lr, Tensor) and foreach and not capturable:
            raise ValueError("lr as a Tensor is not supported for capturable=False and foreach=True")
        tensors = [isinstance(b, Tensor) for b in betas] if isinstance(betas, (tuple, list)) else []
        if any(tensors) and not all(tensors):
            raise ValueError("betas must be either both floats or both Tensors")
        if any(tensors) and foreach and not capturable:
            raise ValueError("betas[0] as a Tensor is not supported for capturable=False and foreach=True")
        betas = check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)  # fmt: skip
        super().__init__(params, defaults)

    def _buffers(self, group: dict) -> tuple:
        return ("exp_avg", "exp_avg_sq", "max_exp_avg_sq" if group["amsgrad"] else None)

    def _per_param(self, group: dict, state: dict) -> Tensor:
        return _step_tensor(state)  # made first on a first step, as torch's; the kernel adds one to it

    def _scalars(self, group: dict) -> tuple:
        beta1, beta2 = group["betas"]
        return (float(group["lr"]), float(beta1), float(beta2), float(group["eps"]), float(group["weight_decay"]),
                float(bool(group["amsgrad"])), float(bool(group["decoupled_weight_decay"])),
                float(bool(group["maximize"])))  # fmt: skip


def _step_tensor(state: dict) -> Tensor:
    """``state["step"]`` as torch keeps it, a 0-d float32 tensor (the C call adds one to it);
    a number or another kind of tensor from a loaded state is converted."""
    t = state.get("step")
    if not (isinstance(t, Tensor) and t._numel == 1 and t.dtype is _dtype.float32 and t.ndim == 0):
        value = 0.0 if t is None else float(t)
        t = state["step"] = zeros((), dtype=_dtype.float32).fill_(value)
    return t


class AdamW(Adam):
    """Same as torch.optim.AdamW: Adam with decoupled weight decay (default 1e-2)."""

    def __init__(
        self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
        weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False, foreach: bool | None = None,
        capturable: bool = False, differentiable: bool = False, fused: bool | None = None,
    ) -> None:  # fmt: skip
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)  # fmt: skip

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
