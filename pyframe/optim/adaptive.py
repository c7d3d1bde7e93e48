"""Adaptive optimizers: Adadelta, Adagrad, RMSprop, Adamax, NAdam, RAdam. Each step is one C call
over a group's parameters of one dtype and step (``pf_optim_steps``); the step-dependent numbers are
computed here in double, where torch computes them in Python."""

from __future__ import annotations

import math
from typing import Any

from pyframe import _dtype
from pyframe.ops.creation import full, zeros, zeros_like
from pyframe.ops.sparse import sparse_coo_tensor
from pyframe.optim.optimizer import _FusedOptimizer, check_adam_args, check_number
from pyframe.tensor import Tensor

__all__ = ["Adadelta", "Adagrad", "RMSprop", "Adamax", "NAdam", "RAdam"]


def _with_values(g: Tensor, values: Tensor) -> Tensor:
    """A sparse tensor of ``g``'s (coalesced) indices with other values (torch's ``_make_sparse``)."""
    return sparse_coo_tensor(g._indices(), values, g._shape, is_coalesced=True)


class _Adaptive(_FusedOptimizer):
    """The adaptive kinds of ``pf_optim_step``: a parameter's state starts as its step count and zeroed
    ``_param_shaped_state``, the kernel's buffers; the numbers a step needs are computed per
    parameter (``_numbers``), from its step count after the increment."""

    def _init_state(self, p: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        state["step"] = zeros((), dtype=_dtype.float32)
        for name in self._param_shaped_state:
            state[name] = zeros_like(p)

    def _buffers(self, group: dict[str, Any]) -> tuple[str | None, ...]:
        return self._param_shaped_state

    def _per_param(self, group: dict[str, Any], state: dict[str, Any]) -> tuple:
        return tuple(self._numbers(group, state, self._next_step(state)))

    def _numbers(self, group: dict[str, Any], state: dict[str, Any], step: float) -> list[float]:
        raise NotImplementedError


class Adadelta(_Adaptive):
    """Same as torch.optim.Adadelta; ``foreach`` is accepted and has no effect; ``capturable`` and
    ``differentiable`` are not supported."""

    _kind = "adadelta"
    _param_shaped_state = ("square_avg", "acc_delta")

    def __init__(
        self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
        foreach: bool | None = None, *, capturable: bool = False, maximize: bool = False,
        differentiable: bool = False,
    ) -> None:  # fmt: skip
        check_number("learning rate", lr)
        check_number("rho value", rho, 0.0, 1.0)
        check_number("epsilon value", eps)
        check_number("weight_decay value", weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize, capturable=capturable,
                        foreach=foreach, differentiable=differentiable)  # fmt: skip
        super().__init__(params, defaults)

    def _numbers(self, group, state, step):
        return [float(group["lr"]), float(group["rho"]), float(group["eps"]), float(group["weight_decay"]),
                float(bool(group["maximize"]))]  # fmt: skip


class Adagrad(_Adaptive):
    """Same as torch.optim.Adagrad (state made at construction, as torch); a sparse gradient steps only
    its rows, as torch's (``weight_decay`` refuses it); ``foreach``/``fused`` are accepted and have no
    effect."""

    _kind = "adagrad"
    _sparse_grads = True
    _param_shaped_state = ("sum",)

    def __init__(
        self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
        initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
        maximize: bool = False, differentiable: bool = False, fused: bool | None = None,
    ) -> None:  # fmt: skip
        check_number("learning rate", lr)
        check_number("lr_decay value", lr_decay)
        check_number("weight_decay value", weight_decay)
        check_number("initial_accumulator_value value", initial_accumulator_value)
        check_number("epsilon value", eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, fused=fused)  # fmt: skip
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group, self.state[p])

    def _init_state(self, p, group, state):
        state["step"] = zeros((), dtype=_dtype.float32)
        state["sum"] = full(p._shape, float(group["initial_accumulator_value"]), dtype=p.dtype)

    def _numbers(self, group, state, step):
        clr = float(group["lr"]) / (1 + (step - 1) * float(group["lr_decay"]))
        return [clr, float(group["eps"]), float(group["weight_decay"]), float(bool(group["maximize"]))]

    def _sparse_step(self, p: Tensor, g: Tensor, group: dict[str, Any], state: dict[str, Any]) -> None:
        # torch's sparse Adagrad: the sum grows by g^2 at the gradient's (coalesced) entries, which alone step
        if group["fused"]:
            raise RuntimeError("`fused` does not support sparse grad or complex param")
        step = self._next_step(state)
        if group["maximize"]:
            g = -g
        if float(group["weight_decay"]) != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        clr = float(group["lr"]) / (1 + (step - 1) * float(group["lr_decay"]))
        g = g.coalesce()
        total = self._buffer(state, "sum", p)
        total.add_(_with_values(g, g._values() * g._values()))
        std = total.sparse_mask(g)._values().sqrt().add_(float(group["eps"]))
        p.add_(_with_values(g, g._values() / std), alpha=-clr)


class RMSprop(_Adaptive):
    """Same as torch.optim.RMSprop (``centered``, ``momentum``); ``foreach`` is accepted and has no
    effect; ``capturable`` and ``differentiable`` are not supported."""

    _kind = "rmsprop"
    _param_shaped_state = ("square_avg", "momentum_buffer", "grad_avg")

    def __init__(
        self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
        momentum: float = 0, centered: bool = False, capturable: bool = False, foreach: bool | None = None,
        maximize: bool = False, differentiable: bool = False,
    ) -> None:  # fmt: skip
        check_number("learning rate", lr)
        check_number("epsilon value", eps)
        check_number("momentum value", momentum)
        check_number("weight_decay value", weight_decay)
        check_number("alpha value", alpha)
        defaults = dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                        weight_decay=weight_decay, capturable=capturable, foreach=foreach, maximize=maximize,
                        differentiable=differentiable)  # fmt: skip
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        state["step"] = zeros((), dtype=_dtype.float32)
        state["square_avg"] = zeros_like(p)
        if float(group["momentum"]) > 0:
            state["momentum_buffer"] = zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = zeros_like(p)

    def _buffers(self, group):
        return (
            "square_avg",
            "grad_avg" if group["centered"] else None,
            "momentum_buffer" if float(group["momentum"]) > 0 else None,
        )

    def _numbers(self, group, state, step):
        return [float(group["lr"]), float(group["alpha"]), float(group["eps"]), float(group["weight_decay"]),
                float(group["momentum"]), float(bool(group["centered"])), float(bool(group["maximize"]))]  # fmt: skip


class Adamax(_Adaptive):
    """Same as torch.optim.Adamax; ``foreach`` is accepted and has no effect; ``capturable`` and
    ``differentiable`` are not supported."""

    _kind = "adamax"
    _param_shaped_state = ("exp_avg", "exp_inf")

    def __init__(
        self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
        weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False,
        differentiable: bool = False, capturable: bool = False,
    ) -> None:  # fmt: skip
        betas = check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach, maximize=maximize,
                        differentiable=differentiable, capturable=capturable)  # fmt: skip
        super().__init__(params, defaults)

    def _numbers(self, group, state, step):
        beta1, beta2 = (float(b) for b in group["betas"])
        clr = float(group["lr"]) / (1 - beta1**step)
        return [clr, beta1, beta2, float(group["eps"]), float(group["weight_decay"]), float(bool(group["maximize"]))]


class NAdam(_Adaptive):
    """Same as torch.optim.NAdam (``momentum_decay``, ``decoupled_weight_decay``); ``mu_product`` is a
    float32 0-d tensor in the state, as torch's; ``foreach`` is accepted and has no effect."""

    _kind = "nadam"
    _param_shaped_state = ("exp_avg", "exp_avg_sq")

    def __init__(
        self, params, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
        weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
        foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
        differentiable: bool = False,
    ) -> None:  # fmt: skip
        betas = check_adam_args(lr, betas, eps, weight_decay)
        check_number("momentum_decay value", momentum_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable)  # fmt: skip
        super().__init__(params, defaults)

    def _init_state(self, p, group, state):
        super()._init_state(p, group, state)
        state["mu_product"] = full((), 1.0, dtype=_dtype.float32)

    def _numbers(self, group, state, step):
        beta1, beta2 = (float(b) for b in group["betas"])
        lr, wd, md = float(group["lr"]), float(group["weight_decay"]), float(group["momentum_decay"])
        mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * md)))
        mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * md)))
        mp = state.get("mu_product")
        if not (isinstance(mp, Tensor) and mp._numel == 1):
            mp = state["mu_product"] = full((), 1.0 if mp is None else float(mp), dtype=_dtype.float32)
        mp.mul_(mu)  # a float32 product, as torch's mu_product *= mu
        mu_product = mp.item()
        mu_product_next = mu_product * mu_next
        return [beta1, beta2, float(group["eps"]), wd, float(bool(group["decoupled_weight_decay"])), 1 - lr * wd,
                1 - beta2**step, -lr * (1.0 - mu) / (1.0 - mu_product), (-lr * mu_next) / (1.0 - mu_product_next),
                float(bool(group["maximize"]))]  # fmt: skip


class RAdam(_Adaptive):
    """Same as torch.optim.RAdam (``decoupled_weight_decay``); ``foreach`` is accepted and has no
    effect; ``capturable`` and ``differentiable`` are not supported."""

    _kind = "radam"
    _param_shaped_state = ("exp_avg", "exp_avg_sq")

    def __init__(
        self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
        weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
        maximize: bool = False, capturable: bool = False, differentiable: bool = False,
    ) -> None:  # fmt: skip
        betas = check_adam_args(lr, betas, eps, weight_decay)
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, maximize=maximize, foreach=foreach,
                        capturable=capturable, decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)  # fmt: skip
        super().__init__(params, defaults)

    def _numbers(self, group, state, step):
        beta1, beta2 = (float(b) for b in group["betas"])
        lr, wd = float(group["lr"]), float(group["weight_decay"])
        bc1, bc2 = 1 - beta1**step, 1 - beta2**step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2**step) / bc2
        rectified = rho_t > 5.0
        rect = (
            math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            if rectified
            else 1.0
        )
        return [beta1, beta2, float(group["eps"]), wd, float(bool(group["decoupled_weight_decay"])), 1 - lr * wd, bc1,
                lr, float(rectified), bc2**0.5, rect, float(bool(group["maximize"]))]  # fmt: skip
