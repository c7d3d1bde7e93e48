"""Exporters of pyframe's math: elementwise functions and operators, comparisons, casts, reductions,
softmax, matrix products and ``linear``."""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

import pyframe
from pyframe import _dtype
from pyframe.onnx._context import Context, OnnxExporterError, V, fns, get, norm_axes, onnx_type, out_dtype
from pyframe.onnx._registry import exporter

# ---- elementwise -------------------------------------------------------------------------------------
_UNARY = {
    "neg": "Neg", "abs": "Abs", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos", "tan": "Tan",
    "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh", "cosh": "Cosh", "tanh": "Tanh",
    "sigmoid": "Sigmoid", "relu": "Relu", "erf": "Erf", "floor": "Floor", "ceil": "Ceil", "sign": "Sign",
    "reciprocal": "Reciprocal", "round": "Round", "logical_not": "Not", "softsign": "Softsign", "selu": "Selu",
    "hardswish": "HardSwish",
}  # fmt: skip


def _unary_exporter(op_type: str):
    def export(ctx: Context, args: tuple, kwargs: dict) -> V:
        x = ctx.cast(args[0], out_dtype(ctx)) if op_type not in ("Not", "Sign", "Abs", "Neg") else ctx.v(args[0])
        return ctx.op(op_type, [x])

    return export


for _name, _op in _UNARY.items():
    exporter(_name, fns(_name) + fns(_name, f=True) + ((operator.neg,) if _name == "neg" else ()) +
             ((operator.abs,) if _name == "abs" else ()) + ((operator.invert,) if _name == "logical_not" else ()),
             (_name, f"{_name}_"), onnx=_op)(_unary_exporter(_op))  # fmt: skip


def _composite(name: str, onnx: str, functional: bool = True, methods: bool = True):
    return exporter(name, fns(name) + (fns(name, f=True) if functional else ()),
                    (name, f"{name}_") if methods else (), onnx=onnx)  # fmt: skip


@_composite("rsqrt", "Sqrt, Reciprocal")
def _rsqrt(ctx, args, kwargs):
    return ctx.op("Reciprocal", [ctx.op("Sqrt", [ctx.cast(args[0], out_dtype(ctx))])])


@_composite("square", "Mul")
def _square(ctx, args, kwargs):
    x = ctx.cast(args[0], out_dtype(ctx))
    return ctx.op("Mul", [x, x])


@_composite("log1p", "Add, Log")
def _log1p(ctx, args, kwargs):
    x = ctx.cast(args[0], out_dtype(ctx))
    return ctx.op("Log", [ctx.op("Add", [x, ctx.v(1.0, x.dtype)])])


@_composite("silu", "Sigmoid, Mul")
def _silu(ctx, args, kwargs):
    x = ctx.v(args[0])
    return ctx.op("Mul", [x, ctx.op("Sigmoid", [x])])


@_composite("gelu", "Erf or Tanh, Mul, Add")
def _gelu(ctx, args, kwargs):
    x = ctx.v(args[0])
    dt = x.dtype
    if get(args, kwargs, 1, "approximate", "none") == "tanh":
        inner = ctx.op("Mul", [ctx.v(math.sqrt(2 / math.pi), dt), ctx.op("Add", [x, ctx.op("Mul", [
            ctx.v(0.044715, dt), ctx.op("Pow", [x, ctx.v(3.0, dt)])])])])  # fmt: skip
        t = ctx.op("Tanh", [inner])
    else:
        t = ctx.op("Erf", [ctx.op("Mul", [x, ctx.v(1 / math.sqrt(2), dt)])])
    return ctx.op("Mul", [ctx.op("Mul", [x, ctx.v(0.5, dt)]), ctx.op("Add", [t, ctx.v(1.0, dt)])])


def _softplus_v(ctx: Context, x: V, beta: float = 1.0) -> V:
    if beta == 1.0:
        return ctx.op("Softplus", [x])
    return ctx.op("Div", [ctx.op("Softplus", [ctx.op("Mul", [x, ctx.v(beta, x.dtype)])]), ctx.v(beta, x.dtype)])


@_composite("softplus", "Softplus")
def _softplus(ctx, args, kwargs):
    return _softplus_v(ctx, ctx.v(args[0]), get(args, kwargs, 1, "beta", 1.0))


@_composite("mish", "Softplus, Tanh, Mul")
def _mish(ctx, args, kwargs):
    x = ctx.v(args[0])
    return ctx.op("Mul", [x, ctx.op("Tanh", [ctx.op("Softplus", [x])])])


@_composite("logsigmoid", "Softplus, Neg")
def _logsigmoid(ctx, args, kwargs):
    return ctx.op("Neg", [ctx.op("Softplus", [ctx.op("Neg", [ctx.v(args[0])])])])


@_composite("hardsigmoid", "HardSigmoid")
def _hardsigmoid(ctx, args, kwargs):
    return ctx.op("HardSigmoid", [ctx.v(args[0])], alpha=1 / 6, beta=0.5)


@_composite("leaky_relu", "LeakyRelu")
def _leaky_relu(ctx, args, kwargs):
    return ctx.op("LeakyRelu", [ctx.v(args[0])], alpha=float(get(args, kwargs, 1, "negative_slope", 0.01)))


@_composite("elu", "Elu")
def _elu(ctx, args, kwargs):
    return ctx.op("Elu", [ctx.v(args[0])], alpha=float(get(args, kwargs, 1, "alpha", 1.0)))


@_composite("celu", "Celu")
def _celu(ctx, args, kwargs):
    return ctx.op("Celu", [ctx.v(args[0])], alpha=float(get(args, kwargs, 1, "alpha", 1.0)))


def _clip(ctx: Context, x: Any, lo: Any, hi: Any) -> V:
    x = ctx.v(x)
    conv = lambda b: None if b is None else ctx.cast(b, x.dtype)  # noqa: E731
    return ctx.op("Clip", [x, conv(lo), conv(hi)])


@_composite("hardtanh", "Clip")
def _hardtanh(ctx, args, kwargs):
    return _clip(ctx, args[0], get(args, kwargs, 1, "min_val", -1.0), get(args, kwargs, 2, "max_val", 1.0))


@_composite("relu6", "Clip")
def _relu6(ctx, args, kwargs):
    return _clip(ctx, args[0], 0.0, 6.0)


@exporter("clamp", fns("clamp", "clip", "clamp_min", "clamp_max"), ("clamp", "clip", "clamp_", "clip_"), onnx="Clip")
def _clamp(ctx, args, kwargs):
    lo, hi = get(args, kwargs, 1, "min"), get(args, kwargs, 2, "max")
    if ctx.target_name == "clamp_max":
        lo, hi = None, get(args, kwargs, 1, "max")
    return _clip(ctx, ctx.cast(args[0], out_dtype(ctx)), lo, hi)


_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "true_divide": "Div", "pow": "Pow",
           "maximum": "Max", "minimum": "Min", "remainder": "Mod", "fmod": "Mod"}  # fmt: skip
_OPERATORS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
              "pow": operator.pow, "remainder": operator.mod}  # fmt: skip


def _binary_exporter(name: str, op_type: str):
    def export(ctx: Context, args: tuple, kwargs: dict) -> V:
        dt = out_dtype(ctx)
        a, b = args[0], get(args, kwargs, 1, "other")
        alpha = kwargs.get("alpha", 1)
        if alpha != 1:
            b = ctx.op("Mul", [ctx.cast(b, dt), ctx.v(alpha, dt)])
        if op_type == "Pow" and not isinstance(b, V) and dt.is_floating_point:
            return ctx.op("Pow", [ctx.cast(a, dt), ctx.v(float(b), dt)])
        attrs = {"fmod": int(dt.is_floating_point)} if op_type == "Mod" else {}
        if op_type == "Mod" and name == "remainder" and dt.is_floating_point:  # Python's sign rule
            a, b = ctx.cast(a, dt), ctx.cast(b, dt)
            return ctx.op("Sub", [a, ctx.op("Mul", [ctx.op("Floor", [ctx.op("Div", [a, b])]), b])])
        return ctx.op(op_type, [ctx.cast(a, dt), ctx.cast(b, dt)], **attrs)

    return export


for _name, _op in _BINARY.items():
    _ops = (_OPERATORS[_name],) if _name in _OPERATORS else ()
    exporter(_name, fns(_name) + _ops, (_name, f"{_name}_"), onnx=_op)(_binary_exporter(_name, _op))


@exporter("floor_divide", fns("floor_divide") + (operator.floordiv,), ("floor_divide",), onnx="Div, Floor")
def _floor_divide(ctx, args, kwargs):
    dt = out_dtype(ctx) or _dtype.int64
    a, b = args[0], args[1]
    if dt.is_floating_point:
        return ctx.op("Floor", [ctx.op("Div", [ctx.cast(a, dt), ctx.cast(b, dt)])])
    # integer floor division: Div truncates, so correct where the signs differ and there is a remainder
    a, b = ctx.cast(a, dt), ctx.cast(b, dt)
    q = ctx.op("Div", [a, b])
    fix = ctx.op("And", [ctx.op("Less", [ctx.op("Mul", [a, b]), ctx.v(0, dt)]),
                         ctx.op("Not", [ctx.op("Equal", [ctx.op("Mul", [q, b]), a])])])  # fmt: skip
    return ctx.op("Sub", [q, ctx.op("Cast", [fix], to=onnx_type(dt))])


_COMPARE = {"eq": ("Equal", operator.eq), "ne": ("Equal", operator.ne), "lt": ("Less", operator.lt),
            "le": ("LessOrEqual", operator.le), "gt": ("Greater", operator.gt), "ge": ("GreaterOrEqual", operator.ge),
            "logical_and": ("And", operator.and_), "logical_or": ("Or", operator.or_),
            "logical_xor": ("Xor", operator.xor)}  # fmt: skip


def _common_dtype(a: Any, b: Any):
    ta = a.dtype if isinstance(a, V) else None
    tb = b.dtype if isinstance(b, V) else None
    if ta is not None and tb is not None:
        return pyframe.promote_types(ta, tb)
    t, other = (ta, b) if ta is not None else (tb, a)
    if isinstance(other, float) and not t.is_floating_point:
        return _dtype.float32
    return t


def _compare_exporter(name: str, op_type: str):
    def export(ctx: Context, args: tuple, kwargs: dict) -> V:
        a, b = args[0], get(args, kwargs, 1, "other")
        dt = _dtype.bool_ if op_type in ("And", "Or", "Xor") else _common_dtype(a, b)
        out = ctx.op(op_type, [ctx.cast(a, dt), ctx.cast(b, dt)])
        return ctx.op("Not", [out]) if name == "ne" else out

    return export


for _name, (_op, _pyop) in _COMPARE.items():
    _f = fns(_name) + (_pyop,)
    exporter(_name, _f, (_name,) + (("not_equal", "greater", "less") if False else ()), onnx=_op)(
        _compare_exporter(_name, _op))  # fmt: skip


@exporter("where", fns("where"), ("where",), onnx="Where")
def _where(ctx, args, kwargs):
    if ctx.kind == "call_method":  # x.where(cond, other)
        x, cond, other = args[0], args[1], args[2]
    else:
        cond, x, other = args[0], get(args, kwargs, 1, "input"), get(args, kwargs, 2, "other")
    dt = out_dtype(ctx)
    return ctx.op("Where", [ctx.cast(cond, _dtype.bool_), ctx.cast(x, dt), ctx.cast(other, dt)])


@exporter("masked_fill", fns("masked_fill"), ("masked_fill", "masked_fill_"), onnx="Where")
def _masked_fill(ctx, args, kwargs):
    x, mask, value = ctx.v(args[0]), get(args, kwargs, 1, "mask"), get(args, kwargs, 2, "value")
    return ctx.op("Where", [ctx.cast(mask, _dtype.bool_), ctx.cast(value, x.dtype), x])


@exporter("cast", (), ("to", "float", "double", "half", "long", "int", "bool", "type_as", "type"), onnx="Cast")
def _to(ctx, args, kwargs):
    return ctx.cast(ctx.v(args[0]), out_dtype(ctx))


@exporter("identity", fns("clone", "detach"), ("clone", "detach", "contiguous", "cpu", "requires_grad_"),
          onnx="Identity")  # fmt: skip
def _identity(ctx, args, kwargs):
    return ctx.op("Identity", [args[0]])


# ---- reductions and softmax -------------------------------------------------------------------------
def _reduction(op_type: str, name: str):
    def export(ctx: Context, args: tuple, kwargs: dict) -> Any:
        x = ctx.v(args[0])
        dim = get(args, kwargs, 1, "dim")
        keep = bool(get(args, kwargs, 2, "keepdim", False))
        dt = out_dtype(ctx)
        if isinstance(ctx.val, tuple):  # max/min with dim: (values, indices)
            axis = dim % x.rank if x.rank else 0
            values = ctx.reduce(op_type, x, [axis], keep)
            idx = ctx.op("ArgMax" if op_type == "ReduceMax" else "ArgMin", [x], axis=axis, keepdims=int(keep),
                         select_last_index=0)  # fmt: skip
            return (values, idx)
        if op_type in ("ReduceSum", "ReduceMean", "ReduceProd") and x.dtype is not dt:
            x = ctx.cast(x, dt)
        if op_type in ("ReduceMin", "ReduceMax") and x.dtype is _dtype.bool_:  # all/any
            r = ctx.reduce(op_type, ctx.cast(x, _dtype.int32), norm_axes(dim, x.rank), keep)
            return ctx.cast(r, _dtype.bool_)
        return ctx.reduce(op_type, x, norm_axes(dim, x.rank), keep)

    return export


for _name, _op, _rm in (("sum", "ReduceSum", "sum"), ("mean", "ReduceMean", "mean"), ("prod", "ReduceProd", "prod"),
                        ("amax", "ReduceMax", "amax"), ("amin", "ReduceMin", "amin"), ("max", "ReduceMax", "max"),
                        ("min", "ReduceMin", "min"), ("logsumexp", "ReduceLogSumExp", "logsumexp")):  # fmt: skip
    exporter(_name, fns(_name), (_rm,), onnx=_op)(_reduction(_op, _name))


@exporter("all/any", fns("all", "any"), ("all", "any"), onnx="Cast, ReduceMin/ReduceMax")
def _all_any(ctx, args, kwargs):
    return _reduction("ReduceMin" if ctx.target_name == "all" else "ReduceMax", "")(
        ctx, (ctx.cast(args[0], _dtype.bool_), *args[1:]), kwargs)  # fmt: skip


@exporter("argmax/argmin", fns("argmax", "argmin"), ("argmax", "argmin"), onnx="ArgMax/ArgMin")
def _argmax(ctx, args, kwargs):
    x = ctx.v(args[0])
    dim, keep = get(args, kwargs, 1, "dim"), bool(get(args, kwargs, 2, "keepdim", False))
    op = "ArgMax" if ctx.target_name == "argmax" else "ArgMin"
    if dim is None:
        x, dim = ctx.op("Reshape", [x, np.array([-1], np.int64)]), 0
        x.dtype, x.shape = ctx.val.dtype, (1,)
        return ctx.op(op, [x], axis=0, keepdims=0)
    return ctx.op(op, [x], axis=dim, keepdims=int(keep))


@exporter("var/std", fns("var", "std"), ("var", "std"), onnx="ReduceMean, Sub, Mul, Sqrt")
def _var(ctx, args, kwargs):
    x = ctx.v(args[0])
    dim, unbiased = get(args, kwargs, 1, "dim"), get(args, kwargs, 2, "unbiased")
    keep = bool(get(args, kwargs, 3, "keepdim", False))
    correction = kwargs.get("correction")
    correction = (1 if unbiased is None or unbiased else 0) if correction is None else correction
    axes = norm_axes(dim, x.rank) or list(range(x.rank))
    n = int(np.prod([x.shape[a] for a in axes])) if not x.dynamic else None
    mean = ctx.reduce("ReduceMean", x, axes, True)
    d = ctx.op("Sub", [x, mean])
    var = ctx.reduce("ReduceMean", ctx.op("Mul", [d, d]), axes, keep)
    if correction:
        if n is None:
            cnt = ctx.cast(ctx.reduce("ReduceProd", ctx.op("Gather", [ctx.shape(x), np.array(axes, np.int64)]),
                                      None, False), x.dtype)  # fmt: skip
        else:
            cnt = ctx.v(float(n), x.dtype)
        var = ctx.op("Div", [ctx.op("Mul", [var, cnt]), ctx.op("Sub", [cnt, ctx.v(float(correction), x.dtype)])])
    return ctx.op("Sqrt", [var]) if ctx.target_name == "std" else var


@exporter("norm", fns("norm"), ("norm",), onnx="ReduceL2/ReduceL1")
def _norm(ctx, args, kwargs):
    x = ctx.v(args[0])
    p, dim = get(args, kwargs, 1, "p", "fro"), get(args, kwargs, 2, "dim")
    keep = bool(get(args, kwargs, 3, "keepdim", False))
    op = {2: "ReduceL2", "fro": "ReduceL2", 1: "ReduceL1"}.get(p)
    if op is None:
        raise OnnxExporterError(f"norm with p={p!r} has no ONNX exporter (p=1, 2 and 'fro' do)")
    return ctx.reduce(op, x, norm_axes(dim, x.rank), keep)


def _softmax_exporter(op_type: str):
    def export(ctx: Context, args: tuple, kwargs: dict) -> V:
        x = ctx.cast(args[0], out_dtype(ctx))
        dim = get(args, kwargs, 1, "dim")
        if dim is None:
            dim = 0 if x.rank in (0, 1, 3) else 1  # torch's legacy implicit choice
        return ctx.op(op_type, [x], axis=int(dim))

    return export


exporter("softmax", fns("softmax") + fns("softmax", f=True), ("softmax",), onnx="Softmax")(_softmax_exporter("Softmax"))
exporter("log_softmax", fns("log_softmax") + fns("log_softmax", f=True), ("log_softmax",), onnx="LogSoftmax")(
    _softmax_exporter("LogSoftmax"))  # fmt: skip


# ---- products --------------------------------------------------------------------------------------
@exporter("matmul", fns("matmul", "mm", "bmm") + (operator.matmul,), ("matmul", "mm", "bmm"), onnx="MatMul")
def _matmul(ctx, args, kwargs):
    dt = out_dtype(ctx)
    return ctx.op("MatMul", [ctx.cast(args[0], dt), ctx.cast(args[1], dt)])


def linear(ctx: Context, x: V, w: V, b: Any) -> V:
    """``x @ w.T + b``: Gemm for 2-d inputs, else MatMul with the transposed weight (folded when constant)."""
    if x.rank == 2:
        return ctx.op("Gemm", [x, w, b], transB=1)
    wt = ctx.v(np.ascontiguousarray(ctx.value_of(w).T)) if w.const and ctx.fold else ctx.op("Transpose", [w])
    y = ctx.op("MatMul", [x, wt])
    return y if b is None else ctx.op("Add", [y, b])


@exporter("linear", fns("linear", f=True), (), onnx="Gemm or MatMul, Add")
def _linear(ctx, args, kwargs):
    return linear(ctx, ctx.v(args[0]), ctx.v(args[1]), get(args, kwargs, 2, "bias"))


# ---- more activations ---------------------------------------------------------------------------------
@exporter("softmin", fns("softmin", f=True), (), onnx="Neg, Softmax")
def _softmin(ctx, args, kwargs):
    x = ctx.cast(args[0], out_dtype(ctx))
    dim = get(args, kwargs, 1, "dim")
    dim = (0 if x.rank in (0, 1, 3) else 1) if dim is None else dim
    return ctx.op("Softmax", [ctx.op("Neg", [x])], axis=int(dim))


@exporter("threshold", fns("threshold", f=True), (), onnx="Greater, Where")
def _threshold(ctx, args, kwargs):
    x = ctx.v(args[0])
    th, value = get(args, kwargs, 1, "threshold"), get(args, kwargs, 2, "value")
    return ctx.op("Where", [ctx.op("Greater", [x, ctx.v(th, x.dtype)]), x, ctx.v(value, x.dtype)])


@exporter("tanhshrink", fns("tanhshrink", f=True), (), onnx="Tanh, Sub")
def _tanhshrink(ctx, args, kwargs):
    x = ctx.v(args[0])
    return ctx.op("Sub", [x, ctx.op("Tanh", [x])])


@exporter("hardshrink/softshrink", fns("hardshrink", "softshrink", f=True), (), onnx="Shrink")
def _shrink(ctx, args, kwargs):
    lambd = float(get(args, kwargs, 1, "lambd", 0.5))
    return ctx.op("Shrink", [ctx.v(args[0])], lambd=lambd, bias=lambd if ctx.target_name == "softshrink" else 0.0)


@exporter("rrelu", fns("rrelu", f=True), (), onnx="LeakyRelu (eval)")
def _rrelu(ctx, args, kwargs):
    lower, upper = get(args, kwargs, 1, "lower", 1 / 8), get(args, kwargs, 2, "upper", 1 / 3)
    if get(args, kwargs, 3, "training", False):
        raise OnnxExporterError("rrelu in training mode (random slopes) has no ONNX exporter: export in eval mode")
    return ctx.op("LeakyRelu", [ctx.v(args[0])], alpha=(lower + upper) / 2)


# ---- more products and scans ------------------------------------------------------------------------
@exporter("einsum", fns("einsum"), (), onnx="Einsum")
def _einsum(ctx, args, kwargs):
    operands = args[1:] if len(args) > 2 or not isinstance(args[1], (tuple, list)) else args[1]
    dt = out_dtype(ctx)
    return ctx.op("Einsum", [ctx.cast(o, dt) for o in operands], equation=args[0].replace(" ", ""))


@exporter("addmm", fns("addmm"), ("addmm",), onnx="Gemm")
def _addmm(ctx, args, kwargs):
    dt = out_dtype(ctx)
    c, a, b = (ctx.cast(get(args, kwargs, i, n), dt) for i, n in enumerate(("input", "mat1", "mat2")))
    return ctx.op("Gemm", [a, b, c], alpha=float(kwargs.get("alpha", 1)), beta=float(kwargs.get("beta", 1)))


@exporter("cumsum", fns("cumsum"), ("cumsum",), onnx="CumSum")
def _cumsum(ctx, args, kwargs):
    x = ctx.cast(args[0], out_dtype(ctx))
    return ctx.op("CumSum", [x, np.array(get(args, kwargs, 1, "dim") % max(x.rank, 1), np.int64)])
