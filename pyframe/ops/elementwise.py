"""Elementwise ops. A unary, binary or comparison op is one row below: its name, its C op code and its derivative.
Each kind has one private implementation (``_apply_unary``, ``_apply_binary``) behind the op's general path, its
``out=`` form and its in-place form; in front of it, the op's fast path (same shape, contiguous, one dtype) is one
allocation and one C call."""

from __future__ import annotations

import math
import warnings
from functools import partial
from inspect import Parameter, Signature, signature
from typing import NamedTuple

from pyframe import _dtype, _grad_mode
from pyframe._backend import SMALL_BYTES, alloc_large, alloc_small, check, lib
from pyframe._dtype import DEFAULT_FOR_CATEGORY as _DEFAULTS
from pyframe._dtype import as_number, bool_, float32
from pyframe.autograd.graph import SavedOutput, record, record_pair, saved_names
from pyframe.ops._common import (
    as_tensor_of,
    broadcast_shapes,
    cast,
    check_inplace_dtype,
    check_inplace_shape,
    check_operands,
    overlaps,
    result_type,
    scalar_tensor,
    shares_memory,
)
from pyframe.tensor import Tensor, empty_tensor, fresh, set_data

_unary_contig = lib.pf_unary_contig
_binary_contig = lib.pf_binary_contig
_binary_scalar = lib.pf_binary_scalar
_float64 = _dtype.float64
_EXACT = 1 << 53  # ints up to this size are exact as the C entry's double
# whole numbers up to these sizes are exact in each float dtype: pow raises to a larger whole exponent in double
_WHOLE_EXACT = {"float32": 1 << 24, "bfloat16": 1 << 8, "float16": 1 << 11}


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


def with_derivative(name: str, forward, derivative, *inputs, saves_output: bool = False) -> Tensor:
    """``forward(*inputs)`` recorded as one node whose backward is ``derivative(g, *inputs[, y])``: one gradient
    per input (None for none; broadcasting is summed away here), written with the ops so that it is
    differentiable again. A piecewise op states its convention at the points where it switches in its
    derivative this way (torch's), instead of inheriting whatever its composition's derivative gives there."""
    if not (_grad_mode.enabled and any(isinstance(t, Tensor) and t._requires_grad for t in inputs)):
        return forward(*inputs)
    with _grad_mode.no_grad():
        y = forward(*inputs)
    ys = y.detach() if saves_output else None  # detached: the node must not hold its own output (a cycle)

    def backward(g):
        gs = derivative(g, *inputs, ys) if saves_output else derivative(g, *inputs)
        gs = (gs,) if gs is None or isinstance(gs, Tensor) else gs
        return tuple(_grad_to(gi, x) for gi, x in zip(gs, inputs, strict=True))

    saved = tuple(t for t in inputs if isinstance(t, Tensor))
    record(name, backward, inputs, y, saved + ((ys,) if saves_output else ()))
    return y


def _view_base_check(t: Tensor, name: str) -> None:
    if t._base is not None:
        raise RuntimeError(
            f"{name}: in-place operation on a view of a tensor that takes part in autograd is not supported; "
            "use the out-of-place op or clone() the view first"
        )


def _check_out(out: Tensor, dt, shape: tuple, label: str, inplace: bool, grad: bool) -> None:
    """``out`` may take a result of dtype ``dt`` and ``shape``. As torch, an empty ``out=`` tensor is resized to
    the result (other shapes must match: a tensor's shape is fixed here), and ``out=`` does not record autograd."""
    out._write_check()
    check_inplace_dtype(out, dt, label)
    if grad and not inplace:
        raise RuntimeError(
            f"{label}(): functions with out=... arguments don't support automatic differentiation, "
            "but one of the arguments requires grad."
        )
    if not inplace and out._numel == 0 and out._shape != shape:
        set_data(out, empty_tensor(shape, out.dtype))
    check_inplace_shape(out, shape, label)


# ---- unary ------------------------------------------------------------------------------


class _Unary(NamedTuple):
    name: str
    op: int  # the C op code
    saves: str  # what the derivative reads: "x" (the input), "y" (the output), "xy" or ""
    grad: object  # grad(g, x, y[, p]) -> the input's gradient; None: not differentiable
    floating: bool  # integer and bool inputs compute in the default float dtype (torch's rule)
    copies: tuple  # dtypes on which the op is the identity
    result: object  # a fixed result dtype, or None: the (computing) input's
    param: object  # param(*args, **kwargs) -> the kernel's p0 from the op's further arguments (None: p0 unused)
    backward_name: str


# torch's names of what a unary node keeps, by what its derivative reads
_SAVED = {"x": ("_saved_self",), "y": ("_saved_result",), "xy": ("_saved_self", "_saved_result"), "": ()}


def _make_unary(name, op, saves="", grad=None, *, floating=True, copies=(), result=None, param=None):
    """The op ``name(input, *, out=None)`` and its in-place form ``name_(input)`` of one row. An op with
    ``param`` takes its further arguments after ``input`` (``logit(input, eps=None)``); the C kernel gets
    p0 = ``param(...)`` and p1 = 1, or p0 = p1 = 0 (the contiguous entry's) when that is None."""
    u = _Unary(name, op, saves, grad, floating, copies, result, param, name.capitalize() + "Backward0")
    saved_names(u.backward_name, _SAVED[saves])

    def fn(input, *, out=None):  # noqa: A002 - torch's parameter name
        # the fast path: a contiguous tensor of a dtype the kernel takes, into a new tensor
        if out is None and type(input) is Tensor and input._contig:
            dt = input.dtype
            if (dt.is_floating_point or not floating) and dt not in copies:
                out_dt = result or dt
                n = input._numel
                nbytes = n * out_dt.itemsize
                data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
                rc = _unary_contig(op, dt.code, input._ptr, data, n)
                if rc:
                    check(rc)
                y = fresh(data, nbytes, input._shape, input._strides, n, out_dt)
                if grad is not None and input._requires_grad and _grad_mode.enabled:
                    _record_unary(u, input, y, None)
                return y
        return _apply_unary(u, input, out)

    def fn_(input):  # noqa: A002
        # the fast path: a contiguous tensor outside autograd, rewritten in its own memory
        if type(input) is Tensor and input._contig and not (input._requires_grad and _grad_mode.enabled):
            dt = input.dtype
            if (dt.is_floating_point or not floating) and dt not in copies:
                input._write_check()
                rc = _unary_contig(op, dt.code, input._ptr, input._ptr, input._numel)
                if rc:
                    check(rc)
                input._bump()
                return input
        return _apply_unary(u, input, input)

    if param is not None:
        plain = fn

        def fn(input, *args, out=None, **kwargs):  # noqa: A002
            p = param(*args, **kwargs)
            return plain(input, out=out) if p is None else _apply_unary(u, input, out, p)

        def fn_(input, *args, **kwargs):  # noqa: A002
            return _apply_unary(u, input, input, param(*args, **kwargs))

        params = [Parameter("input", Parameter.POSITIONAL_OR_KEYWORD), *signature(param).parameters.values()]
        fn_.__signature__ = Signature(params)
        fn.__signature__ = Signature([*params, Parameter("out", Parameter.KEYWORD_ONLY, default=None)])

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Same as torch.{name}."
    fn_.__name__ = fn_.__qualname__ = name + "_"
    fn_.__doc__ = f"Same as torch.Tensor.{name}_: {name} written into this tensor."
    return fn, fn_


unary_ops: dict = {}  # name -> op, filled by the rows below
inplace_unary_ops: dict = {}  # name_ -> its in-place form


def _unary(name, op, saves="", grad=None, **kw):
    """One unary op's row (see _Unary): the op and its in-place form."""
    fn, fn_ = _make_unary(name, op, saves, grad, **kw)
    unary_ops[name], inplace_unary_ops[name + "_"] = fn, fn_
    return fn, fn_


def _predicate(name, op):
    """A unary op with a bool result (no in-place form, no derivative)."""
    fn = unary_ops[name] = _make_unary(name, op, floating=False, result=bool_)[0]
    return fn


def _apply_unary(u: _Unary, x, out=None, p=None) -> Tensor:
    """``u``'s op on ``x`` into a new tensor (``out`` None), into ``out``, or in place (``out is x``)."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{u.name}(): expected a Tensor, got {type(x).__name__}")
    dt = x.dtype
    res = u.result or (_DEFAULTS[2] if u.floating and not dt.is_floating_point else dt)
    if out is None:
        if dt in u.copies:
            return x.clone()
        if u.result is None and res is not dt:
            x = cast(x, res)
        y = _unary_into(u, x, empty_tensor(x._shape, res), p)
        if u.grad is not None and x.requires_grad and _grad_mode.enabled:
            _record_unary(u, x, y, p)
        return y
    inplace = out is x
    grad = u.grad is not None and _grad_mode.enabled and (x.requires_grad or out.requires_grad)
    _check_out(out, res, x._shape, u.name + "_" if inplace else u.name, inplace, grad)
    if grad:
        # the graph reads a copy of x (its derivative may save it), and copy_ carries the history into x
        return copy_(x, _apply_unary(u, x.clone(), None, p))
    if dt in u.copies:
        return x if inplace else copy_(out, x)
    if u.result is None and res is not dt:
        x = cast(x, res)
    if out.dtype is res and not overlaps(out, x):
        _unary_into(u, x, out, p)
    else:
        check(lib.pf_copy(_unary_into(u, x, empty_tensor(x._shape, res), p)._d(), out._d()))
    out._bump()
    return out


def _unary_into(u: _Unary, x: Tensor, out: Tensor, p) -> Tensor:
    if p is None and x._contig and out._contig:
        rc = _unary_contig(u.op, x.dtype.code, x._ptr, out._ptr, x._numel)
        if rc:
            check(rc)
    else:
        check(lib.pf_unary(u.op, x._d(), out._d(), 0.0 if p is None else p, 0.0 if p is None else 1.0))
    return out


def _record_unary(u: _Unary, x: Tensor, y: Tensor, p) -> None:
    # the backward holds only what the derivative reads (None for the rest), and the output as a SavedOutput:
    # holding y itself would make y -> grad_fn -> backward -> y, a cycle only the cyclic GC frees
    saves, grad = u.saves, u.grad
    if "y" in saves:
        ys = SavedOutput(y)
        xs = x if saves == "xy" else None
        saved = (x, ys) if xs is not None else (ys,)
        backward = (lambda g: (grad(g, xs, ys()),)) if u.param is None else (lambda g: (grad(g, xs, ys(), p),))
    else:
        xs = x if saves == "x" else None
        saved = (x,) if xs is not None else ()
        backward = (lambda g: (grad(g, xs, None),)) if u.param is None else (lambda g: (grad(g, xs, None, p),))
    record(u.backward_name, backward, (x,), y, saved)


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


def _zero_grad(g, x, y):
    return mul(g, 0.0)


_INTS_AND_BOOL = (_dtype.int64, _dtype.int32, _dtype.int16, _dtype.int8, _dtype.uint8, bool_)
_SQRT_PI = math.sqrt(math.pi)
# The unary ops, one row each: name, name_ = _unary(name, C op code, what the derivative reads (the input x,
# the output y), derivative(g, x, y), options of _make_unary). Derivatives use the ops themselves, bound below.
# fmt: off
neg, neg_ = _unary("neg", lib.PF_NEG, "", lambda g, x, y: neg(g), floating=False)
abs, abs_ = _unary("abs", lib.PF_ABS, "x", lambda g, x, y: mul(g, sign(x)), floating=False)
exp, exp_ = _unary("exp", lib.PF_EXP, "y", lambda g, x, y: mul(g, y))
log, log_ = _unary("log", lib.PF_LOG, "x", lambda g, x, y: div(g, x))
sqrt, sqrt_ = _unary("sqrt", lib.PF_SQRT, "y", lambda g, x, y: div(g, mul(y, 2.0)))
rsqrt, rsqrt_ = _unary("rsqrt", lib.PF_RSQRT, "y", lambda g, x, y: mul(g, mul(pow(y, 3.0), -0.5)))
tanh, tanh_ = _unary("tanh", lib.PF_TANH, "y",
                     _fused_grad(lib.PF_TANH_BACKWARD, lambda g, x, y: mul(g, sub(1.0, mul(y, y)))))
sigmoid, sigmoid_ = _unary("sigmoid", lib.PF_SIGMOID, "y",
                           _fused_grad(lib.PF_SIGMOID_BACKWARD, lambda g, x, y: mul(g, mul(y, sub(1.0, y)))))
# y <= 0 masks, not y > 0: a NaN output passes its gradient on, as torch's threshold_backward
relu, relu_ = _unary("relu", lib.PF_RELU, "y",
                     _fused_grad(lib.PF_RELU_BACKWARD, lambda g, x, y: where(le(y, 0), 0.0, g)), floating=False)
sin, sin_ = _unary("sin", lib.PF_SIN, "x", lambda g, x, y: mul(g, cos(x)))
cos, cos_ = _unary("cos", lib.PF_COS, "x", lambda g, x, y: neg(mul(g, sin(x))))
sign, sign_ = _unary("sign", lib.PF_SIGN, "", _zero_grad, floating=False, copies=(bool_,))
reciprocal, reciprocal_ = _unary("reciprocal", lib.PF_RECIPROCAL, "y", lambda g, x, y: neg(mul(g, mul(y, y))))
square, square_ = _unary("square", lib.PF_SQUARE, "x", lambda g, x, y: mul(g, mul(x, 2.0)), floating=False)
erf, erf_ = _unary("erf", lib.PF_ERF, "x", lambda g, x, y: mul(g, mul(exp(neg(mul(x, x))), 2.0 / _SQRT_PI)))
log1p, log1p_ = _unary("log1p", lib.PF_LOG1P, "x", lambda g, x, y: div(g, add(x, 1.0)))
expm1, expm1_ = _unary("expm1", lib.PF_EXPM1, "y", lambda g, x, y: mul(g, add(y, 1.0)))
floor, floor_ = _unary("floor", lib.PF_FLOOR, "", _zero_grad, floating=False, copies=_INTS_AND_BOOL)
ceil, ceil_ = _unary("ceil", lib.PF_CEIL, "", _zero_grad, floating=False, copies=_INTS_AND_BOOL)
round, round_ = _unary("round", lib.PF_ROUND, "", _zero_grad, floating=False, copies=_INTS_AND_BOOL)
trunc, trunc_ = _unary("trunc", lib.PF_TRUNC, "", _zero_grad, floating=False, copies=_INTS_AND_BOOL)
tan, tan_ = _unary("tan", lib.PF_TAN, "y", lambda g, x, y: mul(g, add(mul(y, y), 1.0)))
sinh, sinh_ = _unary("sinh", lib.PF_SINH, "x", lambda g, x, y: mul(g, cosh(x)))
cosh, cosh_ = _unary("cosh", lib.PF_COSH, "x", lambda g, x, y: mul(g, sinh(x)))
asin, asin_ = _unary("asin", lib.PF_ASIN, "x", lambda g, x, y: mul(g, rsqrt(sub(1.0, mul(x, x)))))
acos, acos_ = _unary("acos", lib.PF_ACOS, "x", lambda g, x, y: neg(mul(g, rsqrt(sub(1.0, mul(x, x))))))
atan, atan_ = _unary("atan", lib.PF_ATAN, "x", lambda g, x, y: div(g, add(mul(x, x), 1.0)))
asinh, asinh_ = _unary("asinh", lib.PF_ASINH, "x", lambda g, x, y: mul(g, rsqrt(add(mul(x, x), 1.0))))
acosh, acosh_ = _unary("acosh", lib.PF_ACOSH, "x", lambda g, x, y: mul(g, rsqrt(sub(mul(x, x), 1.0))))
atanh, atanh_ = _unary("atanh", lib.PF_ATANH, "x", lambda g, x, y: div(g, sub(1.0, mul(x, x))))
log2, log2_ = _unary("log2", lib.PF_LOG2, "x", lambda g, x, y: div(g, mul(x, math.log(2.0))))
log10, log10_ = _unary("log10", lib.PF_LOG10, "x", lambda g, x, y: div(g, mul(x, math.log(10.0))))
exp2, exp2_ = _unary("exp2", lib.PF_EXP2, "y", lambda g, x, y: mul(g, mul(y, math.log(2.0))))
erfc, erfc_ = _unary("erfc", lib.PF_ERFC, "x", lambda g, x, y: mul(g, mul(exp(neg(mul(x, x))), -2.0 / _SQRT_PI)))
# eps: x clamped to [eps, 1 - eps] first, with gradient 0 outside (None or negative: no clamp, NaN outside [0, 1])
logit, logit_ = _unary("logit", lib.PF_LOGIT, "x", lambda g, x, y, eps: where(
    logical_or(lt(x, eps or 0.0), gt(x, 1.0 - (eps or 0.0))), math.nan if eps is None else 0.0,
    div(g, mul(x, sub(1.0, x)))), param=lambda eps=None: None if eps is None or eps < 0 else float(eps))
isnan = _predicate("isnan", lib.PF_ISNAN)
isinf = _predicate("isinf", lib.PF_ISINF)
isfinite = _predicate("isfinite", lib.PF_ISFINITE)
logical_not = _predicate("logical_not", lib.PF_LOGICAL_NOT)
# fmt: on


def _unary_params(op: int, x: Tensor, p0: float, p1: float) -> Tensor:
    out = empty_tensor(x._shape, x.dtype)
    check(lib.pf_unary(op, x._d(), out._d(), p0, p1))
    return out


def clamp(input: Tensor, min=None, max=None) -> Tensor:  # noqa: A002 - PyTorch's names
    """Same as torch.clamp; ``min``/``max`` may be numbers or tensors."""
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    check_operands("clamp", input, min if min is not None else max, "other")
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        # a number beside a tensor bound is a 0-d tensor of its own (maximum and minimum take tensors only)
        min, max = (v if v is None or isinstance(v, Tensor) else as_tensor_of(v, result_type(input, v))
                    for v in (min, max))  # fmt: skip
        return with_derivative("ClampBackward0", _clamp_tensors, _clamp_tensors_grad, input, min, max)
    dt = result_type(input, *(v for v in (min, max) if v is not None))
    input = as_tensor_of(input, dt)
    for name, v in (("min", min), ("max", max)):
        if v is not None:
            _dtype.scalar_value(v, dt, f"clamp {name}", fill=True)  # torch refuses a bound outside the dtype
    lo = -math.inf if min is None else float(min)
    hi = math.inf if max is None else float(max)
    out = _unary_params(lib.PF_CLAMP, input, lo, hi)
    if input.requires_grad and _grad_mode.enabled:
        inside = logical_and(ge(input, lo), le(input, hi))
        record("ClampBackward1", lambda g: (where(inside, g, 0.0),), (input,), out)
    return out


def _clamp_tensors(x, lo, hi):
    out = x
    if lo is not None:
        out = maximum(out, lo)
    if hi is not None:
        out = minimum(out, hi)
    return out


def _clamp_tensors_grad(g, x, lo, hi):
    """torch's: x gets g where lo <= x <= hi (at the bounds too; NaN: 0), lo where x < lo (and lo < hi), hi where
    x > hi (or hi < lo)."""
    if lo is None or hi is None:
        bound = lo if hi is None else hi
        inside = ge(x, bound) if hi is None else le(x, bound)
        outside = lt(x, bound) if hi is None else gt(x, bound)
        gb = where(outside, g, 0.0)
        return where(inside, g, 0.0), (gb if hi is None else None), (None if hi is None else gb)
    gx = where(logical_and(ge(x, lo), le(x, hi)), g, 0.0)
    glo = where(logical_and(lt(x, lo), lt(lo, hi)), g, 0.0)
    ghi = where(logical_or(gt(x, hi), lt(hi, lo)), g, 0.0)
    return gx, glo, ghi


clip = clamp


def hardtanh_grad(g, x, lo: float, hi: float):
    """The derivative of clamp(x, lo, hi) as torch's hardtanh/relu6: 0 at the bounds themselves (clamp's own
    passes the gradient there), g strictly inside and at NaN."""
    return where(logical_or(le(x, lo), ge(x, hi)), 0.0, g)


def relu6(input: Tensor) -> Tensor:
    """Same as torch.relu6: clamp(x, 0, 6) with gradient 0 at 0 and at 6 (torch's hardtanh convention)."""
    return with_derivative("HardtanhBackward0", lambda x: clamp(x, 0, 6), lambda g, x: hardtanh_grad(g, x, 0, 6),
                           input)  # fmt: skip


# ---- binary -----------------------------------------------------------------------------


class _Binary(NamedTuple):
    name: str
    op: int  # the C op code
    kind: str  # "arith" (the promoted dtype), "float" (int/int -> float), "compare" (bool)
    grad: object  # grad(g, a, b, y, need_a, need_b) -> (grad a, grad b) before broadcasting is summed away
    saves: bool  # the derivative reads a or b
    backward_name: str
    numbers: str = "either"  # which operands may be Python numbers: "both", "either", "other", "none" (check_operands)
    reads: tuple = ("ab", "ab")  # which operands the gradient of a, and of b, reads


def _kept(row: _Binary, a, b, need_a: bool, need_b: bool) -> tuple:
    """The operands ``row``'s backward reads given which gradients are needed (None for the others), as torch's
    nodes save them: ``x * mask`` keeps the mask alone when only ``x`` needs a gradient, so ``x`` is freed when
    nothing else holds it, and may be changed in place before backward."""
    ra, rb = row.reads
    return (
        a if (need_a and "a" in ra) or (need_b and "a" in rb) else None,
        b if (need_a and "b" in ra) or (need_b and "b" in rb) else None,
    )


binary_ops: dict = {}  # name -> op, filled by the rows below
_binary_rows: dict = {}  # name -> its _Binary


def _binary(name: str, op: int, kind: str, grad=None, reads: tuple = ("", ""), numbers: str = "either"):
    """One binary op's row: ``name(input, other, out=None)``, broadcasting; ``numbers`` as in ``check_operands``;
    ``reads``: which operands (``"a"``, ``"b"``) the gradient of the first and of the second reads."""
    saves = any(reads)
    b = _binary_rows[name] = _Binary(name, op, kind, grad, saves, name.capitalize() + "Backward0", numbers, reads)
    strict_input, strict_other = numbers not in ("either", "both"), numbers == "none"
    if saves:  # torch's names of what the node keeps (pow also reads its output)
        saved_names(b.backward_name, ("_saved_self", "_saved_exponent", "_saved_result") if name == "pow" else
                    ("_saved_self", "_saved_other"))  # fmt: skip
    out_bool, floating = kind == "compare", kind == "float"
    # the lean recording of the fast path below (pow may promote and reads its output: _record_binary)
    lean = name != "pow" and grad is not None

    # out= is positional-or-keyword here: a keyword-only default costs `x + y` a dict lookup per call
    def fn(input, other, out=None) -> Tensor:  # noqa: A002 - torch's parameter names
        # fast paths: two contiguous tensors of one dtype and shape, or a contiguous float tensor and a Python
        # number outside autograd; then one allocation and one C call
        if (
            type(input) is Tensor and type(other) is Tensor and input.dtype is other.dtype
            and input._shape == other._shape and input._contig and other._contig
            and (not floating or input.dtype.is_floating_point) and out is None
        ):  # fmt: skip
            dt = input.dtype
            out_dt = bool_ if out_bool else dt
            n = input._numel
            nbytes = n * out_dt.itemsize
            data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
            rc = _binary_contig(op, dt.code, input._ptr, other._ptr, data, n)
            if rc:
                check(rc)
            y = fresh(data, nbytes, input._shape, input._strides, n, out_dt)
            if (input._requires_grad or other._requires_grad) and grad is not None and _grad_mode.enabled:
                if lean:
                    na, nb = input._requires_grad, other._requires_grad
                    ka, kb = _kept(b, input, other, na, nb) if saves else (None, None)
                    ta = (input._shape, dt) if na else None
                    tb = (other._shape, dt) if nb else None
                    backward = partial(_binary_backward, grad, ka, kb, ta, tb)
                    record_pair(b.backward_name, backward, input, other, y, (ka, kb) if saves else None)
                else:
                    _record_binary(b, input, other, input, other, y)
            return y
        if type(input) is Tensor:
            x, s, first = input, other, 0
        else:
            x, s, first = other, input, 1
        if (strict_input or not isinstance(x, Tensor)) if first else (strict_other and not isinstance(s, Tensor)):
            check_operands(name, input, other, numbers)
            if not isinstance(x, Tensor) and not isinstance(s, Tensor):  # two numbers (numbers="both"): torch
                # wraps input as a 0-d tensor
                return fn(as_tensor_of(input, result_type(input, other)), other, out)
        if not (
            type(x) is Tensor and x._contig and (x.dtype is float32 or x.dtype is _float64)
            and (type(s) is float or (type(s) is int and -_EXACT <= s <= _EXACT))
            and not (x._requires_grad and _grad_mode.enabled) and out is None
        ):  # fmt: skip
            return _apply_binary(b, input, other, out)
        dt = x.dtype
        out_dt = bool_ if out_bool else dt
        n = x._numel
        nbytes = n * out_dt.itemsize
        data = (alloc_small if nbytes < SMALL_BYTES else alloc_large)("char[]", nbytes or 1)
        rc = _binary_scalar(op, dt.code, x._ptr, s, data, n, first)
        if rc:
            check(rc)
        return fresh(data, nbytes, x._shape, x._strides, n, out_dt)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Same as torch.{name}."
    binary_ops[name] = fn
    return fn


# the binary ops of other layouts, by Tensor subclass: pyframe.ops.sparse registers its handler
# (name, a, b, out) -> result here, as this module cannot import it
sparse_binary: dict = {}


def _apply_binary(row: _Binary, a, b, out=None, alpha=1) -> Tensor:
    """``row``'s op on ``a`` and ``b`` into a new tensor (``out`` None), into ``out``, or in place (``out is a``);
    ``alpha`` (add and sub of two tensors only): ``a +- alpha * b`` in one C pass (``_run_binary``)."""
    if sparse_binary and (type(a) in sparse_binary or type(b) in sparse_binary):
        return sparse_binary[type(a) if type(a) in sparse_binary else type(b)](row.name, a, b, out)
    name, kind = row.name, row.kind
    a, b = as_number(a), as_number(b)
    check_operands(name, a, b, row.numbers)
    inplace = out is a
    label = name + "_" if inplace else name
    dt = result_type(a, b)
    if kind == "float" and not dt.is_floating_point:
        dt = _DEFAULTS[2]
    if kind == "arith" and dt is bool_ and name in ("sub", "pow", "remainder", "floor_divide"):
        raise TypeError(f"{label}: not supported for two bool tensors; use logical ops (~, ^, |, &) on masks")
    res = bool_ if kind == "compare" else dt
    grad = row.grad is not None and _grad_mode.enabled and any(getattr(t, "requires_grad", False) for t in (a, b, out))
    shape = broadcast_shapes(getattr(a, "_shape", ()), getattr(b, "_shape", ()))
    if out is not None:
        _check_out(out, res, shape, label, inplace, grad)
    if (dt is _dtype.float16 and (_past_half(a) or _past_half(b))) or (
        (dt is _dtype.float16 or dt is _dtype.bfloat16) and name in _SCALAR_IN_FLOAT and (_number(a) or _number(b))
    ):
        # torch computes half ops in float32 and rounds once: x - 2**31 is -inf, not inf - inf = nan; and
        # add/sub/mul/div take a Python number unrounded (as float32): bf16 * 1.001 is not bf16 * 1.0
        wide = _apply_binary(row, _widen(a), _widen(b))
        wide = wide if kind == "compare" else wide.to(dt)
        return wide if out is None else copy_(out, wide)
    a0, b0 = a, b
    a, b = as_tensor_of(a, dt), as_tensor_of(b, dt)
    exponent = b0 if name == "pow" and _whole_past(b0, dt) else None
    if out is None:
        out = empty_tensor(shape, res)
        _run_binary(row, a, b, out, alpha, exponent)
    else:
        if grad:  # the derivative reads the operands as they were before the write: a copy of those it reads
            _view_base_check(out, label)
            ka, kb = _kept(row, a, b, getattr(a0, "requires_grad", False), getattr(b0, "requires_grad", False))
            a = cast(a, dt) if a is a0 and ka is not None else a
            b = cast(b, dt) if kb is not None and b is b0 and isinstance(b, Tensor) and shares_memory(out, b) else b
        if out.dtype is res and not overlaps(out, a) and not overlaps(out, b):
            _run_binary(row, a, b, out, alpha, exponent)
        else:
            tmp = empty_tensor(shape, res)
            _run_binary(row, a, b, tmp, alpha, exponent)
            check(lib.pf_copy(tmp._d(), out._d()))
        out._bump()
    if grad:
        _record_binary(row if alpha == 1 else _alpha_row(row, alpha), a0, b0, a, b, out)
    return out


def _whole_past(e, dt) -> bool:
    """Whether ``e`` is a Python whole number too large for float dtype ``dt`` to hold exactly."""
    limit = _WHOLE_EXACT.get(dt.name)
    if limit is None or type(e) not in (int, float) or -limit <= e <= limit:
        return False
    return -(2**1024) < e < 2**1024 if type(e) is int else e.is_integer()  # a larger int is no double: the usual error


def _run_binary(row: _Binary, a: Tensor, b: Tensor, out: Tensor, alpha, exponent=None) -> None:
    """The C pass of ``out = a op b``; with ``alpha`` (add, sub) ``a +- alpha * b`` as torch's fused multiply-add:
    one pass and one rounding, with no tensor of ``alpha * b`` in between. ``exponent`` (pow): the Python whole
    number ``b`` rounds, raised to as a double, which keeps its parity (-1 ** -(2**31 + 1) is -1, not 1)."""
    if exponent is not None:
        check(lib.pf_unary(lib.PF_POW_SCALAR, a._d(), out._d(), float(exponent), 0.0))
        return
    if alpha == 1:
        check(lib.pf_binary(row.op, a._d(), b._d(), out._d()))
        return
    dt = out.dtype
    lo, hi = _ALPHA_RANGE[dt.name]
    if not lo <= alpha <= hi and (not dt.is_floating_point or math.isfinite(alpha)):
        raise RuntimeError(f"{row.name}(): value cannot be converted to type {_C_NAMES.get(dt.name, dt.name)} without "
                           f"overflow: alpha={alpha}")  # fmt: skip
    if row.name == "sub":
        alpha = -alpha
    if dt.is_floating_point:
        check(lib.pf_axpy(a._d(), b._d(), float(alpha), 0, out._d()))
    else:  # integer alpha wraps as the dtype's arithmetic does
        check(lib.pf_axpy(a._d(), b._d(), 0.0, (int(alpha) + 2**63) % 2**64 - 2**63, out._d()))


# the alphas torch converts to each dtype (unsigned: magnitudes up to the max, as c10's overflow check)
_ALPHA_RANGE = {"float32": (-3.4028234663852886e38, 3.4028234663852886e38), "float64": (-math.inf, math.inf),
                "float16": (-65504.0, 65504.0), "bfloat16": (-3.3895313892515355e38, 3.3895313892515355e38),
                "int64": (-(2**63), 2**63 - 1), "int32": (-(2**31), 2**31 - 1), "int16": (-(2**15), 2**15 - 1),
                "int8": (-128, 127), "uint8": (-255, 255)}  # fmt: skip
_C_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "bfloat16": "c10::BFloat16",
            "int64": "int64_t", "int32": "int", "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t"}  # fmt: skip


def _alpha_row(row: _Binary, alpha) -> _Binary:
    """``row`` (add or sub) with ``alpha``: the second operand's gradient is ``+-alpha * g`` (torch's AddBackward0
    and SubBackward0 with alpha)."""
    scale = -alpha if row.name == "sub" else alpha
    return row._replace(grad=lambda g, a, b, y, na, nb: (g, mul(g, scale) if nb else None))


def _record_binary(row: _Binary, a0, b0, a: Tensor, b: Tensor, out: Tensor) -> None:
    """Record ``out = row(a, b)``; a0/b0 are the caller's operands (before promotion)."""
    name, grad = row.name, row.grad
    if name != "pow":  # only pow reads its output: the others must not hold it (out -> node -> closure -> out
        # would be a reference cycle, keeping every result alive until the garbage collector runs). A partial
        # is two objects where a closure over five names is seven, on the path of every recorded binary op.
        # The operands' shapes and dtypes are kept, not the operands: those the derivative does not read are
        # freed when nothing else holds them.
        na, nb = getattr(a0, "requires_grad", False), getattr(b0, "requires_grad", False)
        ka, kb = _kept(row, a, b, na, nb) if row.saves else (None, None)
        backward = partial(_binary_backward, grad, ka, kb, (a0._shape, a0.dtype) if na else None,
                           (b0._shape, b0.dtype) if nb else None)  # fmt: skip
        if a is a0 and b is b0:  # two tensors, nothing promoted: the lean recording
            record_pair(row.backward_name, backward, a, b, out, (ka, kb) if row.saves else None)
        else:
            record(row.backward_name, backward, (a0, b0), out, (ka, kb) if row.saves else ())
        return
    if name == "pow":  # a and b may be promoted copies: which grads are needed comes from a0 and b0
        need = (getattr(a0, "requires_grad", False), getattr(b0, "requires_grad", False))
        scalar = None if isinstance(b0, Tensor) else float(b0)
        ys = SavedOutput(out)  # the output itself would be a cycle through its node

        def backward(g):
            if scalar is not None:  # torch's: g e x^(e - 1) through pow with a number (its sqrt/rsqrt forms)
                return _grad_to(where(eq(b, 0.0), 0.0, mul(g, mul(pow(a, scalar - 1.0), scalar))), a0), None
            ga, gb = grad(g, a, b, ys(), *need)
            return _grad_to(ga, a0), _grad_to(gb, b0)

    record(row.backward_name, backward, (a0, b0), out, (a, b, ys))


def _binary_backward(deriv, a, b, ta, tb, g):
    """The gradients of a binary op: ``ta``/``tb`` are the operands' (shape, dtype), None for one that needs none;
    ``a``/``b`` what the derivative reads (None where it reads nothing)."""
    ga, gb = deriv(g, a, b, None, ta is not None, tb is not None)
    return _grad_as(ga, ta), _grad_as(gb, tb)


def _grad_as(g: Tensor | None, t: tuple | None) -> Tensor | None:
    """``g`` for an operand of (shape, dtype) ``t``: broadcasting summed away, in its dtype."""
    if g is None or t is None:
        return None
    g = unbroadcast(g, t[0])
    return g if g.dtype is t[1] else cast(g, t[1])


def _past_half(x) -> bool:
    """A Python number that float16 cannot hold (it would round to inf)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and not -65504 <= x <= 65504


# the binary ops whose CPU kernels take a Python number in float32 for 16-bit float tensors (torch's opmath)
_SCALAR_IN_FLOAT = frozenset(("add", "sub", "mul", "div"))


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _widen(x):
    return x.to(float32) if isinstance(x, Tensor) and (x.dtype is _dtype.float16 or x.dtype is _dtype.bfloat16) else x


def _half_ties(g, a, b, a_loses, b_loses, need_a=True, need_b=True):
    """maximum/minimum as torch: the loser gets 0, ties split the gradient, and where a comparison fails (NaN on
    either side) both get all of it."""
    shared = where(eq(a, b), mul(g, 0.5), g)
    return where(a_loses, 0.0, shared) if need_a else None, where(b_loses, 0.0, shared) if need_b else None


def _pow_grad(g, a, b, y, need_a=True, need_b=True):
    """torch's: d/da is 0 where b = 0 (also at a = 0, where b * a^(b - 1) is 0 * inf), else g b a^(b - 1); d/db is
    0 where a = 0 and b >= 0, else g y log(a) (NaN for a negative base, -inf y for 0^negative)."""
    ga = where(eq(b, 0.0), 0.0, mul(g, mul(b, pow(a, sub(b, 1.0))))) if need_a else None
    return ga, where(logical_and(eq(a, 0.0), ge(b, 0.0)), 0.0, mul(g, mul(y, log(a)))) if need_b else None


def _atan2_grad(g, a, b, y, need_a=True, need_b=True):
    """g b / r^2 and -g a / r^2, both 0 at the origin (torch's convention there)."""
    r2 = add(mul(a, a), mul(b, b))
    at0 = eq(r2, 0.0)
    r2 = where(at0, 1.0, r2)
    return (where(at0, 0.0, div(mul(g, b), r2)) if need_a else None,
            where(at0, 0.0, neg(div(mul(g, a), r2))) if need_b else None)  # fmt: skip


# The binary and comparison ops, one row each: name = _binary(name, C op code, result kind,
# derivative(g, a, b, y, need_a, need_b) -> (grad a, grad b) (None for one not needed), which operands the
# gradient of a and of b reads: the node keeps only those its needed gradients read).
# fmt: off
# torch's arithmetic takes two Python numbers too (add(2, 3) is tensor(5)): numbers="both"
plain_add = _binary("add", lib.PF_ADD, "arith", lambda g, a, b, y, na, nb: (g, g),
                    numbers="both")  # `a + b`: no alpha to look at
plain_sub = _binary("sub", lib.PF_SUB, "arith", lambda g, a, b, y, na, nb: (g, neg(g) if nb else None),
                    numbers="both")
mul = _binary("mul", lib.PF_MUL, "arith",
              lambda g, a, b, y, na, nb: (mul(g, b) if na else None, mul(g, a) if nb else None), ("b", "a"),
              numbers="both")
div = _binary("div", lib.PF_DIV, "float", lambda g, a, b, y, na, nb: (
    div(g, b) if na else None, neg(div(mul(g, a), mul(b, b))) if nb else None), ("b", "ab"), numbers="both")
pow = _binary("pow", lib.PF_POW, "arith", _pow_grad, ("ab", "ab"))
maximum = _binary("maximum", lib.PF_MAXIMUM, "arith",
                  lambda g, a, b, y, na, nb: _half_ties(g, a, b, lt(a, b), gt(a, b), na, nb), ("ab", "ab"),
                  numbers="none")
minimum = _binary("minimum", lib.PF_MINIMUM, "arith",
                  lambda g, a, b, y, na, nb: _half_ties(g, a, b, gt(a, b), lt(a, b), na, nb), ("ab", "ab"),
                  numbers="none")
atan2 = _binary("atan2", lib.PF_ATAN2, "float", _atan2_grad, ("ab", "ab"), numbers="none")
remainder = _binary("remainder", lib.PF_REMAINDER, "arith",
                    lambda g, a, b, y, na, nb: (g, neg(mul(g, floor_divide(a, b))) if nb else None), ("", "ab"))
_pow_row = pow


def pow(input, exponent, out=None) -> Tensor:  # noqa: A001, A002 - torch's names
    """Same as torch.pow. A float tensor to the number 0.5 or -0.5 is sqrt/rsqrt, as torch computes it
    (pow(-inf, 0.5) is NaN, not inf, and so is the gradient of x^1.5 there)."""
    if (type(exponent) is float and (exponent == 0.5 or exponent == -0.5) and type(input) is Tensor
            and input.dtype.is_floating_point):  # fmt: skip
        return (sqrt if exponent == 0.5 else rsqrt)(input, out=out)
    return _pow_row(input, exponent, out)


binary_ops["pow"] = pow
floor_divide = _binary("floor_divide", lib.PF_FLOOR_DIVIDE, "arith",
                       lambda g, a, b, y, na, nb: (mul(g, 0.0) if na else None, mul(g, 0.0) if nb else None),
                       numbers="both")
eq = _binary("eq", lib.PF_EQ, "compare", numbers="other")
ne = _binary("ne", lib.PF_NE, "compare", numbers="other")
lt = _binary("lt", lib.PF_LT, "compare", numbers="other")
le = _binary("le", lib.PF_LE, "compare", numbers="other")
gt = _binary("gt", lib.PF_GT, "compare", numbers="other")
ge = _binary("ge", lib.PF_GE, "compare", numbers="other")
logical_and = _binary("logical_and", lib.PF_LOGICAL_AND, "compare", numbers="none")
logical_or = _binary("logical_or", lib.PF_LOGICAL_OR, "compare", numbers="none")
logical_xor = _binary("logical_xor", lib.PF_LOGICAL_XOR, "compare", numbers="none")
# fmt: on


def _scaled(input, other, alpha):  # noqa: A002
    """``alpha * other`` in the result's dtype, as torch: a bfloat16 ``other`` added to a float64 tensor is scaled
    in float64, not rounded to bfloat16 first."""
    if alpha == 1:
        return other
    if isinstance(other, Tensor):
        dt = result_type(input, other)
        if other.dtype is not dt:
            other = other.to(dt)  # .to records the cast for autograd
    return mul(other, alpha)


def _fused_alpha(name: str, input, other, alpha) -> bool:  # noqa: A002
    """Whether ``input +- alpha * other`` takes the one-pass C path: two dense tensors of a dtype other than bool
    (a Python number or a sparse operand is scaled first). Checks alpha's type as torch does."""
    if alpha == 1:
        return False
    if isinstance(alpha, float) and not result_type(input, other).is_floating_point:
        raise TypeError(f"{name}(): for integral input tensors, argument alpha must not be a floating "
                        f"point number, got {alpha}")  # fmt: skip
    return (type(input) is Tensor and type(other) is Tensor and type(alpha) in (int, float)
            and result_type(input, other) is not bool_)  # fmt: skip


def _with_alpha(fn, sign: str):
    row = _binary_rows[fn.__name__]

    def scaled(input, other, *, alpha=1, out=None) -> Tensor:  # noqa: A002
        if _fused_alpha(fn.__name__, input, other, alpha):
            return _apply_binary(row, input, other, out, alpha)
        return fn(input, _scaled(input, other, alpha), out=out)

    scaled.__name__ = scaled.__qualname__ = fn.__name__
    scaled.__doc__ = f"Same as torch.{fn.__name__}: ``input {sign} alpha * other``."
    return scaled


add = binary_ops["add"] = _with_alpha(plain_add, "+")
sub = binary_ops["sub"] = _with_alpha(plain_sub, "-")
true_divide = divide = div
multiply = mul
subtract = sub
greater, greater_equal, less, less_equal = gt, ge, lt, le
not_equal = ne


def _make_inplace(name: str):
    row = _binary_rows[name]
    if name in ("add", "sub"):

        def fn(self: Tensor, other, *, alpha=1) -> Tensor:
            if _fused_alpha(name + "_", self, other, alpha):
                return _apply_binary(row, self, other, self, alpha)
            return _apply_binary(row, self, _scaled(self, other, alpha), self)

    else:

        def fn(self: Tensor, other) -> Tensor:
            return _apply_binary(row, self, other, self)

    fn.__name__ = fn.__qualname__ = name + "_"
    fn.__doc__ = f"Same as torch.Tensor.{name}_."
    return fn


inplace_ops = {name + "_": _make_inplace(name) for name in ("add", "sub", "mul", "div", "pow", "remainder")}


def write_back(input: Tensor, fn, *args, **kwargs) -> Tensor:  # noqa: A002
    """``fn(input, *args)`` written into ``input``, with the history carried by ``copy_``. Under
    autograd ``fn`` reads a copy: its graph may save its input, which the write would otherwise
    change under it (torch keeps the original ``self`` the same way); without a graph no copy."""
    source = input.clone() if input.requires_grad and _grad_mode.enabled else input
    return copy_(input, fn(source, *args, **kwargs))


__all__ = [
    *unary_ops, *inplace_unary_ops, *binary_ops, "true_divide", "divide", "multiply", "subtract", "greater",
    "greater_equal", "less", "less_equal", "not_equal", "clamp", "clip", "relu6", "where", "masked_fill",
]  # fmt: skip


def where(condition: Tensor, input=None, other=None) -> Tensor:  # noqa: A002 - torch's parameter names
    """Same as torch.where(condition, input, other); ``where(condition)`` alone is
    ``nonzero(condition, as_tuple=True)``."""
    if input is None and other is None:
        return condition.nonzero(as_tuple=True)  # the method: index.py builds on this module
    a, b = input, other
    if isinstance(condition, Tensor) and condition.dtype is _dtype.uint8:
        warnings.warn(
            "where received a uint8 condition tensor. This behavior is deprecated (as in torch); use a bool condition",
            UserWarning,
            stacklevel=2,
        )
        condition = ne(condition, 0)
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
        # the operands' shapes and dtypes, not the operands: backward reads only the condition
        ta = (a0._shape, a0.dtype) if need_a else None
        tb = (b0._shape, b0.dtype) if need_b else None

        def backward(g):
            return (
                _grad_as(where(condition, g, zero), ta) if need_a else None,
                _grad_as(where(condition, zero, g), tb) if need_b else None,
            )

        record("WhereBackward0", backward, (a0, b0), out)
    return out


def masked_fill(input: Tensor, mask: Tensor, value) -> Tensor:
    """Same as torch.masked_fill: ``value`` where ``mask`` is true (``input`` and ``mask`` broadcast)."""
    if isinstance(value, Tensor):
        if value.ndim:
            raise ValueError(f"masked_fill only supports a 0-dimensional value tensor, got shape {list(value._shape)}")
        if not (value.requires_grad and _grad_mode.enabled):
            value = value.item()
    if not isinstance(mask, Tensor) or mask.dtype is not bool_:
        raise TypeError("masked_fill: mask must be a bool tensor")
    if isinstance(value, Tensor):  # a value that requires grad gets the gradient of the filled places
        value = value.reshape(()) if value.dtype is input.dtype else value.reshape(()).to(input.dtype)
    if not isinstance(value, Tensor):
        value = scalar_tensor(value, input.dtype, "masked_fill value", True)
    return where(mask, value, input)  # input and mask broadcast together, as torch's out-of-place form


def masked_fill_(x: Tensor, mask: Tensor, value) -> Tensor:
    """Same as torch.Tensor.masked_fill_: ``value`` written where ``mask`` (broadcast to ``x``) is True; returns
    ``x``.
    """
    if (out := masked_fill(x, mask, value))._shape != x._shape:
        check_inplace_shape(x, out._shape, "masked_fill_")
    return copy_(x, out)


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
    if dst.is_meta:  # into a meta tensor: nothing to write (torch's no-op)
        return dst
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
    record(name, lambda g: (mul(g, 0.0),), (dst,), dst)


def fill_(dst: Tensor, value) -> Tensor:
    """Same as torch.Tensor.fill_: every element of ``dst`` set to ``value`` (a number or a one-element tensor)."""
    dst._write_check(same_value=True)
    if dst.is_meta:  # a meta tensor has no elements to set
        return dst
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
    """Same as torch.Tensor.zero_: every element of ``dst`` set to 0; returns ``dst``."""
    return fill_(dst, 0)


def clamp_(x: Tensor, min=None, max=None) -> Tensor:  # noqa: A002
    """Same as torch.Tensor.clamp_: ``clamp`` written into ``x``; returns ``x``."""
    return copy_(x, clamp(x, min, max))
