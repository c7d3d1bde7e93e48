"""torch.backends.mkldnn: oneDNN is not used; ``enabled`` may be set and read."""

from __future__ import annotations

__all__ = ["is_available", "enabled"]

enabled = True


def is_available() -> bool:
    """Same as torch.backends.mkldnn.is_available: False (pyframe's kernels are its own)."""
    return False
