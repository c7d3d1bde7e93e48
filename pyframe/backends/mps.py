"""torch.backends.mps: Apple's Metal backend is not built in."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """Same as torch.backends.mps.is_available: False."""
    return False


def is_built() -> bool:
    """Same as torch.backends.mps.is_built: False."""
    return False
