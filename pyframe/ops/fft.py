"""torch.fft's transforms whose input and output are both real (``pyframe.fft`` has them), computed in
``core_c/src/fft.c``.

pyframe has no complex dtypes, so of torch.fft it has what maps real to real: ``irfft``/``irfft2``/``irfftn``
and ``hfft``/``hfft2``/``hfftn`` of a real input (torch takes it as a complex tensor with zero imaginary part),
``fftshift``/``ifftshift`` and ``fftfreq``/``rfftfreq``. The transforms are differentiable (the adjoint
transforms in backward); ``fft``, ``rfft``, ``ifft`` and the other complex-valued ones are not there.
"""

from __future__ import annotations

import math

from pyframe import _dtype, _grad_mode
from pyframe._backend import NULL, check, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.ops import elementwise as ew
from pyframe.ops.creation import arange, tensor, zeros
from pyframe.ops.join import cat
from pyframe.ops.rearrange import roll
from pyframe.tensor import Tensor, empty_tensor

__all__ = ["irfft", "irfft2", "irfftn", "hfft", "hfft2", "hfftn", "fftshift", "ifftshift", "fftfreq", "rfftfreq"]

_NORMS = ("backward", "ortho", "forward")


def _float(x: Tensor, fn: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{fn}(): argument 'input' must be Tensor, not {type(x).__name__}")
    if x.dtype in (_dtype.float32, _dtype.float64):
        return x
    if x.dtype is _dtype.float16:
        raise TypeError(f"{fn}(): float16 is not supported; use float32 or float64")
    return x.to(_dtype.get_default_dtype())


def _resize(x: Tensor, d: int, size: int) -> Tensor:
    """``x`` cut or zero-padded to ``size`` along ``d`` (differentiable)."""
    n = x.shape[d]
    if size < n:
        return x.narrow(d, 0, size)
    if size > n:
        shape = list(x.shape)
        shape[d] = size - n
        return cat([x, zeros(*shape, dtype=x.dtype)], d)
    return x


def _call(re, im, out_re, out_im, d: int, mode: int, sign: int) -> None:
    check(lib.pf_fft(re._d(), NULL if im is None else im._d(), out_re._d(), NULL if out_im is None else out_im._d(),
                     d, mode, sign))  # fmt: skip


def _c2c(re: Tensor, im, d: int, sign: int):
    out_re, out_im = empty_tensor(re._shape, re.dtype), empty_tensor(re._shape, re.dtype)
    _call(re, im, out_re, out_im, d, 0, sign)
    return out_re, out_im


def _c2r(re: Tensor, im, d: int, n: int, sign: int) -> Tensor:
    shape = list(re.shape)
    shape[d] = n
    out = empty_tensor(tuple(shape), re.dtype)
    _call(re, im, out, None, d, 1, sign)
    return out


def _r2c(x: Tensor, d: int, sign: int):
    shape = list(x.shape)
    shape[d] = x.shape[d] // 2 + 1
    re, im = empty_tensor(tuple(shape), x.dtype), empty_tensor(tuple(shape), x.dtype)
    _call(x, None, re, im, d, 2, sign)
    return re, im


def _scale(norm, N: int, inverse: bool) -> float:
    if norm is None:
        norm = "backward"
    if norm not in _NORMS:
        raise ValueError(f'Invalid normalization mode: "{norm}"; use "backward", "ortho" or "forward"')
    if norm == "ortho":
        return 1 / math.sqrt(N)
    return 1 / N if (norm == "backward") == inverse else 1.0


def _dims_sizes(x: Tensor, s, dim, fn: str):
    """The transformed dims (the last one is the real one) and their output sizes; ``dim`` None is every dim,
    or the last ``len(s)``."""
    if dim is None:
        dims = list(range(x.ndim)) if s is None else list(range(x.ndim - len(s), x.ndim))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    dims = [d + x.ndim if d < 0 else d for d in dims]
    if any(not 0 <= d < x.ndim for d in dims) or len(set(dims)) != len(dims) or not dims:
        raise IndexError(f"{fn}(): dims {dim} out of range or repeated for a tensor of {x.ndim} dims")
    if s is not None and len(s) != len(dims):
        raise ValueError(f"{fn}(): s and dim must have the same length, got {len(s)} and {len(dims)}")
    sizes = [x.shape[d] if s is None or s[i] == -1 else int(s[i]) for i, d in enumerate(dims)]
    if s is None or s[-1] == -1:
        sizes[-1] = 2 * (x.shape[dims[-1]] - 1)
    if any(n < 1 for n in sizes):
        raise RuntimeError(f"{fn}(): invalid number of data points ({min(sizes)}) specified")
    return dims, sizes


def _irfftn(x: Tensor, s, dim, norm, fn: str, inverse: bool = True) -> Tensor:
    """The c2r transform of the real (half-)spectrum ``x`` over ``dim``: complex transforms over all but the
    last dim, then the Hermitian one over the last; scaled by ``norm``."""
    x = _float(x, fn)
    dims, sizes = _dims_sizes(x, s, dim, fn)
    scale = _scale(norm, math.prod(sizes), inverse)
    for d, n in zip(dims[:-1], sizes[:-1], strict=True):
        x = _resize(x, d, n)
    last, n = dims[-1], sizes[-1]
    x = _resize(x, last, n // 2 + 1)
    with _grad_mode.no_grad():
        re, im = x, None
        for d in dims[:-1]:
            re, im = _c2c(re, im, d, 1)
        out = _c2r(re, im, last, n, 1)
        if scale != 1.0:
            out = ew.mul(out, scale)
    if needs_grad(x):

        def backward(g):  # the adjoint: r2c of g weighted 2 off DC and Nyquist, then the adjoint c2c's
            with _grad_mode.no_grad():
                gre, gim = _r2c(ew.mul(g, scale), last, -1)
                w = [1.0] + [2.0] * (n // 2) if n % 2 else [1.0] + [2.0] * (n // 2 - 1) + [1.0]
                shape = [1] * x.ndim
                shape[last] = len(w)
                weights = tensor(w, dtype=x.dtype).reshape(*shape)
                gre, gim = ew.mul(gre, weights), ew.mul(gim, weights)
                for d in reversed(dims[:-1]):
                    gre, gim = _c2c(gre, gim, d, -1)
            return gre

        record("FftC2RBackward0", backward, (x,), out, ())
    return out


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:  # noqa: A002
    """Same as torch.fft.irfft of a real input: the real signal of length ``n`` (default 2 (m - 1)) whose
    one-sided spectrum is ``input`` along ``dim``."""
    return _irfftn(input, None if n is None else (n,), dim, norm, "irfft")


def irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:  # noqa: A002
    """Same as torch.fft.irfft2 of a real input: ``irfftn`` over two dims."""
    return _irfftn(input, s, dim, norm, "irfft2")


def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:  # noqa: A002
    """Same as torch.fft.irfftn of a real input: inverse transforms over ``dim`` (every dim, or the last
    ``len(s)``), the last one from a one-sided spectrum to a real signal."""
    return _irfftn(input, s, dim, norm, "irfftn")


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None) -> Tensor:  # noqa: A002
    """Same as torch.fft.hfft of a real input: the real spectrum (length ``n``, default 2 (m - 1)) of the
    Hermitian-symmetric signal whose first half is ``input``."""
    return _irfftn(input, None if n is None else (n,), dim, norm, "hfft", inverse=False)


def hfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None) -> Tensor:  # noqa: A002
    """Same as torch.fft.hfft2 of a real input: ``hfftn`` over two dims."""
    return _irfftn(input, s, dim, norm, "hfft2", inverse=False)


def hfftn(input: Tensor, s=None, dim=None, norm: str | None = None) -> Tensor:  # noqa: A002
    """Same as torch.fft.hfftn of a real input (for which it is ``irfftn`` with the other normalization)."""
    return _irfftn(input, s, dim, norm, "hfftn", inverse=False)


def _shift(input: Tensor, dim, sign: int) -> Tensor:
    dims = list(range(input.ndim)) if dim is None else [dim] if isinstance(dim, int) else list(dim)
    shifts = [sign * (input.shape[d] // 2) for d in dims]
    return roll(input, shifts, dims)


def fftshift(input: Tensor, dim=None) -> Tensor:  # noqa: A002
    """Same as torch.fft.fftshift: the zero frequency moved to the middle (a roll by n // 2 along ``dim``,
    every dim by default)."""
    return _shift(input, dim, 1)


def ifftshift(input: Tensor, dim=None) -> Tensor:  # noqa: A002
    """Same as torch.fft.ifftshift: ``fftshift``'s inverse (a roll by -(n // 2))."""
    return _shift(input, dim, -1)


def fftfreq(n: int, d: float = 1.0, *, dtype=None, requires_grad: bool = False, **_: object) -> Tensor:
    """Same as torch.fft.fftfreq: the sample frequencies [0, 1, ..., -(n // 2), ..., -1] / (d n)."""
    k = arange(n, dtype=dtype or _dtype.get_default_dtype())
    out = ew.div(ew.sub(k, ew.mul(ew.ge(k, (n + 1) // 2).to(k.dtype), float(n))), d * n)
    return out.requires_grad_() if requires_grad else out


def rfftfreq(n: int, d: float = 1.0, *, dtype=None, requires_grad: bool = False, **_: object) -> Tensor:
    """Same as torch.fft.rfftfreq: the non-negative sample frequencies [0, 1, ..., n // 2] / (d n)."""
    out = ew.div(arange(n // 2 + 1, dtype=dtype or _dtype.get_default_dtype()), d * n)
    return out.requires_grad_() if requires_grad else out
