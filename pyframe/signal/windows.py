"""Same as torch.signal.windows: each window from ``linspace`` and elementwise ops in the requested dtype,
in torch's order, so the numbers are torch's."""

from __future__ import annotations

import math
from collections.abc import Iterable

from pyframe import _dtype, ops
from pyframe._device import strided
from pyframe.tensor import Tensor

__all__ = [
    "bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming", "hamming",
    "hann", "kaiser", "nuttall",
]  # fmt: skip


def _checks(name: str, M: int, dtype, layout) -> None:
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not None and layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_dtype.float32, _dtype.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")


def _start(name, M, dtype, layout, requires_grad, one=False):
    """The checks, and the window of a length that needs no formula (0, or 1 when ``one``), else None."""
    _checks(name, M, dtype, layout)
    if M == 0:
        return ops.empty((0,), dtype=dtype, requires_grad=requires_grad)
    if one and M == 1:
        return ops.ones((1,), dtype=dtype, requires_grad=requires_grad)
    return None


def _dt(dtype):
    return _dtype.get_default_dtype() if dtype is None else dtype


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True, dtype=None,
                layout=strided, device=None, requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.signal.windows.exponential: ``exp(-|n - center| / tau)``."""
    dtype = _dt(dtype)
    _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return ops.empty((0,), dtype=dtype, requires_grad=requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = ops.linspace(-center * constant, (-center + (M - 1)) * constant, M, dtype=dtype, requires_grad=requires_grad)
    return ops.exp(-ops.abs(k))


def cosine(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
           requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.signal.windows.cosine: ``sin(pi (n + 1/2) / M)``."""
    dtype = _dt(dtype)
    empty = _start("cosine", M, dtype, layout, requires_grad)
    if empty is not None:
        return empty
    start = 0.5
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = ops.linspace(start * constant, (start + (M - 1)) * constant, M, dtype=dtype, requires_grad=requires_grad)
    return ops.sin(k)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.signal.windows.gaussian: ``exp(-(n - center)^2 / (2 std^2))``."""
    dtype = _dt(dtype)
    _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return ops.empty((0,), dtype=dtype, requires_grad=requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = ops.linspace(start * constant, (start + (M - 1)) * constant, M, dtype=dtype, requires_grad=requires_grad)
    return ops.exp(-(k**2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=strided, device=None,
           requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.signal.windows.kaiser: ``i0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / i0(beta)``."""
    dtype = _dt(dtype)
    _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M == 0:
        return ops.empty((0,), dtype=dtype, requires_grad=requires_grad)
    if M == 1:
        return ops.ones((1,), dtype=dtype, requires_grad=requires_grad)
    b = ops.tensor(beta, dtype=dtype)
    start = -b
    constant = 2.0 * b / (M if not sym else M - 1)
    end = ops.minimum(b, start + (M - 1) * constant)
    k = ops.linspace(start.item(), end.item(), M, dtype=dtype, requires_grad=requires_grad)
    return ops.i0(ops.sqrt(b * b - ops.pow(k, 2))) / ops.i0(b)


def general_cosine(M, *, a: Iterable, sym: bool = True, dtype=None, layout=strided, device=None,
                   requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.signal.windows.general_cosine: ``sum_i (-1)^i a_i cos(2 pi i n / (M - 1))``."""
    dtype = _dt(dtype)
    empty = _start("general_cosine", M, dtype, layout, requires_grad, one=True)
    if empty is not None:
        return empty
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = ops.linspace(0, (M - 1) * constant, M, dtype=dtype, requires_grad=requires_grad)
    a_i = ops.tensor([(-1) ** i * w for i, w in enumerate(a)], dtype=dtype, requires_grad=requires_grad)
    i = ops.arange(a_i.shape[0], dtype=dtype)
    return (a_i.unsqueeze(-1) * ops.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=strided, device=None,
                    requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.signal.windows.general_hamming: ``general_cosine`` with ``a = [alpha, 1 - alpha]``."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          requires_grad=requires_grad)  # fmt: skip


def hamming(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
            requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.signal.windows.hamming: ``general_hamming`` with alpha 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
         requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.signal.windows.hann: ``general_hamming`` with alpha 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.signal.windows.blackman: ``general_cosine`` with ``a = [0.42, 0.5, 0.08]``."""
    dtype = _dt(dtype)
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
             requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.signal.windows.bartlett: the triangular window ``1 - |2n / (M - 1) - 1|``."""
    dtype = _dt(dtype)
    empty = _start("bartlett", M, dtype, layout, requires_grad, one=True)
    if empty is not None:
        return empty
    start = -1
    constant = 2 / (M if not sym else M - 1)
    k = ops.linspace(start, start + (M - 1) * constant, M, dtype=dtype, requires_grad=requires_grad)
    return 1 - ops.abs(k)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=strided, device=None,
            requires_grad: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.signal.windows.nuttall: ``general_cosine`` with Nuttall's four coefficients."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          requires_grad=requires_grad)  # fmt: skip
