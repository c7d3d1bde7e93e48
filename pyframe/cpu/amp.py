"""Same as torch.cpu.amp: the deprecated CPU spellings of ``pyframe.amp.autocast("cpu")`` and
``pyframe.amp.GradScaler("cpu")``, with torch's FutureWarning."""

from __future__ import annotations

import warnings

from pyframe import _dtype
from pyframe.amp import autocast_mode, grad_scaler

__all__ = ["autocast", "GradScaler"]


class autocast(autocast_mode.autocast):  # noqa: N801 - torch's name
    """Same as torch.cpu.amp.autocast: ``pyframe.amp.autocast("cpu", ...)`` (bfloat16 by default)."""

    def __init__(self, enabled: bool = True, dtype: _dtype.dtype = _dtype.bfloat16, cache_enabled: bool = True):
        warnings.warn("`torch.cpu.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cpu', "
                      "args...)` instead.", FutureWarning, stacklevel=2)  # fmt: skip
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    """Same as torch.cpu.amp.GradScaler: ``pyframe.amp.GradScaler("cpu", ...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:  # fmt: skip
        warnings.warn("`torch.cpu.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cpu', "
                      "args...)` instead.", FutureWarning, stacklevel=2)  # fmt: skip
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
