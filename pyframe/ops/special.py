"""Special functions: rows of the unary table computed in ``core_c/src/special.c`` (digamma, erfinv, the
modified Bessel functions i0/i0e/i1/i1e and the Bessel functions j0, j1, y0, y1, as PyTorch computes them)
and ``lgamma`` from the C library, each with its derivative beside it, as the other unary rows.

torch has ``lgamma``, ``digamma``, ``erfinv`` and ``i0`` at its top level (and as Tensor methods); the others
live in ``torch.special`` only, so they are made here without a top-level name (``pyframe.special`` has them).
"""

from __future__ import annotations

import math

from pyframe._backend import lib
from pyframe.ops.elementwise import _make_unary, _unary, div, eq, exp, mul, sign, sub, where

__all__ = ["lgamma", "lgamma_", "digamma", "digamma_", "erfinv", "erfinv_", "i0", "i0_"]

_HALF_SQRT_PI = math.sqrt(math.pi) / 2

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
# fmt: on
