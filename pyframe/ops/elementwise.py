"""Elementwise ops: each is one row naming its C op code; the fast path (same shape,
contiguous, one dtype) is one allocation and one C call."""

from __future__ import annotations

import math
from functools import partial

from pyframe import _dtype, _grad_mode
from pyframe._backend import SMALL_BYTES, alloc_large, alloc_small, check, lib
from pyframe._dtype import DEFAULT_FOR_CATEGORY as _DEFAULTS
from pyframe._dtype import bool_, float32
from pyframe.autograd.graph import record, record_pair
from pyframe.ops._common import (
    as_tensor_of,
    broadcast_shapes,
    cast,
    check_inplace_dtype,
    check_inplace_shape,
    overlaps,
    result_type,
    scalar_tensor,
)
from pyframe.tensor import Tensor, empty_tensor, fresh

_unary_contig = lib.pf_unary_contig
_binary_contig = lib.pf_binary_contig
_binary_scalar = lib.pf_binary_scalar
_float64 = _dtype.float64
_EXACT = 1 << 53  # ints up to this size are exact as the C entry's double


# ---- autograd helpers --------------------------------------------------------------------


def unbroadcast(g: Tensor, shape: tuple) -> Tensor:
    """Sum ``g`` over the dims broadcasting added, so it matches an input of ``shape``."""
    if g._shape == shape:
        return g
    lead = g.ndim - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, n in enumerate(shape) if n == 1 and g._shape[lead + i] != 1)
    # Tensor.sum: the reductions build on this module, so it does not import them
    return g.sum(dims, keepdim=True).reshape(shape) if dims else g.reshape(shape)


def _grad_to(g: Tensor | None, x) -> Tensor | None:
    """A gradient for input ``x``: broadcasting summed away, in ``x``'s dtype."""
    if g is None or not isinstance(x, Tensor) or not x.requires_grad:
        return None
    g = unbroadcast(g, x._shape)
    return g if g.dtype is x.dtype else cast(g, x.dtype)


def _view_base_check(t: Tensor, name: str) -> None:
    if t._base is not None:
        raise RuntimeError(
            f"{name}: in-place operation on a view of a tensor that takes part in autograd is not supported; "
            "use the out-of-place op or clone() the view first"
        )


# ---- unary ------------------------------------------------------------------------------


def _make_unary(name: str, op: int, floating: bool, deriv=None, identity_for=(), result=None, saves=""):
    """An op ``f(x)``. ``floating``: integer inputs are computed in float32, as PyTorch.
    ``deriv(g, x, out)``: the gradient (None: not differentiable); ``saves``: which of
    "x" and "y" (the output) it reads, checked for in-place changes at backward time.
    ``identity_for``: dtypes on which the op is a copy. ``result``: a fixed output dtype."""

    def fn(input: Tensor) -> Tensor:  # noqa: A002 - torch's parameter name
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): expected a Tensor, got {type(input).__name__}")
        dt = input.dtype
        if dt in identity_for:
            return input.clone()
        if floating and not dt.is_floating_point:
            dt = _DEFAULTS[2]  # torch's default dtype (set_default_dtype)
            input = cast(input, dt)
        out_dt = result or dt
        if input._contig:
            n = input._numel
            nbytes = n * out_dt.itemsize
            data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
            rc = _unary_contig(op, dt.code, input._ptr, data, n)
            if rc:
                check(rc)
            out = fresh(data, nbytes, input._shape, input._strides, n, out_dt)
        else:
            out = empty_tensor(input._shape, out_dt)
            check(lib.pf_unary(op, input._d(), out._d(), 0.0, 0.0))
        if deriv is not None and input.requires_grad and _grad_mode.enabled:
            saved = (input, out) if saves == "xy" else (input,) if saves == "x" else (out,) if saves == "y" else ()
            record(backward_name, lambda g: (deriv(g, input, out),), (input,), out, saved)
        return out

    backward_name = name.capitalize() + "Backward0"
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Same as torch.{name}."
    return fn


def _fused_grad(op: int, composed):
    """An activation's derivative as one C pass over (g, y) (``PF_*_BACKWARD``), as torch's
    ``threshold_backward``/``tanh_backward``; with ``create_graph`` (grad mode on during
    backward) the composed form, whose ops are differentiable again."""

    def deriv(g: Tensor, x: Tensor, y: Tensor) -> Tensor:
        if _grad_mode.enabled or g.dtype is not y.dtype or g._shape != y._shape or not y.dtype.is_floating_point:
            return composed(g, x, y)
        out = empty_tensor(y._shape, y.dtype)
        if g._contig and y._contig:
            check(_binary_contig(op, y.dtype.code, g._ptr, y._ptr, out._ptr, y._numel))
        else:
            check(lib.pf_binary(op, g._d(), y._d(), out._d()))
        return out

    return deriv


_tanh_grad = _fused_grad(lib.PF_TANH_BACKWARD, lambda g, x, y: mul(g, sub(1.0, mul(y, y))))  # noqa: F821
_sigmoid_grad = _fused_grad(lib.PF_SIGMOID_BACKWARD, lambda g, x, y: mul(g, mul(y, sub(1.0, y))))  # noqa: F821
# y <= 0 masks, not y > 0: a NaN output passes its gradient on, as torch's threshold_backward
_relu_grad = _fused_grad(lib.PF_RELU_BACKWARD, lambda g, x, y: where(le(y, 0), 0.0, g))  # noqa: F821


def _zero_grad(g, x, y):
    return mul(g, 0.0)  # noqa: F821 - the binary ops are bound below


_INTS_AND_BOOL = (_dtype.int64, _dtype.int32, _dtype.bool_)
# name: (op code, computes in floating point, derivative(g, x, y) with y = f(x), dtypes it copies)
# fmt: off
_UNARY = {
    "neg": (lib.PF_NEG, False, lambda g, x, y: neg(g), ()),  # noqa: F821
    "abs": (lib.PF_ABS, False, lambda g, x, y: mul(g, sign(x)), ()),  # noqa: F821
    "exp": (lib.PF_EXP, True, lambda g, x, y: mul(g, y), ()),  # noqa: F821
    "log": (lib.PF_LOG, True, lambda g, x, y: div(g, x), ()),  # noqa: F821
    "sqrt": (lib.PF_SQRT, True, lambda g, x, y: div(g, mul(y, 2.0)), ()),  # noqa: F821
    "rsqrt": (lib.PF_RSQRT, True, lambda g, x, y: mul(g, mul(pow(y, 3.0), -0.5)), ()),  # noqa: F821
    "tanh": (lib.PF_TANH, True, _tanh_grad, ()),
    "sigmoid": (lib.PF_SIGMOID, True, _sigmoid_grad, ()),
    "relu": (lib.PF_RELU, False, _relu_grad, ()),
    "sin": (lib.PF_SIN, True, lambda g, x, y: mul(g, cos(x)), ()),  # noqa: F821
    "cos": (lib.PF_COS, True, lambda g, x, y: neg(mul(g, sin(x))), ()),  # noqa: F821
    "sign": (lib.PF_SIGN, False, _zero_grad, (_dtype.bool_,)),
    "reciprocal": (lib.PF_RECIPROCAL, True, lambda g, x, y: neg(mul(g, mul(y, y))), ()),  # noqa: F821
    "square": (lib.PF_SQUARE, False, lambda g, x, y: mul(g, mul(x, 2.0)), ()),  # noqa: F821
    "erf": (lib.PF_ERF, True, lambda g, x, y: mul(g, mul(exp(neg(mul(x, x))), 2.0 / math.sqrt(math.pi))), ()),  # noqa: F821
    "log1p": (lib.PF_LOG1P, True, lambda g, x, y: div(g, add(x, 1.0)), ()),  # noqa: F821
    "expm1": (lib.PF_EXPM1, True, lambda g, x, y: mul(g, add(y, 1.0)), ()),  # noqa: F821
    "floor": (lib.PF_FLOOR, False, _zero_grad, _INTS_AND_BOOL),
    "ceil": (lib.PF_CEIL, False, _zero_grad, _INTS_AND_BOOL),
    "round": (lib.PF_ROUND, False, _zero_grad, _INTS_AND_BOOL),
    "trunc": (lib.PF_TRUNC, False, _zero_grad, _INTS_AND_BOOL),
    "tan": (lib.PF_TAN, True, lambda g, x, y: mul(g, add(mul(y, y), 1.0)), ()),  # noqa: F821
    "sinh": (lib.PF_SINH, True, lambda g, x, y: mul(g, cosh(x)), ()),  # noqa: F821
    "cosh": (lib.PF_COSH, True, lambda g, x, y: mul(g, sinh(x)), ()),  # noqa: F821
    "asin": (lib.PF_ASIN, True, lambda g, x, y: mul(g, rsqrt(sub(1.0, mul(x, x)))), ()),  # noqa: F821
    "acos": (lib.PF_ACOS, True, lambda g, x, y: neg(mul(g, rsqrt(sub(1.0, mul(x, x))))), ()),  # noqa: F821
    "atan": (lib.PF_ATAN, True, lambda g, x, y: div(g, add(mul(x, x), 1.0)), ()),  # noqa: F821
    "asinh": (lib.PF_ASINH, True, lambda g, x, y: mul(g, rsqrt(add(mul(x, x), 1.0))), ()),  # noqa: F821
    "acosh": (lib.PF_ACOSH, True, lambda g, x, y: mul(g, rsqrt(sub(mul(x, x), 1.0))), ()),  # noqa: F821
    "atanh": (lib.PF_ATANH, True, lambda g, x, y: div(g, sub(1.0, mul(x, x))), ()),  # noqa: F821
    "log2": (lib.PF_LOG2, True, lambda g, x, y: div(g, mul(x, math.log(2.0))), ()),  # noqa: F821
    "log10": (lib.PF_LOG10, True, lambda g, x, y: div(g, mul(x, math.log(10.0))), ()),  # noqa: F821
    "exp2": (lib.PF_EXP2, True, lambda g, x, y: mul(g, mul(y, math.log(2.0))), ()),  # noqa: F821
    "erfc": (lib.PF_ERFC, True, lambda g, x, y: mul(g, mul(exp(neg(mul(x, x))), -2.0 / math.sqrt(math.pi))), ()),  # noqa: F821
}
# fmt: on
_PREDICATES = {
    "isnan": lib.PF_ISNAN,
    "isinf": lib.PF_ISINF,
    "isfinite": lib.PF_ISFINITE,
    "logical_not": lib.PF_LOGICAL_NOT,
}

# what each derivative reads: the input x, the output y, or nothing
_SAVES = {
    "abs": "x", "exp": "y", "log": "x", "sqrt": "y", "rsqrt": "y", "tanh": "y", "sigmoid": "y", "relu": "y",
    "sin": "x", "cos": "x", "reciprocal": "y", "square": "x", "erf": "x", "log1p": "x", "expm1": "y",
    "tan": "y", "sinh": "x", "cosh": "x", "asin": "x", "acos": "x", "atan": "x", "asinh": "x", "acosh": "x",
    "atanh": "x", "log2": "x", "log10": "x", "exp2": "y", "erfc": "x",
}  # fmt: skip
unary_ops = {
    name: _make_unary(name, op, fl, d, ident, saves=_SAVES.get(name, "")) for name, (op, fl, d, ident) in _UNARY.items()
}
unary_ops.update({name: _make_unary(name, op, False, result=bool_) for name, op in _PREDICATES.items()})
globals().update(unary_ops)


def _unary_params(op: int, x: Tensor, p0: float, p1: float) -> Tensor:
    out = empty_tensor(x._shape, x.dtype)
    check(lib.pf_unary(op, x._d(), out._d(), p0, p1))
    return out


def clamp(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Same as torch.clamp; ``min``/``max`` may be numbers or tensors."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = input
        if min is not None:
            out = maximum(out, min)  # noqa: F821 - bound by globals().update below
        if max is not None:
            out = minimum(out, max)  # noqa: F821
        return out
    dt = result_type(input, *(v for v in (min, max) if v is not None))
    input = as_tensor_of(input, dt)
    for name, v in (("min", min), ("max", max)):
        if v is not None:
            _dtype.scalar_value(v, dt, f"clamp {name}", fill=False)
    lo = -math.inf if min is None else float(min)
    hi = math.inf if max is None else float(max)
    out = _unary_params(lib.PF_CLAMP, input, lo, hi)
    if input.requires_grad and _grad_mode.enabled:
        inside = logical_and(ge(input, lo), le(input, hi))  # noqa: F821
        record("ClampBackward1", lambda g: (where(inside, g, 0.0),), (input,), out)
    return out


clip = clamp


def relu6(input: Tensor) -> Tensor:
    return clamp(input, 0, 6)


# ---- binary -----------------------------------------------------------------------------


def _make_binary(name: str, op: int, kind: str, deriv=None):
    """An op ``f(a, b)`` with broadcasting and promotion.
    kind: "arith" (promoted dtype), "float" (floating result, int/int -> float32),
    "compare" (bool result). ``deriv(g, a, b, out) -> (grad_a, grad_b)`` before
    broadcasting is summed away."""
    out_bool = kind == "compare"
    # the lean recording of the fast path below (pow may promote and reads its output: _record_binary)
    lean_name = None if name == "pow" or deriv is None else name.capitalize() + "Backward0"
    saves = name in _SAVES_OPERANDS

    def fn(input, other) -> Tensor:  # noqa: A002 - torch's parameter names
        # fast path: one dtype, one shape, both contiguous
        if (
            type(input) is Tensor and type(other) is Tensor and input.dtype is other.dtype
            and input._shape == other._shape and input._contig and other._contig
            and (kind != "float" or input.dtype.is_floating_point)
        ):  # fmt: skip
            dt = input.dtype
            out_dt = bool_ if out_bool else dt
            n = input._numel
            nbytes = n * out_dt.itemsize
            data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
            rc = _binary_contig(op, dt.code, input._ptr, other._ptr, data, n)
            if rc:
                check(rc)
            out = fresh(data, nbytes, input._shape, input._strides, n, out_dt)
            if (input._requires_grad or other._requires_grad) and deriv is not None and _grad_mode.enabled:
                if lean_name is None:
                    _record_binary(name, deriv, input, other, input, other, out)
                else:
                    backward = partial(_binary_backward, deriv, input, other, input, other)
                    record_pair(lean_name, backward, input, other, out, saves)
            return out
        # fast path: a contiguous float tensor and a Python number, outside autograd
        if type(input) is Tensor:
            x, s, first = input, other, 0
        else:
            x, s, first = other, input, 1
        if (
            type(x) is Tensor and x._contig and (x.dtype is float32 or x.dtype is _float64)
            and (type(s) is float or (type(s) is int and -_EXACT <= s <= _EXACT))
            and not (x.requires_grad and _grad_mode.enabled)
        ):  # fmt: skip
            dt = x.dtype
            out_dt = bool_ if out_bool else dt
            n = x._numel
            nbytes = n * out_dt.itemsize
            data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
            rc = _binary_scalar(op, dt.code, x._ptr, s, data, n, first)
            if rc:
                check(rc)
            return fresh(data, nbytes, x._shape, x._strides, n, out_dt)
        return _binary(op, input, other, kind, name, deriv)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Same as torch.{name}."
    return fn


def _record_binary(name: str, deriv, a0, b0, a: Tensor, b: Tensor, out: Tensor) -> None:
    """Record ``out = name(a, b)``; a0/b0 are the caller's operands (before promotion)."""
    if a is a0 and b is b0 and name != "pow":  # two tensors, nothing promoted: the lean recording
        backward = partial(_binary_backward, deriv, a, b, a0, b0)
        record_pair(_BACKWARD_NAMES[name], backward, a, b, out, name in _SAVES_OPERANDS)
        return
    if name == "pow":  # a and b may be promoted copies: which grads are needed comes from a0 and b0
        need = (getattr(a0, "requires_grad", False), getattr(b0, "requires_grad", False))

        def backward(g):
            ga, gb = deriv(g, a, b, out, *need)
            return _grad_to(ga, a0), _grad_to(gb, b0)

    else:  # only pow reads the output: the others must not hold it (out -> node -> closure -> out would be a
        # reference cycle, keeping every result alive until the garbage collector runs). A partial is two
        # objects where a closure over five names is seven, on the path of every recorded binary op.
        backward = partial(_binary_backward, deriv, a, b, a0, b0)

    saved = ((a, b, out) if name == "pow" else (a, b)) if name in _SAVES_OPERANDS else ()
    record(_BACKWARD_NAMES[name], backward, (a0, b0), out, saved)


def _binary_backward(deriv, a, b, a0, b0, g):
    ga, gb = deriv(g, a, b, None)
    return _grad_to(ga, a0), _grad_to(gb, b0)


def _binary(op: int, a, b, kind: str, name: str, deriv=None) -> Tensor:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{name}(): expected at least one Tensor, got {type(a).__name__} and {type(b).__name__}")
    dt = result_type(a, b)
    if kind == "float" and not dt.is_floating_point:
        dt = _DEFAULTS[2]
    if kind == "arith" and dt is bool_ and name in ("sub", "pow", "remainder", "floor_divide"):
        raise TypeError(f"{name}: not supported for two bool tensors; use logical ops (~, ^, |, &) on masks")
    if dt is _dtype.float16 and (_past_half(a) or _past_half(b)):
        # torch computes half ops in float32 and rounds once: x - 2**31 is -inf, not inf - inf = nan
        wide = _binary(op, _widen(a), _widen(b), kind, name, deriv)
        return wide if kind == "compare" else wide.to(_dtype.float16)
    a0, b0 = a, b
    a = as_tensor_of(a, dt)
    b = as_tensor_of(b, dt)
    out = empty_tensor(broadcast_shapes(a._shape, b._shape), bool_ if kind == "compare" else dt)
    check(lib.pf_binary(op, a._d(), b._d(), out._d()))
    if (
        deriv is not None
        and _grad_mode.enabled
        and (getattr(a0, "requires_grad", False) or getattr(b0, "requires_grad", False))
    ):
        _record_binary(name, deriv, a0, b0, a, b, out)
    return out


def _past_half(x) -> bool:
    """A Python number that float16 cannot hold (it would round to inf)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and not -65504 <= x <= 65504


def _widen(x):
    return x.to(float32) if isinstance(x, Tensor) and x.dtype is _dtype.float16 else x


def _half_ties(g, a, b, wins):
    """maximum/minimum: the winner takes the gradient, ties split it (as torch)."""
    tie = eq(a, b)  # noqa: F821
    return where(wins, g, where(tie, mul(g, 0.5), 0.0)), where(logical_or(wins, tie), where(tie, mul(g, 0.5), 0.0), g)  # noqa: F821


# fmt: off
_BINARY = {
    # name: (op code, kind, derivative(g, a, b, out) -> (grad a, grad b))
    "add": (lib.PF_ADD, "arith", lambda g, a, b, y: (g, g)),
    "sub": (lib.PF_SUB, "arith", lambda g, a, b, y: (g, neg(g))),  # noqa: F821
    "mul": (lib.PF_MUL, "arith", lambda g, a, b, y: (mul(g, b), mul(g, a))),  # noqa: F821
    "div": (lib.PF_DIV, "float", lambda g, a, b, y: (div(g, b), neg(div(mul(g, a), mul(b, b))))),  # noqa: F821
    "pow": (lib.PF_POW, "arith", lambda g, a, b, y, need_a=True, need_b=True: (
        # b = 0: the derivative is 0, also at a = 0 where b * a^(b - 1) is 0 * inf (torch masks it the same way)
        where(eq(b, 0.0), 0.0, mul(g, mul(b, pow(a, sub(b, 1.0))))) if need_a else None,  # noqa: F821
        mul(g, mul(y, log(where(gt(a, 0.0), a, 1.0)))) if need_b else None)),  # noqa: F821
    "maximum": (lib.PF_MAXIMUM, "arith", lambda g, a, b, y: _half_ties(g, a, b, gt(a, b))),  # noqa: F821
    "minimum": (lib.PF_MINIMUM, "arith", lambda g, a, b, y: _half_ties(g, a, b, lt(a, b))),  # noqa: F821
    "atan2": (lib.PF_ATAN2, "float", lambda g, a, b, y: (
        div(mul(g, b), add(mul(a, a), mul(b, b))), neg(div(mul(g, a), add(mul(a, a), mul(b, b)))))),  # noqa: F821
    "remainder": (lib.PF_REMAINDER, "arith", lambda g, a, b, y: (g, neg(mul(g, floor_divide(a, b))))),  # noqa: F821
    "floor_divide": (lib.PF_FLOOR_DIVIDE, "arith", lambda g, a, b, y: (mul(g, 0.0), mul(g, 0.0))),  # noqa: F821
    "eq": (lib.PF_EQ, "compare", None),
    "ne": (lib.PF_NE, "compare", None),
    "lt": (lib.PF_LT, "compare", None),
    "le": (lib.PF_LE, "compare", None),
    "gt": (lib.PF_GT, "compare", None),
    "ge": (lib.PF_GE, "compare", None),
    "logical_and": (lib.PF_LOGICAL_AND, "compare", None),
    "logical_or": (lib.PF_LOGICAL_OR, "compare", None),
    "logical_xor": (lib.PF_LOGICAL_XOR, "compare", None),
}
# fmt: on
_SAVES_OPERANDS = {"mul", "div", "pow", "maximum", "minimum", "atan2", "remainder"}
_BACKWARD_NAMES = {name: name.capitalize() + "Backward0" for name in _BINARY}

binary_ops = {name: _make_binary(name, op, kind, d) for name, (op, kind, d) in _BINARY.items()}
plain_add, plain_sub = binary_ops["add"], binary_ops["sub"]  # for `a + b`: no alpha to look at


def _with_alpha(fn, sign: str):
    def scaled(input, other, *, alpha=1) -> Tensor:
        return fn(input, other if alpha == 1 else binary_ops["mul"](other, alpha))

    scaled.__name__ = scaled.__qualname__ = fn.__name__
    scaled.__doc__ = f"Same as torch.{fn.__name__}: ``input {sign} alpha * other``."
    return scaled


binary_ops.update(add=_with_alpha(plain_add, "+"), sub=_with_alpha(plain_sub, "-"))
globals().update(binary_ops)
true_divide = divide = binary_ops["div"]
multiply = binary_ops["mul"]
subtract = binary_ops["sub"]
greater, greater_equal, less, less_equal = gt, ge, lt, le  # noqa: F821 - bound just above
not_equal = ne  # noqa: F821


# ---- in place ---------------------------------------------------------------------------


def _inplace_binary(name: str, self: Tensor, other) -> Tensor:
    op, kind, deriv = _BINARY[name]
    self._write_check()
    dt = result_type(self, other)
    if kind == "float" and not dt.is_floating_point:
        dt = _DEFAULTS[2]
    check_inplace_dtype(self, dt, name + "_")
    if dt is _dtype.float16 and _past_half(other):  # in float32, rounded once, as the out-of-place op
        return copy_(self, binary_ops[name](_widen(self), other))
    b = as_tensor_of(other, dt)
    shape = broadcast_shapes(self._shape, b._shape)
    check_inplace_shape(self, shape, name + "_")
    grad = deriv is not None and _grad_mode.enabled and (self.requires_grad or getattr(other, "requires_grad", False))
    if grad:
        _view_base_check(self, name + "_")
    # the derivative may need self's value from before the write
    a = self if dt is self.dtype and not grad else cast(self, dt)
    if dt is self.dtype and not overlaps(self, b) and a is self:
        check(lib.pf_binary(op, a._d(), b._d(), self._d()))
    else:
        tmp = empty_tensor(shape, dt)
        check(lib.pf_binary(op, a._d(), b._d(), tmp._d()))
        check(lib.pf_copy(tmp._d(), self._d()))
    self._bump()
    if grad:
        _record_binary(name, deriv, self, other, a, b, self)
    return self


def _make_inplace(name: str):
    if name in ("add", "sub"):

        def fn(self: Tensor, other, *, alpha=1) -> Tensor:
            return _inplace_binary(name, self, other if alpha == 1 else binary_ops["mul"](other, alpha))

    else:

        def fn(self: Tensor, other) -> Tensor:
            return _inplace_binary(name, self, other)

    fn.__name__ = fn.__qualname__ = name + "_"
    fn.__doc__ = f"Same as torch.Tensor.{name}_."
    return fn


__all__ = [
    *unary_ops, *binary_ops, "true_divide", "divide", "multiply", "subtract", "greater", "greater_equal", "less",
    "less_equal", "not_equal", "clamp", "clip", "relu6", "where", "masked_fill",
]  # fmt: skip

inplace_ops = {name + "_": _make_inplace(name) for name in ("add", "sub", "mul", "div", "pow", "remainder")}


def where(condition: Tensor, input=None, other=None) -> Tensor:  # noqa: A002 - torch's parameter names
    """Same as torch.where(condition, input, other); ``where(condition)`` alone is
    ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)  # the method: index.py builds on this module
    a, b = input, other
    if not isinstance(condition, Tensor) or condition.dtype is not bool_:
        got = condition.dtype.name if isinstance(condition, Tensor) else type(condition).__name__
        raise TypeError(f"where: condition must be a bool tensor, got {got}")
    dt = result_type(a, b)
    a0, b0 = a, b
    a, b = as_tensor_of(a, dt), as_tensor_of(b, dt)
    out = empty_tensor(broadcast_shapes(condition._shape, a._shape, b._shape), dt)
    check(lib.pf_where(condition._d(), a._d(), b._d(), out._d()))
    # a and b may be promoted copies: whether a gradient is needed comes from a0 and b0
    need_a, need_b = getattr(a0, "requires_grad", False), getattr(b0, "requires_grad", False)
    if (need_a or need_b) and _grad_mode.enabled:
        zero = scalar_tensor(0, dt)

        def backward(g):
            return (
                _grad_to(where(condition, g, zero), a0) if need_a else None,
                _grad_to(where(condition, zero, g), b0) if need_b else None,
            )

        record("WhereBackward0", backward, (a0, b0), out)
    return out


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """Same as torch.masked_fill: ``value`` where ``mask`` is true."""
    if isinstance(value, Tensor):
        if value._numel != 1:
            raise ValueError(f"masked_fill only supports a 0-d value tensor, got shape {list(value._shape)}")
        if not (value.requires_grad and _grad_mode.enabled):
            value = value.item()
    if not isinstance(mask, Tensor) or mask.dtype is not bool_:
        raise TypeError("masked_fill: mask must be a bool tensor")
    if isinstance(value, Tensor):  # a value that requires grad gets the gradient of the filled places
        value = value.reshape(()) if value.dtype is input.dtype else value.reshape(()).to(input.dtype)
    if not isinstance(value, Tensor):
        value = scalar_tensor(value, input.dtype, "masked_fill value", True)
    out = where(mask, value, input)
    if out._shape != input._shape:
        check_inplace_shape(input, out._shape, "masked_fill")
    return out


def masked_fill_(x: Tensor, mask: Tensor, value) -> Tensor:
    return copy_(x, masked_fill(x, mask, value))


# ---- writes into existing tensors ---------------------------------------------------------


def _take_history(dst: Tensor, src: Tensor) -> None:
    """After copying ``src`` over all of ``dst`` in place, ``dst`` carries ``src``'s history."""
    dst.requires_grad = True
    dst.grad_fn = src.grad_fn
    dst._grad_version = dst._storage.version
    dst._output_nr = src._output_nr


def copy_(dst: Tensor, src) -> Tensor:
    """Same as torch.Tensor.copy_: broadcasts ``src`` to ``dst`` and converts dtype."""
    dst._write_check()
    if not isinstance(src, Tensor):
        src = scalar_tensor(src, dst.dtype, "value", True)
    shape = broadcast_shapes(dst._shape, src._shape)
    check_inplace_shape(dst, shape, "copy_")
    grad = _grad_mode.enabled and (src.requires_grad or dst.requires_grad)
    if grad:
        _view_base_check(dst, "copy_")
        if src.requires_grad:  # the gradient flows to src, summed over what broadcasting repeated
            src = src.expand(*shape).to(dst.dtype) if src._shape != shape or src.dtype is not dst.dtype else src
            src = src.clone()
    elif overlaps(dst, src):
        src = src.clone()
    check(lib.pf_copy(src._d(), dst._d()))
    dst._bump()
    if grad:
        if src.requires_grad:
            _take_history(dst, src)
        else:  # overwritten by a constant: nothing flows back
            _overwritten(dst, "CopyBackwards")
    return dst


def _overwritten(dst: Tensor, name: str) -> None:
    """``dst`` was overwritten by constants: it keeps requiring grad, with zero gradient to its past."""
    record(name, lambda g: (mul(g, 0.0),), (dst,), dst)  # noqa: F821


def fill_(dst: Tensor, value) -> Tensor:
    dst._write_check(same_value=True)
    if isinstance(value, Tensor):
        if value._numel != 1:
            raise ValueError(f"fill_ only supports a 0-d value tensor, got shape {list(value._shape)}")
        value = value.item()
    fvalue, ivalue = _dtype.scalar_value(value, dst.dtype, "fill value")
    grad = dst.requires_grad and _grad_mode.enabled
    if grad:
        _view_base_check(dst, "fill_")
    check(lib.pf_fill(dst._d(), fvalue, ivalue))
    dst._bump()
    if grad:
        _overwritten(dst, "FillBackward0")
    return dst


def zero_(dst: Tensor) -> Tensor:
    return fill_(dst, 0)


def clamp_(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    return copy_(x, clamp(x, min, max))
