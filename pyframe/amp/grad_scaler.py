"""``GradScaler``: loss scaling for mixed-precision training, as torch.amp.GradScaler.

On the CPU (``GradScaler("cpu")``) the scaler is real: ``scale`` multiplies the loss by the scale, ``unscale_``
divides the gradients by it and records whether any is inf or NaN, ``step`` skips the optimizer's step when one
was, and ``update`` backs the scale off after such a step and grows it after ``growth_interval`` clean ones.
``GradScaler("cuda")`` (the default device, and ``torch.cuda.amp.GradScaler``) warns and disables itself, as
torch's does without a GPU: then ``scale`` returns its input, ``step`` calls ``optimizer.step()`` and ``update``
does nothing.
"""

from __future__ import annotations

import enum
import warnings
from collections.abc import Iterable
from typing import Any

from pyframe import _dtype, _grad_mode
from pyframe import ops as _ops
from pyframe.tensor import Tensor

__all__ = ["GradScaler", "OptState"]

_FLOAT32_MAX = 3.4028234663852886e38


class OptState(enum.Enum):
    """Where an optimizer is in the scaler's iteration: nothing done, gradients unscaled, or stepped."""

    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _fresh_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Same as torch.amp.GradScaler.

    Args:
        device: "cpu" for a working scaler; "cuda" (the default, as torch) disables it with a warning.
        init_scale: the scale before the first ``update`` (2**16).
        growth_factor: the factor the scale grows by after ``growth_interval`` steps without inf/NaN (> 1).
        backoff_factor: the factor the scale shrinks by after a step with inf/NaN gradients (< 1).
        growth_interval: clean steps between growths.
        enabled: False makes every method a pass-through.

    Raises:
        AssertionError: ``growth_factor <= 1`` or ``backoff_factor >= 1`` (torch's exception).
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:  # fmt: skip
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)  # fmt: skip
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale: Tensor | None = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker: Tensor | None = None
            self._per_optimizer_states: dict[int, dict] = {}

    def _opt_state(self, optimizer: Any) -> dict:
        return self._per_optimizer_states.setdefault(id(optimizer), _fresh_state())

    def _check_scale_growth_tracker(self, funcname: str) -> tuple[Tensor, Tensor]:
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init(self) -> None:
        if self._scale is None:
            self._scale = _ops.full((), self._init_scale, dtype=_dtype.float32)
            self._growth_tracker = _ops.full((), self._init_growth_tracker, dtype=_dtype.int32)

    def scale(self, outputs: Tensor | Iterable) -> Tensor | Iterable:
        """Same as torch's GradScaler.scale: ``outputs`` (a tensor, or nested lists/tuples of them) times the
        scale; unchanged when the scaler is disabled.

        Raises:
            ValueError: ``outputs`` holds something that is not a tensor.
        """
        if not self._enabled:
            return outputs
        self._lazy_init()
        scale = self._scale

        def apply(val):
            if isinstance(val, Tensor):
                return val * scale  # a 0-d float32 tensor: the result keeps val's dtype
            if isinstance(val, (list, tuple)):
                out = [apply(v) for v in val]
                return type(val)(out)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply(outputs)

    def _unscale_grads_(self, optimizer: Any, inv_scale: Tensor, found_inf: Tensor, allow_fp16: bool) -> Tensor:
        with _grad_mode.no_grad():
            for group in optimizer.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if not allow_fp16 and p.grad.dtype is _dtype.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    g = p.grad
                    if not bool(_ops.all(_ops.isfinite(g))):
                        found_inf.fill_(1.0)
                    g.mul_(inv_scale)
        return found_inf

    def unscale_(self, optimizer: Any) -> None:
        """Same as torch's GradScaler.unscale_: divides ``optimizer``'s gradients by the scale in place (call it
        before clipping them) and records whether any was inf or NaN.

        Raises:
            RuntimeError: ``unscale_`` was already called for this optimizer since the last ``update``, or
                after its ``step``.
        """
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._opt_state(optimizer)
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = _ops.reciprocal(self._scale.to(_dtype.float64)).to(_dtype.float32)
        found_inf = _ops.full((), 0.0, dtype=_dtype.float32)
        state["found_inf_per_device"]["cpu"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Same as torch's GradScaler.step: unscales the gradients (unless ``unscale_`` did) and calls
        ``optimizer.step(*args, **kwargs)`` only when none was inf or NaN; returns what it returned (None when
        skipped). Disabled, it is ``optimizer.step(*args, **kwargs)``.

        Raises:
            RuntimeError: a ``closure`` keyword (not supported while scaling, as torch), or a second ``step``
                before ``update``.
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._opt_state(optimizer)
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if not state["found_inf_per_device"]:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(float(v.item()) for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Same as torch's GradScaler.update: after an iteration's steps, multiplies the scale by
        ``backoff_factor`` if any optimizer saw inf/NaN gradients, else counts a clean step and multiplies it by
        ``growth_factor`` every ``growth_interval`` of them; ``new_scale`` sets the scale outright instead.

        Raises:
            AssertionError: ``new_scale`` is a tensor that is not a single element without grad, or no
                optimizer was stepped since the last update (torch's exception).
        """
        if not self._enabled:
            return
        scale, tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor "
                          "with requires_grad=False.")  # fmt: skip
                if not isinstance(new_scale, Tensor) or new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                scale.copy_(new_scale.reshape(()))
        else:
            found = [f for st in self._per_optimizer_states.values() for f in st["found_inf_per_device"].values()]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            if sum(float(f.item()) for f in found):
                scale.mul_(self._backoff_factor)
                tracker.fill_(0)
            else:
                grown = int(tracker.item()) + 1
                if grown == self._growth_interval:
                    if float(scale.item()) * self._growth_factor <= _FLOAT32_MAX:  # torch never grows it to inf
                        scale.mul_(self._growth_factor)
                    grown = 0
                tracker.fill_(grown)
        self._per_optimizer_states = {}

    def get_scale(self) -> float:
        """The current scale (``init_scale`` before the first ``scale``); 1.0 when disabled."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else float(self._scale.item())

    def get_growth_factor(self) -> float:
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Sets the factor the scale grows by."""
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Sets the factor the scale shrinks by."""
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        """The number of clean steps between growths."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Sets the number of clean steps between growths."""
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())

    def is_enabled(self) -> bool:
        """Whether the scaler scales (False for a disabled or CUDA scaler here)."""
        return self._enabled

    def state_dict(self) -> dict[str, Any]:
        """Same as torch's GradScaler.state_dict: ``scale``, ``growth_factor``, ``backoff_factor``,
        ``growth_interval`` and ``_growth_tracker``; empty when disabled."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}  # fmt: skip

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Same as torch's GradScaler.load_state_dict.

        Raises:
            RuntimeError: ``state_dict`` is empty (saved from a disabled scaler).
        """
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")  # fmt: skip
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])
