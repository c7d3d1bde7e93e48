"""Same as torch.cpu: the CPU as a device module (always available, one device, nothing to synchronize) and
``pyframe.cpu.amp``, torch's older path to CPU autocast and gradient scaling."""

from __future__ import annotations

from pyframe.cpu import amp

__all__ = ["is_available", "is_initialized", "synchronize", "current_device", "set_device", "device_count", "amp"]


def is_available() -> bool:
    """Same as torch.cpu.is_available: True."""
    return True


def is_initialized() -> bool:
    """Same as torch.cpu.is_initialized: True."""
    return True


def synchronize(device=None) -> None:
    """Same as torch.cpu.synchronize: nothing to wait for, every op has finished when it returns."""


def current_device() -> str:
    """Same as torch.cpu.current_device: ``"cpu"``."""
    return "cpu"


def set_device(device) -> None:
    """Same as torch.cpu.set_device: does nothing (there is one CPU device)."""


def device_count() -> int:
    """Same as torch.cpu.device_count: 1."""
    return 1
