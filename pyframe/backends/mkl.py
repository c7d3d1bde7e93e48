"""torch.backends.mkl: Intel MKL is not used (pyframe's GEMM and FFT are its own C code)."""

from __future__ import annotations

__all__ = ["is_available"]


def is_available() -> bool:
    """Same as torch.backends.mkl.is_available: False."""
    return False
