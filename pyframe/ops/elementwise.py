"""Elementwise ops: each is one row naming its C op code; the fast path (same shape,
contiguous, one dtype) is one allocation and one C call."""

from __future__ import annotations

import math

from pyframe import _dtype
from pyframe._backend import SMALL_BYTES, alloc_large, alloc_small, check, lib
from pyframe._dtype import bool_, float32
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


# ---- unary ------------------------------------------------------------------------------


def _make_unary(name: str, op: int, floating: bool, result=None):
    """An op ``f(x)``. ``floating``: integer inputs are computed in float32, as PyTorch.
    ``result``: a fixed output dtype (bool for predicates)."""

    def fn(x: Tensor) -> Tensor:
        if not isinstance(x, Tensor):
            raise TypeError(f"{name}(): expected a Tensor, got {type(x).__name__}")
        dt = x.dtype
        if floating and not dt.is_floating_point:
            x = cast(x, float32)
            dt = float32
        out_dt = result or dt
        if not x._contig:
            out = empty_tensor(x._shape, out_dt)
            check(lib.pf_unary(op, x._d(), out._d(), 0.0, 0.0))
            return out
        n = x._numel
        nbytes = n * out_dt.itemsize
        data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
        rc = _unary_contig(op, dt.code, x._ptr, data, n)
        if rc:
            check(rc)
        return fresh(data, nbytes, x._shape, x._strides, n, out_dt)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Same as torch.{name}."
    return fn


_UNARY = {
    # name: (op code, computes in floating point)
    "neg": (lib.PF_NEG, False),
    "abs": (lib.PF_ABS, False),
    "exp": (lib.PF_EXP, True),
    "log": (lib.PF_LOG, True),
    "sqrt": (lib.PF_SQRT, True),
    "rsqrt": (lib.PF_RSQRT, True),
    "tanh": (lib.PF_TANH, True),
    "sigmoid": (lib.PF_SIGMOID, True),
    "relu": (lib.PF_RELU, False),
    "sin": (lib.PF_SIN, True),
    "cos": (lib.PF_COS, True),
    "sign": (lib.PF_SIGN, False),
    "reciprocal": (lib.PF_RECIPROCAL, True),
    "square": (lib.PF_SQUARE, False),
    "erf": (lib.PF_ERF, True),
    "log1p": (lib.PF_LOG1P, True),
    "expm1": (lib.PF_EXPM1, True),
    "floor": (lib.PF_FLOOR, False),
    "ceil": (lib.PF_CEIL, False),
    "round": (lib.PF_ROUND, False),
}
_PREDICATES = {
    "isnan": lib.PF_ISNAN,
    "isinf": lib.PF_ISINF,
    "isfinite": lib.PF_ISFINITE,
    "logical_not": lib.PF_LOGICAL_NOT,
}

unary_ops = {name: _make_unary(name, op, fl) for name, (op, fl) in _UNARY.items()}
unary_ops.update({name: _make_unary(name, op, False, bool_) for name, op in _PREDICATES.items()})
globals().update(unary_ops)

_identity_for_int = {"floor", "ceil", "round"}
for _name in _identity_for_int:
    _float_only = unary_ops[_name]

    def _rounding(x: Tensor, _f=_float_only) -> Tensor:
        return x.clone() if not x.dtype.is_floating_point else _f(x)

    _rounding.__name__ = _rounding.__qualname__ = _name
    unary_ops[_name] = globals()[_name] = _rounding


def _sign(x: Tensor, _f=unary_ops["sign"]) -> Tensor:
    """Same as torch.sign; a bool tensor is its own sign (the core has no bool row)."""
    return x.clone() if isinstance(x, Tensor) and x.dtype is bool_ else _f(x)


_sign.__name__ = _sign.__qualname__ = "sign"
unary_ops["sign"] = globals()["sign"] = _sign


def _unary_params(op: int, x: Tensor, p0: float, p1: float, out: Tensor | None = None) -> Tensor:
    if out is None:
        out = empty_tensor(x._shape, x.dtype)
    check(lib.pf_unary(op, x._d(), out._d(), p0, p1))
    return out


def clamp(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Same as torch.clamp; ``min``/``max`` may be numbers or tensors."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x
        if min is not None:
            out = maximum(out, min)  # noqa: F821 - bound by globals().update below
        if max is not None:
            out = minimum(out, max)  # noqa: F821
        return out
    dt = result_type(x, *(v for v in (min, max) if v is not None))
    x = as_tensor_of(x, dt)
    lo = -math.inf if min is None else float(min)
    hi = math.inf if max is None else float(max)
    return _unary_params(lib.PF_CLAMP, x, lo, hi)


clip = clamp


def relu6(x: Tensor) -> Tensor:
    return clamp(x, 0, 6)


# ---- binary -----------------------------------------------------------------------------


def _make_binary(name: str, op: int, kind: str):
    """An op ``f(a, b)`` with broadcasting and promotion.
    kind: "arith" (promoted dtype), "float" (floating result, int/int -> float32),
    "compare" (bool result)."""
    out_bool = kind == "compare"

    def fn(a, b) -> Tensor:
        # fast path: one dtype, one shape, both contiguous
        if (
            type(a) is Tensor and type(b) is Tensor and a.dtype is b.dtype and a._shape == b._shape
            and a._contig and b._contig and (kind != "float" or a.dtype.is_floating_point)
        ):  # fmt: skip
            dt = a.dtype
            out_dt = bool_ if out_bool else dt
            n = a._numel
            nbytes = n * out_dt.itemsize
            data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
            rc = _binary_contig(op, dt.code, a._ptr, b._ptr, data, n)
            if rc:
                check(rc)
            return fresh(data, nbytes, a._shape, a._strides, n, out_dt)
        return _binary(op, a, b, kind, name)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Same as torch.{name}."
    return fn


def _binary(op: int, a, b, kind: str, name: str, out: Tensor | None = None) -> Tensor:
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"{name}(): expected at least one Tensor, got {type(a).__name__} and {type(b).__name__}")
    dt = result_type(a, b)
    if kind == "float" and not dt.is_floating_point:
        dt = float32
    if kind == "arith" and dt is bool_ and name in ("sub", "pow", "remainder", "floor_divide"):
        raise TypeError(f"{name}: not supported for two bool tensors; use logical ops (~, ^, |, &) on masks")
    a = as_tensor_of(a, dt)
    b = as_tensor_of(b, dt)
    shape = broadcast_shapes(a._shape, b._shape)
    if out is None:
        out = empty_tensor(shape, bool_ if kind == "compare" else dt)
        check(lib.pf_binary(op, a._d(), b._d(), out._d()))
        return out
    # in place: compute in the promoted dtype, into `out` directly when that is safe
    check_inplace_shape(out, shape, name + "_")
    check_inplace_dtype(out, dt, name + "_")
    if dt is out.dtype and not overlaps(out, a) and not overlaps(out, b):
        check(lib.pf_binary(op, a._d(), b._d(), out._d()))
    else:
        tmp = empty_tensor(shape, dt)
        check(lib.pf_binary(op, a._d(), b._d(), tmp._d()))
        check(lib.pf_copy(tmp._d(), out._d()))
    out._bump()
    return out


_BINARY = {
    "add": (lib.PF_ADD, "arith"),
    "sub": (lib.PF_SUB, "arith"),
    "mul": (lib.PF_MUL, "arith"),
    "div": (lib.PF_DIV, "float"),
    "pow": (lib.PF_POW, "arith"),
    "maximum": (lib.PF_MAXIMUM, "arith"),
    "minimum": (lib.PF_MINIMUM, "arith"),
    "atan2": (lib.PF_ATAN2, "float"),
    "remainder": (lib.PF_REMAINDER, "arith"),
    "floor_divide": (lib.PF_FLOOR_DIVIDE, "arith"),
    "eq": (lib.PF_EQ, "compare"),
    "ne": (lib.PF_NE, "compare"),
    "lt": (lib.PF_LT, "compare"),
    "le": (lib.PF_LE, "compare"),
    "gt": (lib.PF_GT, "compare"),
    "ge": (lib.PF_GE, "compare"),
    "logical_and": (lib.PF_LOGICAL_AND, "compare"),
    "logical_or": (lib.PF_LOGICAL_OR, "compare"),
    "logical_xor": (lib.PF_LOGICAL_XOR, "compare"),
}

binary_ops = {name: _make_binary(name, op, kind) for name, (op, kind) in _BINARY.items()}
globals().update(binary_ops)
true_divide = divide = binary_ops["div"]
multiply = binary_ops["mul"]
subtract = binary_ops["sub"]
greater, greater_equal, less, less_equal = gt, ge, lt, le  # noqa: F821 - bound just above
not_equal = ne  # noqa: F821


def _make_inplace(name: str):
    op, kind = _BINARY[name]

    def fn(self: Tensor, other) -> Tensor:
        self._write_check()
        return _binary(op, self, other, kind, name, out=self)

    fn.__name__ = fn.__qualname__ = name + "_"
    fn.__doc__ = f"Same as torch.Tensor.{name}_."
    return fn


__all__ = [
    *unary_ops, *binary_ops, "true_divide", "divide", "multiply", "subtract", "greater", "greater_equal", "less",
    "less_equal", "not_equal", "clamp", "clip", "relu6", "where", "masked_fill", "triu", "tril",
]  # fmt: skip

inplace_ops = {name + "_": _make_inplace(name) for name in ("add", "sub", "mul", "div", "pow", "remainder")}


def add_scaled(a: Tensor, b, alpha=1):
    """``a + alpha * b`` (torch.add's ``alpha``)."""
    return binary_ops["add"](a, b if alpha == 1 else binary_ops["mul"](b, alpha))


def where(condition: Tensor, a, b) -> Tensor:
    """Same as torch.where(condition, a, b)."""
    if not isinstance(condition, Tensor) or condition.dtype is not bool_:
        got = condition.dtype.name if isinstance(condition, Tensor) else type(condition).__name__
        raise TypeError(f"where: condition must be a bool tensor, got {got}")
    dt = result_type(a, b)
    a, b = as_tensor_of(a, dt), as_tensor_of(b, dt)
    out = empty_tensor(broadcast_shapes(condition._shape, a._shape, b._shape), dt)
    check(lib.pf_where(condition._d(), a._d(), b._d(), out._d()))
    return out


def masked_fill(x: Tensor, mask: Tensor, value) -> Tensor:
    """Same as torch.masked_fill: ``value`` where ``mask`` is true."""
    if isinstance(value, Tensor):
        if value._numel != 1:
            raise ValueError(f"masked_fill only supports a 0-d value tensor, got shape {list(value._shape)}")
        value = value.item()
    if not isinstance(mask, Tensor) or mask.dtype is not bool_:
        raise TypeError("masked_fill: mask must be a bool tensor")
    out = where(mask, scalar_tensor(value, x.dtype), x)
    if out._shape != x._shape:
        check_inplace_shape(x, out._shape, "masked_fill")
    return out


def masked_fill_(x: Tensor, mask: Tensor, value) -> Tensor:
    return copy_(x, masked_fill(x, mask, value))


def _tri(x: Tensor, diagonal: int, upper: bool) -> Tensor:
    if x.ndim < 2:
        raise ValueError(f"{'triu' if upper else 'tril'}: input must have at least 2 dims, got {x.ndim}")
    from pyframe.factory import arange

    rows, cols = x._shape[-2:]
    r = arange(rows).reshape(rows, 1)
    c = arange(cols).reshape(1, cols)
    offset = binary_ops["sub"](c, r)
    mask = binary_ops["ge"](offset, diagonal) if upper else binary_ops["le"](offset, diagonal)
    return where(mask, x, scalar_tensor(0, x.dtype))


def triu(x: Tensor, diagonal: int = 0) -> Tensor:
    """Same as torch.triu."""
    return _tri(x, diagonal, True)


def tril(x: Tensor, diagonal: int = 0) -> Tensor:
    """Same as torch.tril."""
    return _tri(x, diagonal, False)


# ---- writes into existing tensors ---------------------------------------------------------


def copy_(dst: Tensor, src) -> Tensor:
    """Same as torch.Tensor.copy_: broadcasts ``src`` to ``dst`` and converts dtype."""
    dst._write_check()
    if not isinstance(src, Tensor):
        src = scalar_tensor(src, dst.dtype)
    shape = broadcast_shapes(dst._shape, src._shape)
    check_inplace_shape(dst, shape, "copy_")
    if overlaps(dst, src):
        src = src.clone()
    check(lib.pf_copy(src._d(), dst._d()))
    dst._bump()
    return dst


def fill_(dst: Tensor, value) -> Tensor:
    dst._write_check()
    if isinstance(value, Tensor):
        if value._numel != 1:
            raise ValueError(f"fill_ only supports a 0-d value tensor, got shape {list(value._shape)}")
        value = value.item()
    if not isinstance(value, (int, float, bool)):
        raise TypeError(f"fill_: expected a number, got {type(value).__name__}")
    if not dst.dtype.is_floating_point and isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"fill_: cannot fill a {dst.dtype.name} tensor with {value}")
    ivalue = int(value) if dst.dtype is not _dtype.bool_ else int(bool(value))
    check(lib.pf_fill(dst._d(), float(value), ivalue))
    dst._bump()
    return dst


def zero_(dst: Tensor) -> Tensor:
    return fill_(dst, 0)


def clamp_(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    return copy_(x, clamp(x, min, max))
