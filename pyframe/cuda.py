"""Same as torch.cuda on a machine without CUDA: queries answer "none", seeding is harmless, and
anything that needs a GPU raises pyframe's one device error ("pyframe runs on the CPU only")."""

from __future__ import annotations

import sys

from pyframe._device import device
from pyframe.amp import cuda as amp

__all__ = [
    "is_available", "device_count", "is_initialized", "manual_seed", "manual_seed_all", "seed", "seed_all",
    "synchronize", "empty_cache", "current_device", "get_device_name", "set_device", "memory_allocated",
    "max_memory_allocated", "reset_peak_memory_stats", "amp", "is_bf16_supported",
]  # fmt: skip

# torch.cuda.amp is a module of its own in torch: importable as pyframe.cuda.amp too
sys.modules[__name__ + ".amp"] = amp


def is_available() -> bool:
    """False: pyframe has no CUDA backend."""
    return False


def device_count() -> int:
    """Same as torch.cuda.device_count on a machine without a GPU: 0."""
    return 0


def is_initialized() -> bool:
    """Same as torch.cuda.is_initialized without a GPU: False."""
    return False


def manual_seed(seed: int) -> None:
    """Harmless without a GPU, as torch's (the CPU generator is seeded by pyframe.manual_seed)."""


def manual_seed_all(seed: int) -> None:
    """Harmless without a GPU, as torch's."""


def seed() -> None:
    """Harmless without a GPU."""


def seed_all() -> None:
    """Harmless without a GPU."""


def synchronize(device=None) -> None:
    """Nothing to wait for: every pyframe op has finished when it returns."""


def empty_cache() -> None:
    """Harmless: there is no GPU cache (pyframe.empty_cache, if present, frees the CPU one)."""


def memory_allocated(device=None) -> int:
    """0: pyframe allocates no GPU memory."""
    return 0


def max_memory_allocated(device=None) -> int:
    """0: pyframe allocates no GPU memory."""
    return 0


def reset_peak_memory_stats(device=None) -> None:
    """Harmless without a GPU."""


def _no_gpu(*args, **kwargs):
    """Raises pyframe's device error: there is no GPU (``current_device``, ``get_device_name``, ``set_device``)."""
    device("cuda")  # raises the one device error


current_device = get_device_name = set_device = _no_gpu


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Same as torch.cuda.is_bf16_supported without a GPU: False."""
    return False
