"""Same as torch.cuda.amp (imported as ``pyframe.cuda.amp``) on a machine without a GPU: ``autocast`` and
``GradScaler`` warn that CUDA is not available and disable themselves, as torch's do; ``custom_fwd`` and
``custom_bwd`` are ``pyframe.amp``'s for the "cuda" device type."""

from __future__ import annotations

import functools
import warnings

from pyframe import _dtype
from pyframe.amp import autocast_mode, grad_scaler

__all__ = ["amp_definitely_not_available", "autocast", "custom_bwd", "custom_fwd", "GradScaler"]


def amp_definitely_not_available() -> bool:
    """Same as torch.cuda.amp.amp_definitely_not_available: True, there is no GPU."""
    return True


class autocast(autocast_mode.autocast):  # noqa: N801 - torch's name
    """Same as torch.cuda.amp.autocast without a GPU: warns and leaves autocast off."""

    def __init__(self, enabled: bool = True, dtype: _dtype.dtype = _dtype.float16, cache_enabled: bool = True):
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use `torch.amp.autocast('cuda', "
                      "args...)` instead.", FutureWarning, stacklevel=2)  # fmt: skip
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(grad_scaler.GradScaler):
    """Same as torch.cuda.amp.GradScaler without a GPU: warns and is disabled (``scale`` returns its input,
    ``step`` calls ``optimizer.step()``)."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:  # fmt: skip
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use `torch.amp.GradScaler('cuda', "
                      "args...)` instead.", FutureWarning, stacklevel=2)  # fmt: skip
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """Same as torch.cuda.amp.custom_fwd: ``pyframe.amp.custom_fwd`` with ``device_type="cuda"``."""
    return functools.partial(autocast_mode.custom_fwd, device_type="cuda", cast_inputs=cast_inputs)(fwd)


def custom_bwd(bwd=None):
    """Same as torch.cuda.amp.custom_bwd: ``pyframe.amp.custom_bwd`` with ``device_type="cuda"``."""
    return functools.partial(autocast_mode.custom_bwd, device_type="cuda")(bwd)
