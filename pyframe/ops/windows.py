"""torch's window functions (``hann_window``, ``hamming_window``, ``blackman_window``, ``bartlett_window``,
``kaiser_window``), as audio and signal programs build them for ``stft`` framing and filters.

Each is torch's formula over ``n = 0 .. N-1``, computed by the core's elementwise ops in the requested dtype. A
periodic window (the default, for spectral analysis) is the symmetric window of ``window_length + 1`` points
without its last point; ``periodic=False`` gives the symmetric one (for filter design)."""

from __future__ import annotations

import math

from pyframe import _dtype
from pyframe.ops import creation, elementwise, special
from pyframe.tensor import Tensor

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


def _positions(name: str, window_length: int, periodic: bool, dtype, requires_grad: bool):
    """(n, N - 1) for a window's formula, or a finished tensor for the lengths 0 and 1."""
    if not isinstance(window_length, int) or isinstance(window_length, bool) or window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length!r}")
    dt = _dtype.get_default_dtype() if dtype is None else _dtype.as_dtype(dtype)
    if not dt.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dt.name}")
    if window_length <= 1:
        t = creation.ones((window_length,), dtype=dt)
        return t.requires_grad_(requires_grad), None
    last = window_length if periodic else window_length - 1  # N - 1 of the symmetric window computed
    return creation.arange(window_length, dtype=dt), last


def _cosines(name, window_length, periodic, dtype, requires_grad, coefficients) -> Tensor:
    """sum_k (-1)^k a_k cos(2 pi k n / (N - 1)): the Hann, Hamming and Blackman family."""
    n, last = _positions(name, window_length, periodic, dtype, requires_grad)
    if last is None:
        return n
    out = creation.full_like(n, coefficients[0])
    for k, a in enumerate(coefficients[1:], start=1):
        term = elementwise.mul(elementwise.cos(elementwise.mul(n, 2 * math.pi * k / last)), a)
        out = elementwise.sub(out, term) if k % 2 else elementwise.add(out, term)
    return out.requires_grad_(requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.hann_window: ``0.5 - 0.5 cos(2 pi n / (N - 1))``."""
    return _cosines("hann_window", window_length, periodic, dtype, requires_grad, (0.5, 0.5))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.hamming_window: ``alpha - beta cos(2 pi n / (N - 1))``."""
    return _cosines("hamming_window", window_length, periodic, dtype, requires_grad, (alpha, beta))


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.blackman_window: ``0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))``."""
    return _cosines("blackman_window", window_length, periodic, dtype, requires_grad, (0.42, 0.5, 0.08))


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, layout=None, device=None,
                    requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.bartlett_window: the triangle ``1 - |2n / (N - 1) - 1|``."""
    n, last = _positions("bartlett_window", window_length, periodic, dtype, requires_grad)
    if last is None:
        return n
    tri = elementwise.sub(1.0, elementwise.abs(elementwise.sub(elementwise.mul(n, 2.0 / last), 1.0)))
    return tri.requires_grad_(requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None, layout=None,
                  device=None, requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.kaiser_window: ``I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)``."""
    n, last = _positions("kaiser_window", window_length, periodic, dtype, requires_grad)
    if last is None:
        return n
    r = elementwise.sub(elementwise.mul(n, 2.0 / last), 1.0)
    arg = elementwise.mul(elementwise.sqrt(elementwise.clamp(elementwise.sub(1.0, elementwise.mul(r, r)), min=0.0)),
                          beta)  # fmt: skip
    out = elementwise.div(special.i0(arg), special.i0(creation.full_like(n[:1], beta)))
    return out.requires_grad_(requires_grad)
