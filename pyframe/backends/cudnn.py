"""torch.backends.cudnn: the flags programs set (``benchmark``, ``deterministic``...), read back unchanged; cuDNN is
not available in a CPU build, so they change nothing."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

__all__ = ["enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32", "is_available", "version",
           "is_acceptable", "flags"]  # fmt: skip

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """Same as torch.backends.cudnn.is_available: False (a CPU build)."""
    return False


def version() -> None:
    """Same as torch.backends.cudnn.version without cuDNN: None."""
    return None


def is_acceptable(tensor) -> bool:
    """Same as torch.backends.cudnn.is_acceptable: False, no tensor here is a cuDNN tensor."""
    return False


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10, deterministic: bool = False,
          allow_tf32: bool = True) -> Iterator[None]:  # fmt: skip
    """Same as torch.backends.cudnn.flags: the flags set for the block and restored after it."""
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    saved = {n: globals()[n] for n in names}
    globals().update(zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32), strict=True))
    try:
        yield
    finally:
        globals().update(saved)
