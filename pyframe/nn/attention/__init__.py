"""Same as torch.nn.attention: ``SDPBackend`` and the ``sdpa_kernel`` context manager that picks the
implementations ``scaled_dot_product_attention`` may use, and ``bias`` (causal masks as tensors).

**pyframe**: ``scaled_dot_product_attention`` has one CPU implementation (its fused C kernel, or the composition
of ops), whichever backends are allowed: ``sdpa_kernel`` checks its argument and records the choice
(``_allowed()``), and the results are the same numbers under every choice."""

from __future__ import annotations

import contextlib
import enum

from pyframe import _submodules

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    """Same as torch.nn.attention.SDPBackend: the implementations of scaled dot product attention."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


_ALL = (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION,
        SDPBackend.OVERRIDEABLE)  # fmt: skip
_current: list = [_ALL]


def _allowed() -> tuple:
    """The backends the innermost open ``sdpa_kernel`` allows (all of them outside one)."""
    return _current[-1]


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Same as torch.nn.attention.sdpa_kernel: within the context, scaled dot product attention may use only
    ``backends`` (one ``SDPBackend`` or a list of them); with ``set_priority``, in that order.

    Example::

        >>> with sdpa_kernel(SDPBackend.MATH):
        ...     out = F.scaled_dot_product_attention(q, k, v)
    """
    items = list(backends) if isinstance(backends, (list, tuple, set)) else [backends]
    for b in items:
        if not isinstance(b, SDPBackend):
            raise TypeError(f"sdpa_kernel: expected SDPBackend members, got {type(b).__name__} ({b!r})")
    if not items or SDPBackend.ERROR in items:
        raise ValueError("sdpa_kernel: give at least one backend other than SDPBackend.ERROR")
    _current.append(tuple(items))
    try:
        yield
    finally:
        _current.pop()


# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
