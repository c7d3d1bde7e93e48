"""``torch.version``: what this build is, for programs that print or branch on it (``torch.version.cuda`` is None:
pyframe computes on the CPU only)."""

from pyframe._version import __version__

__all__ = ["__version__", "cuda", "debug", "hip", "rocm", "xpu"]

cuda: str | None = None
hip: str | None = None
rocm: str | None = None
xpu: str | None = None
debug: bool = False
