"""Same as torch.signal: the window functions (``pyframe.signal.windows``)."""

from pyframe.signal import windows

__all__ = ["windows"]
