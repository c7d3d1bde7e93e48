"""Adam and AdamW (decoupled weight decay), with amsgrad and maximize."""

from __future__ import annotations

from pyframe import _dtype
from pyframe._backend import NULL, check, ffi, lib
from pyframe.ops.creation import zeros, zeros_like
from pyframe.optim.optimizer import Optimizer
from pyframe.tensor import Tensor

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Same as torch.optim.Adam (``decoupled_weight_decay=True`` is AdamW). Each step is one
    C call per group and dtype (``pf_optim_steps``: a fused pass per parameter, step counts
    included); ``foreach`` and ``fused`` are accepted and recorded, with no effect;
    ``capturable`` and ``differentiable`` are not supported. Betas may be ints or floats
    (torch insists on floats or tensors)."""

    _param_shaped_state = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq")

    def __init__(
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        amsgrad: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        if not lr >= 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not eps >= 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not weight_decay >= 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if capturable or differentiable:
            raise ValueError(f"pyframe's {type(self).__name__} does not support capturable or differentiable")
        defaults = {
            "lr": lr,
            "betas": (float(betas[0]), float(betas[1])),
            "eps": eps,
            "weight_decay": weight_decay,
            "amsgrad": amsgrad,
            "maximize": maximize,
            "foreach": foreach,
            "capturable": capturable,
            "differentiable": differentiable,
            "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        super().__init__(params, defaults)

    def _update(self, group: dict) -> None:
        lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
        beta1, beta2 = (float(b) for b in group["betas"])
        amsgrad, maximize = int(bool(group["amsgrad"])), int(bool(group["maximize"]))
        decoupled = int(bool(group["decoupled_weight_decay"]))
        # gather every parameter's buffers (checked, contiguous), then one C call per dtype
        batches: dict[int, list] = {}
        touched = []
        for p in group["params"]:
            if p.grad is None:
                continue
            g = self._grad_of(p)
            state = self.state[p]
            if not state:
                state["step"] = zeros((), dtype=_dtype.float32)
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
            if amsgrad and "max_exp_avg_sq" not in state:
                state["max_exp_avg_sq"] = zeros_like(p)
            exp_avg = self._buffer(state, "exp_avg", p)
            exp_avg_sq = self._buffer(state, "exp_avg_sq", p)
            max_sq = self._buffer(state, "max_exp_avg_sq", p) if amsgrad else None
            step = _step_tensor(state)
            t = self._target(p)
            b = batches.get(t.dtype.code)
            if b is None:
                b = batches[t.dtype.code] = ([], [], [], [], [], [], [])
            b[0].append(t._ptr)
            b[1].append(g._ptr)
            b[2].append(exp_avg._ptr)
            b[3].append(exp_avg_sq._ptr)
            b[4].append(max_sq._ptr if max_sq is not None else NULL)
            b[5].append(t._numel)
            b[6].append(step._ptr)
            touched.append((p, t, exp_avg, exp_avg_sq, max_sq, step))
        # pf_optim_step's Adam scalars; the last, the step count, is each parameter's own
        hp = _new("double[9]", [lr, beta1, beta2, eps, weight_decay, amsgrad, decoupled, maximize, 0])
        for code, (ps, gs, m1, m2, mx, ns, steps) in batches.items():
            n = len(ps)
            check(
                lib.pf_optim_steps(
                    lib.PF_OPTIM_ADAM, code, n, _new("void *[]", ps), _new("void *[]", gs), _new("void *[]", m1),
                    _new("void *[]", m2), _new("void *[]", mx) if amsgrad else NULL, _new("int64_t[]", ns),
                    _new("float *[]", [_cast("float *", s) for s in steps]), hp, 9,
                )
            )  # fmt: skip
        for p, t, exp_avg, exp_avg_sq, max_sq, step in touched:  # in-place writes: versions move
            exp_avg._bump()
            exp_avg_sq._bump()
            step._bump()
            if max_sq is not None:
                max_sq._bump()
            self._written(p, t)


_new, _cast = ffi.new, ffi.cast


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
        self,
        params,
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        *,
        maximize: bool = False,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(
            params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
            capturable=capturable, differentiable=differentiable, fused=fused, decoupled_weight_decay=True,
        )  # fmt: skip

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
