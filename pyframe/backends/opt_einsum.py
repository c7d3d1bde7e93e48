"""torch.backends.opt_einsum: the flags torch reads for einsum's contraction order; ``einsum`` here contracts in
its own order, so they are recorded and read back."""

from __future__ import annotations

__all__ = ["is_available", "enabled", "strategy"]

enabled = True
strategy = "auto"


def is_available() -> bool:
    """Same as torch.backends.opt_einsum.is_available: False (the opt_einsum package is not used)."""
    return False
