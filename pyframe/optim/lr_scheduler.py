"""Learning-rate schedulers. Same as torch.optim.lr_scheduler: each ``step()`` uses torch's own
recursive ("chainable") formula, so the learning rates agree with torch's step for step to the
last bit, and ``step(epoch)`` its closed form where torch has one.

What differs: pyframe does not wrap ``optimizer.step`` to warn when the scheduler is stepped first.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from pyframe.optim.optimizer import Optimizer
from pyframe.tensor import Tensor

__all__ = [
    "LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR", "ExponentialLR",
    "SequentialLR", "PolynomialLR", "CosineAnnealingLR", "ChainedScheduler", "ReduceLROnPlateau",
    "CosineAnnealingWarmRestarts", "OneCycleLR", "CyclicLR",
]  # fmt: skip

_EPOCH_DEPRECATION = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler."
)


def _check_optimizer(optimizer) -> Optimizer:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer (a scheduler takes a pyframe.optim optimizer)")
    return optimizer


def _lrs(optimizer: Optimizer, key: str = "lr") -> list:
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key] for g in optimizer.param_groups]


def _set(group: dict, key: str, value) -> None:
    if isinstance(group[key], Tensor):
        group[key].fill_(float(value))
    else:
        group[key] = value


def _per_group(name: str, optimizer: Optimizer, value) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"expected {len(optimizer.param_groups)} values for {name}, got {len(value)}")
        return list(value)
    return [value] * len(optimizer.param_groups)


def _check_int(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not hasattr(type(value), "__index__") or value < low:  # numpy's integers too
        raise ValueError(f"Expected an integer {name} >= {low}, but got {value!r}")


class LRScheduler:
    """Same as torch.optim.lr_scheduler.LRScheduler: subclasses define ``get_lr()`` (the next rates
    from the current ones) and may define ``_get_closed_form_lr()`` (rates at ``last_epoch``)."""

    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        self.optimizer = _check_optimizer(optimizer)
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when resuming a scheduler with "
                        f"last_epoch={last_epoch}; load the optimizer's state first"
                    )
        self.base_lrs = _lrs(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict[str, Any]:
        """Every attribute but the optimizer, as torch."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Same as torch.optim.lr_scheduler.LRScheduler.load_state_dict: restores the scheduler's state from
        ``state_dict()`` (a dict; TypeError otherwise). The optimizer's learning rates are restored by its own
        ``load_state_dict``.
        """
        if not isinstance(state_dict, dict):
            raise TypeError(f"state_dict must be a dict, got {type(state_dict).__name__}")
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The learning rates the last ``step()`` set, one per parameter group."""
        return self._last_lr

    def get_lr(self) -> list:
        """Same as torch.optim.lr_scheduler.LRScheduler.get_lr: the learning rate of each parameter group for the
        current
        epoch, by the scheduler's closed-form or chained rule (each subclass defines it). Read ``get_last_lr()`` for the
        rates in use.
        """
        raise NotImplementedError(f"{type(self).__name__} does not implement get_lr()")

    def _scaled(self, factor) -> list:
        """Every group's current rate times ``factor`` (a chainable scheduler's next rates)."""
        return [g["lr"] * factor for g in self.optimizer.param_groups]

    def step(self, epoch: int | None = None) -> None:
        """Same as torch.optim.lr_scheduler.LRScheduler.step: advances one epoch and writes the new rates into the
        optimizer's parameter groups; call it after ``optimizer.step()``.

        ``epoch`` is torch's deprecated argument: it still sets the epoch, with torch's UserWarning.
        """
        self._step_count += 1
        if epoch is not None:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        if epoch is None:
            self.last_epoch += 1
            values = self.get_lr()
        else:
            self.last_epoch = epoch
            values = self._get_closed_form_lr() if hasattr(self, "_get_closed_form_lr") else self.get_lr()
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            _set(group, "lr", lr)
        self._last_lr = _lrs(self.optimizer)


class _LambdaBase(LRScheduler):
    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.lr_lambdas = _per_group("lr_lambda", optimizer, lr_lambda)
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"lr_lambda should be a function, but got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict[str, Any]:
        """Callable objects' ``__dict__`` are saved; plain functions and lambdas as ``None``."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [
            None if isinstance(fn, types.FunctionType) else fn.__dict__.copy() for fn in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas", [None] * len(self.lr_lambdas))
        self.__dict__.update(state)
        for fn, saved in zip(self.lr_lambdas, lambdas, strict=False):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaBase):
    """Same as torch.optim.lr_scheduler.LambdaLR: ``base_lr * lr_lambda(epoch)``."""

    def get_lr(self) -> list:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs, strict=True)]


class MultiplicativeLR(_LambdaBase):
    """Same as torch.optim.lr_scheduler.MultiplicativeLR: ``lr * lr_lambda(epoch)`` each step."""

    def get_lr(self) -> list:
        if self._is_initial:
            return _lrs(self.optimizer)
        groups = self.optimizer.param_groups
        return [g["lr"] * fn(self.last_epoch) for fn, g in zip(self.lr_lambdas, groups, strict=True)]


class StepLR(LRScheduler):
    """Same as torch.optim.lr_scheduler.StepLR: times ``gamma`` every ``step_size`` epochs."""

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        _check_int("step_size", step_size, 1)
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _lrs(self.optimizer)
        return self._scaled(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Same as torch.optim.lr_scheduler.MultiStepLR: times ``gamma`` at each milestone."""

    def __init__(
        self, optimizer: Optimizer, milestones: Iterable[int], gamma: float = 0.1, last_epoch: int = -1
    ) -> None:
        _check_optimizer(optimizer)
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch not in self.milestones:
            return _lrs(self.optimizer)
        return self._scaled(self.gamma ** self.milestones[self.last_epoch])

    def _get_closed_form_lr(self) -> list:
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch) for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """Same as torch.optim.lr_scheduler.ConstantLR: ``factor`` times the rate for ``total_iters`` steps."""

    def __init__(
        self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5, last_epoch: int = -1
    ) -> None:
        _check_optimizer(optimizer)
        if not 0 <= factor <= 1.0:
            raise ValueError(f"Constant multiplicative factor expected to be between 0 and 1, got {factor}")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0:  # the factor comes in
            return self._scaled(self.factor)
        if self.last_epoch == self.total_iters:  # and goes
            return self._scaled(1.0 / self.factor)
        return _lrs(self.optimizer)

    def _get_closed_form_lr(self) -> list:
        on = self.last_epoch >= self.total_iters
        return [base * (self.factor + on * (1 - self.factor)) for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Same as torch.optim.lr_scheduler.LinearLR: the factor goes linearly from ``start_factor``
    to ``end_factor`` over ``total_iters`` steps."""

    def __init__(
        self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0, total_iters: int = 5,
        last_epoch: int = -1,
    ) -> None:  # fmt: skip
        _check_optimizer(optimizer)
        if not 0 < start_factor <= 1.0:
            raise ValueError(f"Starting multiplicative factor expected to be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1.0:
            raise ValueError(f"Ending multiplicative factor expected to be between 0 and 1, got {end_factor}")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0:
            return self._scaled(self.start_factor)
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        span = self.end_factor - self.start_factor
        scale = 1.0 + span / (self.total_iters * self.start_factor + (self.last_epoch - 1) * span)
        return self._scaled(scale)

    def _get_closed_form_lr(self) -> list:
        span = self.end_factor - self.start_factor
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + span * frac) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Same as torch.optim.lr_scheduler.ExponentialLR: times ``gamma`` every step."""

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self._is_initial:
            return _lrs(self.optimizer)
        return self._scaled(self.gamma)

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma**self.last_epoch for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Same as torch.optim.lr_scheduler.PolynomialLR."""

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        t, n = self.last_epoch, self.total_iters
        decay = ((1.0 - t / n) / (1.0 - (t - 1) / n)) ** self.power
        return self._scaled(decay)

    def _get_closed_form_lr(self) -> list:
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (1.0 - frac) ** self.power for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Same as torch.optim.lr_scheduler.CosineAnnealingLR (torch's recursive form: past ``T_max``
    the rate climbs back, a cosine of period ``2 * T_max``)."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0, last_epoch: int = -1) -> None:  # noqa: N803
        _check_optimizer(optimizer)
        if isinstance(T_max, bool) or not isinstance(T_max, (int, float)) or T_max <= 0:
            raise ValueError(f"Expected a positive T_max, but got {T_max!r}")
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        groups, t, tm, lo = self.optimizer.param_groups, self.last_epoch, self.T_max, self.eta_min
        if self._is_initial:
            return _lrs(self.optimizer)
        if self._step_count == 1 and t > 0:
            return [lo + (base - lo) * (1 + math.cos(t * math.pi / tm)) / 2 for base in self.base_lrs]
        if (t - 1 - tm) % (2 * tm) == 0:
            return [
                g["lr"] + (base - lo) * (1 - math.cos(math.pi / tm)) / 2
                for base, g in zip(self.base_lrs, groups, strict=True)
            ]
        ratio = (1 + math.cos(math.pi * t / tm)) / (1 + math.cos(math.pi * (t - 1) / tm))
        return [ratio * (g["lr"] - lo) + lo for g in groups]

    def _get_closed_form_lr(self) -> list:
        lo = self.eta_min
        return [lo + (base - lo) * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2 for base in self.base_lrs]


class CosineAnnealingWarmRestarts(LRScheduler):
    """Same as torch.optim.lr_scheduler.CosineAnnealingWarmRestarts (SGDR)."""

    def __init__(
        self, optimizer: Optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0, last_epoch: int = -1  # noqa: N803
    ) -> None:  # fmt: skip
        _check_optimizer(optimizer)
        _check_int("T_0", T_0, 1)
        _check_int("T_mult", T_mult, 1)
        if isinstance(eta_min, bool) or not isinstance(eta_min, (float, int)):
            raise ValueError(f"Expected float or int eta_min, but got {eta_min!r}")
        self.T_0 = self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        lo = self.eta_min
        return [lo + (base - lo) * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2 for base in self.base_lrs]

    def step(self, epoch: float | None = None) -> None:
        """Same as torch's CosineAnnealingWarmRestarts.step: advances one epoch, or sets a (fractional) epoch,
        restarting
        the cosine after ``T_0``, ``T_0 * T_mult``, ... epochs.
        """
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult**n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult**n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            _set(group, "lr", lr)
        self._last_lr = _lrs(self.optimizer)


class _Composite(LRScheduler):
    """A scheduler made of others (SequentialLR, ChainedScheduler): their states nest in its own."""

    @staticmethod
    def _check_children(owner: str, optimizer: Optimizer, schedulers: Sequence) -> None:
        if len(schedulers) < 1:
            raise ValueError(f"{owner} expects at least one scheduler, but got none")
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"{owner}: the scheduler at index {i} should have `optimizer` as its attribute")
            if isinstance(s, ReduceLROnPlateau):
                raise ValueError(
                    f"{owner} does not support ReduceLROnPlateau (its step needs a metric), got one at index {i}"
                )
            if s.optimizer is not optimizer:
                raise ValueError(
                    f"{owner} expects all schedulers to belong to the same optimizer, but the scheduler "
                    f"{type(s).__name__} at index {i} has another one"
                )

    def state_dict(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        state = dict(state_dict)
        children = state.pop("_schedulers")
        self.__dict__.update(state)
        for s, saved in zip(self._schedulers, children, strict=True):
            s.load_state_dict(saved)


class SequentialLR(_Composite):
    """Same as torch.optim.lr_scheduler.SequentialLR: ``schedulers[i]`` runs from ``milestones[i - 1]``."""

    def __init__(
        self, optimizer: Optimizer, schedulers: list[LRScheduler], milestones: list[int], last_epoch: int = -1
    ) -> None:
        _check_optimizer(optimizer)
        self._check_children("SequentialLR", optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "SequentialLR expects one more scheduler than milestones, but got "
                f"{len(schedulers)} schedulers and {len(milestones)} milestones"
            )
        self._schedulers = list(schedulers)
        self._milestones = list(milestones)
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        for group in optimizer.param_groups:  # undo the children's initial steps
            _set(group, "lr", group["initial_lr"])
        self._undo(self)
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = self._schedulers[idx].get_last_lr()

    def _undo(self, sched) -> None:
        if hasattr(sched, "_schedulers"):
            for s in sched._schedulers:
                self._undo(s)
        elif hasattr(sched, "last_epoch"):
            sched.last_epoch -= 1

    def step(self) -> None:  # type: ignore[override]
        """Same as torch.optim.lr_scheduler.SequentialLR.step: steps the scheduler whose milestone interval holds the
        new
        epoch; at a milestone the next scheduler starts from its epoch 0.
        """
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_Composite):
    """Same as torch.optim.lr_scheduler.ChainedScheduler: every scheduler steps, in order."""

    def __init__(self, schedulers: Sequence[LRScheduler], optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError("ChainedScheduler expects at least one scheduler, but got none")
        optimizer = _check_optimizer(optimizer or getattr(schedulers[0], "optimizer", None))
        self._check_children("ChainedScheduler", optimizer, schedulers)
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = _lrs(optimizer)

    def step(self) -> None:  # type: ignore[override]
        """Same as torch.optim.lr_scheduler.ChainedScheduler.step: steps every scheduler of the chain, in order."""
        for s in self._schedulers:
            s.step()
        self._last_lr = _lrs(self.optimizer)


class ReduceLROnPlateau(LRScheduler):
    """Same as torch.optim.lr_scheduler.ReduceLROnPlateau: ``step(metric)`` cuts the rates by
    ``factor`` after ``patience`` epochs without improvement."""

    def __init__(
        self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
        threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr: list[float] | float = 0,
        eps: float = 1e-8,
    ) -> None:  # fmt: skip
        if factor >= 1.0:
            raise ValueError(f"Factor should be < 1.0, got {factor}")
        self.factor = factor
        self.optimizer = _check_optimizer(optimizer)
        if isinstance(min_lr, (list, tuple)):
            self.default_min_lr = None
            self.min_lrs = _per_group("min_lr", optimizer, list(min_lr))
        else:
            self.default_min_lr = min_lr
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.cooldown = cooldown
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = _lrs(optimizer)
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self) -> None:
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    @property
    def in_cooldown(self) -> bool:
        """Same as torch's ReduceLROnPlateau.in_cooldown: whether the scheduler is waiting out ``cooldown`` epochs
        after a
        reduction.
        """
        return self.cooldown_counter > 0

    def step(self, metrics, epoch: int | None = None) -> None:  # type: ignore[override]
        """Same as torch.optim.lr_scheduler.ReduceLROnPlateau.step: records ``metrics`` (a number or one-element
        tensor);
        after more than ``patience`` epochs without improvement beyond ``threshold``, multiplies every group's rate by
        ``factor`` (not below ``min_lr``; changes smaller than ``eps`` are skipped) and starts the cooldown.
        """
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_DEPRECATION, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self._is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _lrs(self.optimizer)

    def _reduce_lr(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            if self.default_min_lr is None:
                raise RuntimeError(
                    f"The optimizer has {len(groups)} parameter groups but ReduceLROnPlateau was given "
                    f"{len(self.min_lrs)} min_lrs; update min_lrs to match"
                )
            self.min_lrs = [self.default_min_lr] * len(groups)
        for group, min_lr in zip(groups, self.min_lrs, strict=True):
            old = float(group["lr"])
            new = max(old * self.factor, min_lr)
            if old - new > self.eps:
                _set(group, "lr", new)

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode: str, threshold: float, threshold_mode: str) -> None:
        if mode not in ("min", "max"):
            raise ValueError(f"mode {mode!r} is unknown (expected 'min' or 'max')")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"threshold mode {threshold_mode!r} is unknown (expected 'rel' or 'abs')")
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Same as torch's ReduceLROnPlateau.load_state_dict: restores the state, including the comparison mode."""
        super().load_state_dict(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)


def _start_momentum_cycle(scheduler: LRScheduler, optimizer: Optimizer, base_momentum, max_momentum,
                          last_epoch: int) -> tuple[list, list]:  # fmt: skip
    """OneCycleLR's and CyclicLR's ``cycle_momentum``: the per-group momentum bounds, and on a
    fresh start the momentum (or Adam's beta1) set to the upper one, as torch does."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` option enabled")
    scheduler.use_beta1 = "betas" in optimizer.defaults
    bases = _per_group("base_momentum", optimizer, base_momentum)
    maxes = _per_group("max_momentum", optimizer, max_momentum)
    if last_epoch == -1:
        for m_max, m_base, group in zip(maxes, bases, optimizer.param_groups, strict=True):
            if scheduler.use_beta1:
                group["betas"] = (m_max, *group["betas"][1:])
            else:
                group["momentum"] = m_max
            group["max_momentum"] = m_max
            group["base_momentum"] = m_base
    return bases, maxes


class OneCycleLR(LRScheduler):
    """Same as torch.optim.lr_scheduler.OneCycleLR (cos or linear annealing, two or three phases,
    momentum or beta1 cycled in the opposite direction)."""

    def __init__(
        self, optimizer: Optimizer, max_lr: float | list[float], total_steps: int | None = None,
        epochs: int | None = None, steps_per_epoch: int | None = None, pct_start: float = 0.3,
        anneal_strategy: str = "cos", cycle_momentum: bool = True, base_momentum: float | list[float] = 0.85,
        max_momentum: float | list[float] = 0.95, div_factor: float = 25.0, final_div_factor: float = 1e4,
        three_phase: bool = False, last_epoch: int = -1,
    ) -> None:  # fmt: skip
        self.optimizer = _check_optimizer(optimizer)
        if total_steps is not None:
            _check_int("total_steps", total_steps, 1)
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            _check_int("epochs", epochs, 1)
            _check_int("steps_per_epoch", steps_per_epoch, 1)
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy!r}")
        n = self.total_steps
        phase = lambda end, lr0, lr1, m0, m1: dict(  # noqa: E731
            end_step=end, start_lr=lr0, end_lr=lr1, start_momentum=m0, end_momentum=m1
        )
        if three_phase:
            self._schedule_phases = [
                phase(float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                phase(float(2 * pct_start * n) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                phase(n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._schedule_phases = [
                phase(float(pct_start * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                phase(n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for lr, group in zip(max_lrs, optimizer.param_groups, strict=True):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _start_momentum_cycle(self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self._anneal_func_type == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(f"Tried to step {step} times. The specified number of total steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, ph in enumerate(self._schedule_phases):
                end = ph["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self._anneal(group[ph["start_lr"]], group[ph["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self._anneal(group[ph["start_momentum"]], group[ph["end_momentum"]], pct)
                    break
                start = ph["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                if self.use_beta1:
                    group["betas"] = (momentum, *group["betas"][1:])
                else:
                    group["momentum"] = momentum
        return lrs


class CyclicLR(LRScheduler):
    """Same as torch.optim.lr_scheduler.CyclicLR: the rate cycles between ``base_lr`` and
    ``max_lr`` ("triangular", "triangular2", "exp_range" or a custom ``scale_fn``), momentum or
    beta1 cycling the other way."""

    def __init__(
        self, optimizer: Optimizer, base_lr: float | list[float], max_lr: float | list[float],
        step_size_up: int = 2000, step_size_down: int | None = None, mode: str = "triangular", gamma: float = 1.0,
        scale_fn=None, scale_mode: str = "cycle", cycle_momentum: bool = True, base_momentum: float = 0.8,
        max_momentum: float = 0.9, last_epoch: int = -1,
    ) -> None:  # fmt: skip
        self.optimizer = _check_optimizer(optimizer)
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups, strict=True):
                _set(group, "lr", lr)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        if not (up > 0 and down >= 0):
            raise ValueError(f"step_size_up must be positive and step_size_down non-negative, got {up}, {down}")
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"mode {mode!r} is invalid and scale_fn is None")
        self.mode = mode
        self.gamma = gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = _start_momentum_cycle(self, optimizer, base_momentum,
                                                                            max_momentum, last_epoch)  # fmt: skip
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode in ("triangular", "triangular2"):
            self.scale_mode = "cycle"
        elif self.mode == "exp_range":
            self.scale_mode = "iterations"

    def scale_fn(self, x: float) -> float:
        """Same as torch's CyclicLR.scale_fn: the amplitude factor at ``x`` (a cycle or an iteration count): the
        ``scale_fn`` given, else 1 (``triangular``), ``1 / 2**(x - 1)`` (``triangular2``) or ``gamma**x``
        (``exp_range``).
        """
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        if self.mode == "triangular":
            return 1.0
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x

    def get_lr(self) -> list:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        scale = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        at = cycle if self.scale_mode == "cycle" else self.last_epoch
        lrs = [
            base + (top - base) * scale * self.scale_fn(at)
            for base, top in zip(self.base_lrs, self.max_lrs, strict=True)
        ]
        if self.cycle_momentum:
            moms = [
                top - (top - base) * scale * self.scale_fn(at)
                for base, top in zip(self.base_momentums, self.max_momentums, strict=True)
            ]
            for group, m in zip(self.optimizer.param_groups, moms, strict=True):
                if self.use_beta1:
                    group["betas"] = (m, *group["betas"][1:])
                else:
                    group["momentum"] = m
        return lrs

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None if fn is None or isinstance(fn, types.FunctionType) else fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Same as torch's CyclicLR.load_state_dict: restores the state; a custom ``scale_fn`` object gets its saved
        attributes back (a plain function is not saved, as torch).
        """
        state = dict(state_dict)
        fn = state.pop("_scale_fn_custom", None)
        super().load_state_dict(state)
        if fn is not None and self._scale_fn_custom is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


class _LRScheduler(LRScheduler):
    """torch's older name of the scheduler base class (subclasses written for it, ``isinstance`` checks)."""
