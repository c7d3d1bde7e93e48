"""Same as torch.accelerator on a CPU-only machine: no accelerator is available."""

from __future__ import annotations

__all__ = ["is_available", "current_accelerator", "device_count", "synchronize"]


def is_available() -> bool:
    """Same as torch.accelerator.is_available without an accelerator: False (pyframe runs on the CPU)."""
    return False


def current_accelerator(check_available: bool = False):
    """None: there is no accelerator (torch returns None too when none is present)."""
    return None


def device_count() -> int:
    """Same as torch.accelerator.device_count without an accelerator: 0."""
    return 0


def synchronize(device=None) -> None:
    """Nothing to wait for."""
