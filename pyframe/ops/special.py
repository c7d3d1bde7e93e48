"""Special functions: rows of the unary and binary tables computed in ``core_c/src/special*.c`` (digamma,
polygamma, erfinv, ndtri, erfcx, zeta, the Bessel functions, the orthogonal polynomials, as PyTorch computes
them) and ``lgamma`` from the C library, each with its derivative beside it where torch has one, as the other
rows; ``mvlgamma``, ``frexp``, ``ldexp``, ``nextafter`` and the regularized incomplete gamma functions ``igamma``
and ``igammac`` (``core_c/src/special_igamma.c``) beside them.

torch has ``lgamma``, ``digamma``, ``polygamma``, ``mvlgamma``, ``erfinv`` and ``i0`` at its top level (and as
Tensor methods); the others live in ``torch.special`` only, so they are made here without a top-level name
(``pyframe.special`` has them).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from pyframe import _dtype
from pyframe._backend import lib
from pyframe.ops._common import check_operands, result_type
from pyframe.ops.creation import arange
from pyframe.ops.elementwise import (
    _apply_binary,
    _Binary,
    _make_unary,
    _unary,
    add,
    div,
    eq,
    exp,
    exp2,
    le,
    log,
    mul,
    pow,
    sign,
    sub,
    where,
    write_back,
)
from pyframe.ops.reduce import any as _any
from pyframe.ops.reduce import sum as _sum
from pyframe.tensor import Tensor

__all__ = [
    "lgamma", "lgamma_", "digamma", "digamma_", "polygamma", "mvlgamma", "erfinv", "erfinv_", "i0", "i0_",
    "frexp", "ldexp", "ldexp_", "nextafter", "igamma", "igammac",
]  # fmt: skip

_HALF_SQRT_PI = math.sqrt(math.pi) / 2
_SQRT_2PI = math.sqrt(2 * math.pi)
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _special(fn, what: str):
    """A torch.special function's name and docstring on a row's op."""
    fn.__doc__ = f"Same as torch.special.{fn.__name__}: {what}."
    return fn


# fmt: off
_trigamma = _make_unary("trigamma", lib.PF_TRIGAMMA)[0]  # digamma's derivative (not differentiable again)
lgamma, lgamma_ = _unary("lgamma", lib.PF_LGAMMA, "x", lambda g, x, y: mul(g, digamma(x)))
digamma, digamma_ = _unary("digamma", lib.PF_DIGAMMA, "x", lambda g, x, y: mul(g, _trigamma(x)))
erfinv, erfinv_ = _unary("erfinv", lib.PF_ERFINV, "y", lambda g, x, y: mul(g, mul(exp(mul(y, y)), _HALF_SQRT_PI)))
i0, i0_ = _unary("i0", lib.PF_I0, "x", lambda g, x, y: mul(g, i1(x)))
i0e = _make_unary("i0e", lib.PF_I0E, "xy", lambda g, x, y: mul(g, sub(i1e(x), mul(sign(x), y))))[0]
# at 0 both derivatives are 1/2, where y / x is 0 / 0
i1 = _make_unary("i1", lib.PF_I1, "xy", lambda g, x, y: mul(g, where(eq(x, 0), 0.5, sub(i0(x), div(y, x)))))[0]
i1e = _make_unary("i1e", lib.PF_I1E, "xy", lambda g, x, y: mul(g, where(
    eq(x, 0), 0.5, sub(i0e(x), mul(y, sign(x) + div(1.0, x))))))[0]
bessel_j0 = _make_unary("bessel_j0", lib.PF_BESSEL_J0, "x", lambda g, x, y: mul(g, -bessel_j1(x)))[0]
bessel_j1 = _make_unary("bessel_j1", lib.PF_BESSEL_J1, "xy", lambda g, x, y: mul(g, where(
    eq(x, 0), 0.5, sub(bessel_j0(x), div(y, x)))))[0]
bessel_y0 = _make_unary("bessel_y0", lib.PF_BESSEL_Y0, "x", lambda g, x, y: mul(g, -bessel_y1(x)))[0]
bessel_y1 = _make_unary("bessel_y1", lib.PF_BESSEL_Y1, "xy", lambda g, x, y: mul(g, sub(bessel_y0(x), div(y, x))))[0]
# d ndtri(p) / dp = sqrt(2 pi) exp(ndtri(p)^2 / 2); d erfcx(x) / dx = 2 x erfcx(x) - 2 / sqrt(pi)
ndtri = _special(_make_unary("ndtri", lib.PF_NDTRI, "y", lambda g, x, y: mul(g, mul(exp(mul(mul(y, y), 0.5)),
                 _SQRT_2PI)))[0], "the inverse of the standard normal CDF, ``ndtr``")
erfcx = _special(_make_unary("erfcx", lib.PF_ERFCX, "xy", lambda g, x, y: mul(g, sub(mul(mul(x, y), 2.0),
                 _TWO_OVER_SQRT_PI)))[0], "the scaled complementary error function, ``exp(x**2) * erfc(x)``")
# torch differentiates none of these
airy_ai = _special(_make_unary("airy_ai", lib.PF_AIRY_AI)[0], "the Airy function Ai")
modified_bessel_k0 = _special(_make_unary("modified_bessel_k0", lib.PF_BESSEL_K0)[0],
                              "the modified Bessel function of the second kind of order 0")
modified_bessel_k1 = _special(_make_unary("modified_bessel_k1", lib.PF_BESSEL_K1)[0],
                              "the modified Bessel function of the second kind of order 1")
scaled_modified_bessel_k0 = _special(_make_unary("scaled_modified_bessel_k0", lib.PF_BESSEL_K0E)[0],
                                     "``exp(x) * modified_bessel_k0(x)``")
scaled_modified_bessel_k1 = _special(_make_unary("scaled_modified_bessel_k1", lib.PF_BESSEL_K1E)[0],
                                     "``exp(x) * modified_bessel_k1(x)``")
# fmt: on


# ---- polygamma, mvlgamma ------------------------------------------------------------------------------------
def _order(n) -> float:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"polygamma(): argument 'n' must be int, not {type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    return float(n)


_polygamma, _polygamma_ = _make_unary(
    "polygamma", lib.PF_POLYGAMMA, "x", lambda g, x, y, n: mul(g, _polygamma(x, int(n) + 1)), param=_order
)


def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002 - torch's name
    """Same as torch.polygamma: the ``n``-th derivative of digamma (``n = 0`` is digamma itself); its derivative
    is ``polygamma(n + 1, input)``."""
    return _polygamma(input, n, out=out)


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    """Same as torch.Tensor.polygamma: ``pyframe.polygamma(n, self)``."""
    return _polygamma(self, n)


def _polygamma_inplace(self: Tensor, n: int) -> Tensor:
    """Same as torch.Tensor.polygamma_: ``polygamma(n, self)`` written into this tensor."""
    return _polygamma_(self, n)


def mvlgamma(input: Tensor, p: int) -> Tensor:  # noqa: A002
    """Same as torch.mvlgamma: the multivariate log-gamma function of dimension ``p``,
    ``sum_j lgamma(input - j / 2) + p (p - 1) / 4 log(pi)`` over ``j = 0 .. p - 1``; every element must be
    greater than ``(p - 1) / 2``."""
    if isinstance(p, bool) or not isinstance(p, int):
        raise TypeError(f"mvlgamma(): argument 'p' must be int, not {type(p).__name__}")
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, got p={p}")
    if not isinstance(input, Tensor):
        raise TypeError(f"mvlgamma(): argument 'input' must be Tensor, not {type(input).__name__}")
    dt = input.dtype if input.dtype.is_floating_point else _dtype.get_default_dtype()
    if input.numel() and bool(_any(le(input, (p - 1) / 2))):
        raise RuntimeError(f"All elements must be greater than (p-1)/2, got p={p}")
    shifts = arange(-p / 2 + 0.5, 0.5, 0.5, dtype=dt)
    return add(_sum(lgamma(add(input.unsqueeze(-1), shifts)), -1), p * (p - 1) * math.log(math.pi) / 4)


def _mvlgamma_inplace(self: Tensor, p: int) -> Tensor:
    """Same as torch.Tensor.mvlgamma_: ``mvlgamma(self, p)`` written into this tensor."""
    return write_back(self, mvlgamma, p)


# ---- frexp, ldexp, nextafter ----------------------------------------------------------------------------------
class frexp_result(NamedTuple):  # noqa: N801 - torch.return_types.frexp
    """Same as torch.return_types.frexp: ``(mantissa, exponent)``."""

    mantissa: Tensor
    exponent: Tensor


_frexp_exponent = _make_unary("frexp_exponent", lib.PF_FREXP_EXPONENT)[0]
# torch's derivative: g / 2**exponent (the exponent is a step function)
_frexp_mantissa = _make_unary(
    "frexp_mantissa", lib.PF_FREXP_MANTISSA, "x", lambda g, x, y: div(g, exp2(_frexp_exponent(x)))
)[0]


def frexp(input: Tensor, *, out=None) -> frexp_result:  # noqa: A002
    """Same as torch.frexp: ``input = mantissa * 2**exponent`` with ``|mantissa|`` in [0.5, 1) (0, inf and NaN
    keep their value, exponent 0); the exponent is int32."""
    if not isinstance(input, Tensor):
        raise TypeError(f"frexp(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise TypeError(f"torch.frexp() only supports floating-point dtypes, got {input.dtype.name}")
    res = frexp_result(_frexp_mantissa(input), _frexp_exponent(input).to(_dtype.int32))
    if out is None:
        return res
    out[0].copy_(res.mantissa)
    out[1].copy_(res.exponent)
    return frexp_result(out[0], out[1])


def ldexp(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """Same as torch.ldexp: ``input * 2**other``, in a floating dtype."""
    if not isinstance(input, Tensor):
        raise TypeError(f"ldexp(): argument 'input' must be Tensor, not {type(input).__name__}")
    y = mul(input, pow(2.0, other))
    return y if out is None else out.copy_(y)


def ldexp_(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.ldexp_: ``ldexp(self, other)`` written into this tensor."""
    return write_back(input, ldexp, other)


# torch's derivative: the gradient passes to input (nextafter moves it by one ulp), none to other
_NEXTAFTER = _Binary("nextafter", lib.PF_NEXTAFTER, "float", lambda g, a, b, y, *_: (g, mul(g, 0.0)), False,
                     "NextafterBackward0")  # fmt: skip


def _check_nextafter(a, b, fn: str) -> None:
    for t in (a, b):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): expected Tensor arguments, got {type(t).__name__}")
        if t.dtype not in (_dtype.float32, _dtype.float64):
            raise TypeError(f"{fn}(): supports float32 and float64 tensors only, got {t.dtype.name}")


def nextafter(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """Same as torch.nextafter: the next floating-point value after ``input`` towards ``other`` (C's
    ``nextafter``), for float32 and float64 tensors; the gradient passes to ``input`` unchanged."""
    _check_nextafter(input, other, "nextafter")
    return _apply_binary(_NEXTAFTER, input, other, out)


def _nextafter_inplace(self: Tensor, other: Tensor) -> Tensor:
    """Same as torch.Tensor.nextafter_: ``nextafter(self, other)`` written into this tensor."""
    _check_nextafter(self, other, "nextafter_")
    return _apply_binary(_NEXTAFTER, self, other, self)


# ---- igamma, igammac: the regularized incomplete gamma functions ------------------------------------------------
def _incomplete_gamma_grad(name: str, upper: bool):
    """torch's derivative: d/dx P(a, x) = x^(a - 1) e^-x / Gamma(a) (Q's is its negative), in ops so that it is
    differentiable again; torch has none with respect to ``a`` and raises when one is asked for."""

    def grad(g, a, x, y, need_a=True, need_x=True):  # the binary table's signature: which gradients are needed
        if a.requires_grad:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        d = mul(g, exp(sub(sub(mul(sub(a, 1.0), log(x)), x), lgamma(a))))
        return None, -d if upper else d

    return grad


_IGAMMA = _Binary("igamma", lib.PF_IGAMMA, "float", _incomplete_gamma_grad("igamma", False), True,
                  "IgammaBackward0", "none")  # fmt: skip
_IGAMMAC = _Binary("igammac", lib.PF_IGAMMAC, "float", _incomplete_gamma_grad("igammac", True), True,
                   "IgammacBackward0", "none")  # fmt: skip


def _incomplete_gamma(row: _Binary, input, other, out, fn: str) -> Tensor:  # noqa: A002
    check_operands(fn, input, other, "none")
    dt = result_type(input, other)
    if not dt.is_floating_point:
        raise NotImplementedError(
            f"{fn}(): not implemented for {dt.name} tensors; takes floating-point tensors (float16, bfloat16, "
            "float32, float64; an integer tensor is promoted beside a floating one)"
        )
    return _apply_binary(row, input, other, out)


def igamma(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """Same as torch.igamma: the regularized lower incomplete gamma function
    ``P(input, other) = gamma(input, other) / Gamma(input)`` of the shape ``input`` (``a`` > 0) and ``other``
    (``x`` >= 0), NaN outside; differentiable with respect to ``other`` only (torch's rule)."""
    return _incomplete_gamma(_IGAMMA, input, other, out, "igamma")


def igammac(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """Same as torch.igammac: the regularized upper incomplete gamma function ``Q(input, other) = 1 - P``,
    computed directly (accurate where it is tiny); differentiable with respect to ``other`` only."""
    return _incomplete_gamma(_IGAMMAC, input, other, out, "igammac")


def _igamma_inplace(self: Tensor, other: Tensor) -> Tensor:
    """Same as torch.Tensor.igamma_: ``igamma(self, other)`` written into this tensor."""
    return _incomplete_gamma(_IGAMMA, self, other, self, "igamma_")


def _igammac_inplace(self: Tensor, other: Tensor) -> Tensor:
    """Same as torch.Tensor.igammac_: ``igammac(self, other)`` written into this tensor."""
    return _incomplete_gamma(_IGAMMAC, self, other, self, "igammac_")


# ---- zeta and the orthogonal polynomials: torch.special's, not differentiable ------------------------------------
def _special_binary(name: str, op: int, second: str, what: str):
    row = _Binary(name, op, "float", None, False, "")

    def fn(input, other, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
        return _apply_binary(row, input, other, out)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Same as torch.special.{name}: {what} (not differentiable)."
    if second != "other":  # torch's name for the second argument, so that a keyword call works

        def named(input, *args, out: Tensor | None = None, **kwargs) -> Tensor:  # noqa: A002
            if second in kwargs:
                args = (*args, kwargs.pop(second))
            if kwargs or len(args) != 1:
                raise TypeError(f"{name}() takes input and {second}")
            return _apply_binary(row, input, args[0], out)

        named.__name__ = named.__qualname__ = name
        named.__doc__ = fn.__doc__
        return named
    return fn


zeta = _special_binary("zeta", lib.PF_ZETA, "other", "the Hurwitz zeta function of ``input`` and ``other``")
_POLYNOMIALS = {
    "chebyshev_polynomial_t": (lib.PF_CHEBYSHEV_T, "the Chebyshev polynomial of the first kind T_n"),
    "chebyshev_polynomial_u": (lib.PF_CHEBYSHEV_U, "the Chebyshev polynomial of the second kind U_n"),
    "chebyshev_polynomial_v": (lib.PF_CHEBYSHEV_V, "the Chebyshev polynomial of the third kind V_n"),
    "chebyshev_polynomial_w": (lib.PF_CHEBYSHEV_W, "the Chebyshev polynomial of the fourth kind W_n"),
    "shifted_chebyshev_polynomial_t": (lib.PF_SHIFTED_CHEBYSHEV_T, "T_n(2x - 1)"),
    "shifted_chebyshev_polynomial_u": (lib.PF_SHIFTED_CHEBYSHEV_U, "U_n(2x - 1)"),
    "shifted_chebyshev_polynomial_v": (lib.PF_SHIFTED_CHEBYSHEV_V, "V_n(2x - 1)"),
    "shifted_chebyshev_polynomial_w": (lib.PF_SHIFTED_CHEBYSHEV_W, "W_n(2x - 1)"),
    "hermite_polynomial_h": (lib.PF_HERMITE_H, "the physicists' Hermite polynomial H_n"),
    "hermite_polynomial_he": (lib.PF_HERMITE_HE, "the probabilists' Hermite polynomial He_n"),
    "laguerre_polynomial_l": (lib.PF_LAGUERRE_L, "the Laguerre polynomial L_n"),
    "legendre_polynomial_p": (lib.PF_LEGENDRE_P, "the Legendre polynomial P_n"),
}
polynomials = {
    name: _special_binary(name, op, "n", what + " of ``input``, degree ``n`` (truncated to an integer; 0 below 0)")
    for name, (op, what) in _POLYNOMIALS.items()
}

# the Tensor methods of the functions above whose signature is not a table row's
methods = {
    "polygamma": _polygamma_method, "polygamma_": _polygamma_inplace, "mvlgamma": mvlgamma,
    "mvlgamma_": _mvlgamma_inplace, "frexp": frexp, "ldexp": ldexp, "ldexp_": ldexp_, "nextafter": nextafter,
    "nextafter_": _nextafter_inplace, "igamma": igamma, "igamma_": _igamma_inplace, "igammac": igammac,
    "igammac_": _igammac_inplace,
}  # fmt: skip
