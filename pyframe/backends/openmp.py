"""torch.backends.openmp: whether the kernels are OpenMP-parallel (the C core's build says)."""

from __future__ import annotations

from pyframe._backend import openmp_enabled

__all__ = ["is_available"]


def is_available() -> bool:
    """Same as torch.backends.openmp.is_available: True when the C core was built with OpenMP."""
    return openmp_enabled()
