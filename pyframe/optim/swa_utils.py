"""Same as torch.optim.swa_utils: weight averaging (SWA and EMA) with ``AveragedModel``, the ``SWALR``
schedule, and ``update_bn`` to recompute batch-norm statistics for averaged weights."""

from __future__ import annotations

import copy
import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from pyframe import _grad_mode
from pyframe import ops as _ops
from pyframe._device import check_device
from pyframe._dtype import int64
from pyframe.nn.modules.module import Module
from pyframe.nn.modules.normalization import _BatchNorm
from pyframe.optim.lr_scheduler import LRScheduler, _per_group
from pyframe.optim.optimizer import Optimizer
from pyframe.tensor import Tensor

__all__ = [
    "AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
    "get_swa_avg_fn",
]  # fmt: skip


def _check_decay(decay: float) -> None:
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable:
    """Same as torch.optim.swa_utils.get_ema_multi_avg_fn: ``fn(ema_params, params, n)`` updating each EMA
    parameter in place to ``decay * ema + (1 - decay) * param`` (a ``lerp`` for floating tensors).

    Raises:
        ValueError: ``decay`` is outside [0, 1].
    """
    _check_decay(decay)

    def ema_update(ema_param_list: list, current_param_list: list, _: Any) -> None:
        with _grad_mode.no_grad():
            for p_ema, p in zip(ema_param_list, current_param_list, strict=True):
                if p_ema.dtype.is_floating_point:
                    p_ema.copy_(_ops.lerp(p_ema, p, 1 - decay))
                else:
                    p_ema.copy_(p_ema * decay + p * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable:
    """Same as torch.optim.swa_utils.get_swa_multi_avg_fn: ``fn(avg_params, params, n)`` updating each
    average in place to the equal-weight mean of ``n + 1`` models (``lerp`` by ``1 / (n + 1)``)."""

    def swa_update(averaged_param_list: list, current_param_list: list, num_averaged: Tensor | int) -> None:
        n = int(num_averaged.item()) if isinstance(num_averaged, Tensor) else int(num_averaged)
        with _grad_mode.no_grad():
            for p_avg, p in zip(averaged_param_list, current_param_list, strict=True):
                if p_avg.dtype.is_floating_point:
                    p_avg.copy_(_ops.lerp(p_avg, p, 1 / (n + 1)))
                else:
                    p_avg.add_((p - p_avg) * (1.0 / (n + 1)))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable:
    """Same as torch.optim.swa_utils.get_ema_avg_fn: ``fn(ema, param, n)`` returning
    ``decay * ema + (1 - decay) * param``.

    Raises:
        ValueError: ``decay`` is outside [0, 1].
    """
    _check_decay(decay)

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with _grad_mode.no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable:
    """Same as torch.optim.swa_utils.get_swa_avg_fn: ``fn(avg, param, n)`` returning the running mean
    ``avg + (param - avg) / (n + 1)``."""

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Tensor | int) -> Tensor:
        with _grad_mode.no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """Same as torch.optim.swa_utils.AveragedModel: a deep copy of ``model`` whose parameters (and, with
    ``use_buffers``, buffers) hold a running average of ``model``'s, updated by ``update_parameters``.

    Without ``avg_fn`` and ``multi_avg_fn`` the average is SWA's equal-weight mean; pass
    ``multi_avg_fn=get_ema_multi_avg_fn(decay)`` (or ``avg_fn=get_ema_avg_fn(decay)``) for an exponential moving
    average. The first update copies ``model``'s values; ``n_averaged`` (an int64 buffer) counts the updates.
    Without ``use_buffers`` the buffers are copied from ``model`` at each update (recompute batch-norm statistics
    with ``update_bn``). Calling the averaged model runs the copy.

    Raises:
        AssertionError: both ``avg_fn`` and ``multi_avg_fn`` are given (torch's exception).
    """

    def __init__(
        self,
        model: Module,
        device: Any = None,
        avg_fn: Callable | None = None,
        multi_avg_fn: Callable | None = None,
        use_buffers: bool = False,
    ) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        check_device(device)
        self.module = copy.deepcopy(model)
        self.register_buffer("n_averaged", _ops.tensor(0, dtype=int64))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Runs the averaged copy of the model."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Same as torch's AveragedModel.update_parameters: folds ``model``'s current parameters (and buffers
        with ``use_buffers``) into the average."""
        if self.use_buffers:
            ours = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            ours, theirs = list(self.parameters()), list(model.parameters())
        ours = [p.detach() for p in ours]
        theirs = [p.detach() for p in theirs[: len(ours)]]
        n = int(self.n_averaged.item())
        with _grad_mode.no_grad():
            if n == 0:
                for p_avg, p in zip(ours, theirs, strict=False):
                    p_avg.copy_(p)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn(ours, theirs, self.n_averaged)
            else:  # torch's CPU path: the per-tensor function (its foreach kernels are for CUDA)
                avg_fn = self.avg_fn or get_swa_avg_fn()
                for p_avg, p in zip(ours, theirs, strict=True):
                    p_avg.copy_(avg_fn(p_avg, p, self.n_averaged))
            if not self.use_buffers:
                for b_avg, b in zip(self.module.buffers(), model.buffers(), strict=True):
                    b_avg.detach().copy_(b.detach())
            self.n_averaged.add_(1)


def update_bn(loader: Iterable, model: Module, device: Any = None) -> None:
    """Same as torch.optim.swa_utils.update_bn: recomputes the running statistics of every batch-norm layer
    of ``model`` with one pass over ``loader`` (each batch a tensor, or a list/tuple whose first element is
    the input), as a cumulative average (momentum None), then restores the layers' momenta and the model's
    training mode. Runs without recording gradients."""
    check_device(device)
    momenta = {}
    for m in model.modules():
        if isinstance(m, _BatchNorm):
            m.reset_running_stats()
            momenta[m] = m.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for m in momenta:
        m.momentum = None
    with _grad_mode.no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            model(batch)
    for m, momentum in momenta.items():
        m.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Same as torch.optim.swa_utils.SWALR: anneals each group's learning rate from its current value to
    ``swa_lr`` over ``anneal_epochs`` steps (``anneal_strategy`` "cos" or "linear"), then keeps it there.

    Raises:
        ValueError: an unknown ``anneal_strategy``, or ``anneal_epochs`` not an int >= 0.
    """

    def __init__(self, optimizer: Optimizer, swa_lr: float | list, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:  # fmt: skip
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups, strict=True):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t: float) -> float:
        return t

    @staticmethod
    def _cosine_anneal(t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, strategy: str) -> None:
        self._anneal_strategy = strategy
        self.anneal_func = self._cosine_anneal if strategy == "cos" else self._linear_anneal

    def get_lr(self) -> list:
        """The next learning rate of each group: between the rate the annealing started from and ``swa_lr``,
        by the annealing function of the steps taken so far."""
        if not self._is_initial and not getattr(self, "_in_step", False):
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)  # fmt: skip
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs,
                                                                         strict=True)]  # fmt: skip

    def step(self, epoch: int | None = None) -> None:
        """Advances the annealing by one step and writes the new rates into the optimizer."""
        self._in_step = True
        try:
            super().step(epoch)
        finally:
            self._in_step = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer and the annealing function, as torch."""
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restores the state from ``state_dict()`` (and the annealing function it names)."""
        super().load_state_dict(state_dict)
        self._set_anneal_func(self._anneal_strategy)
