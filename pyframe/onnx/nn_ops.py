"""Exporters of pyframe.nn.functional's layers: convolutions, normalisations, pooling, embedding, dropout,
padding. Modules made of these are traced through, so ``nn.Conv2d`` exports as ``F.conv2d`` does."""

from __future__ import annotations

from typing import Any

import numpy as np

from pyframe import _dtype
from pyframe.onnx._context import Context, OnnxExporterError, V, fns, get
from pyframe.onnx._registry import exporter
from pyframe.onnx.shape_ops import reshape


def _tuple(v: Any, n: int) -> list[int]:
    return [int(i) for i in v] if isinstance(v, (tuple, list)) else [int(v)] * n


def _channel_shape(ctx: Context, v: V, rank: int) -> V:
    """A per-channel (C,) value shaped to broadcast over (N, C, *spatial)."""
    return reshape(ctx, v, [-1] + [1] * (rank - 2))


# ---- convolutions ----------------------------------------------------------------------------------
def _conv(ctx: Context, args: tuple, kwargs: dict, n: int) -> V:
    x, w = ctx.v(args[0]), ctx.v(get(args, kwargs, 1, "weight"))
    b = get(args, kwargs, 2, "bias")
    stride = _tuple(get(args, kwargs, 3, "stride", 1), n)
    padding = get(args, kwargs, 4, "padding", 0)
    dilation = _tuple(get(args, kwargs, 5, "dilation", 1), n)
    groups = int(get(args, kwargs, 6, "groups", 1))
    kernel = list(w.shape[2:])
    if padding == "valid":
        pads = [0] * (2 * n)
    elif padding == "same":  # torch puts the odd extra element at the end
        total = [d * (k - 1) for d, k in zip(dilation, kernel, strict=True)]
        pads = [t // 2 for t in total] + [t - t // 2 for t in total]
    else:
        p = _tuple(padding, n)
        pads = p + p
    unbatched = x.rank == n + 1
    if unbatched:
        x = ctx.unsqueeze(x, [0])
    out = ctx.op("Conv", [x, w, b], kernel_shape=kernel, strides=stride, pads=pads, dilations=dilation, group=groups)
    return ctx.squeeze(out, [0]) if unbatched else out


exporter("conv1d", fns("conv1d", f=True) + fns("conv1d"), onnx="Conv")(lambda ctx, a, k: _conv(ctx, a, k, 1))
exporter("conv2d", fns("conv2d", f=True) + fns("conv2d"), onnx="Conv")(lambda ctx, a, k: _conv(ctx, a, k, 2))


def _conv_transpose(ctx: Context, args: tuple, kwargs: dict, n: int) -> V:
    x, w = ctx.v(args[0]), ctx.v(get(args, kwargs, 1, "weight"))
    b = get(args, kwargs, 2, "bias")
    stride = _tuple(get(args, kwargs, 3, "stride", 1), n)
    p = _tuple(get(args, kwargs, 4, "padding", 0), n)
    output_padding = _tuple(get(args, kwargs, 5, "output_padding", 0), n)
    groups = int(get(args, kwargs, 6, "groups", 1))
    dilation = _tuple(get(args, kwargs, 7, "dilation", 1), n)
    unbatched = x.rank == n + 1
    if unbatched:
        x = ctx.unsqueeze(x, [0])
    out = ctx.op("ConvTranspose", [x, w, b], kernel_shape=list(w.shape[2:]), strides=stride, pads=p + p,
                 dilations=dilation, group=groups, output_padding=output_padding)  # fmt: skip
    return ctx.squeeze(out, [0]) if unbatched else out


exporter("conv_transpose1d", fns("conv_transpose1d", f=True), onnx="ConvTranspose")(
    lambda ctx, a, k: _conv_transpose(ctx, a, k, 1)
)
exporter("conv_transpose2d", fns("conv_transpose2d", f=True), onnx="ConvTranspose")(
    lambda ctx, a, k: _conv_transpose(ctx, a, k, 2))  # fmt: skip


# ---- normalisation ----------------------------------------------------------------------------------
@exporter("batch_norm", fns("batch_norm", f=True), onnx="BatchNormalization")
def _batch_norm(ctx, args, kwargs):
    x = ctx.v(args[0])
    mean, var = get(args, kwargs, 1, "running_mean"), get(args, kwargs, 2, "running_var")
    w, b = get(args, kwargs, 3, "weight"), get(args, kwargs, 4, "bias")
    if get(args, kwargs, 5, "training", False) or mean is None:
        raise OnnxExporterError("batch_norm with batch statistics (training, or no running stats) has no ONNX "
                                "exporter; export in eval mode with track_running_stats=True")  # fmt: skip
    c = x.shape[1]
    w = ctx.v(np.ones(c, x.dtype.np), x.dtype) if w is None else w
    b = ctx.v(np.zeros(c, x.dtype.np), x.dtype) if b is None else b
    unbatched = x.rank == 1
    if unbatched:
        x = ctx.unsqueeze(x, [0])
    return ctx.op("BatchNormalization", [x, w, b, mean, var], epsilon=float(get(args, kwargs, 7, "eps", 1e-5)))


@exporter("layer_norm", fns("layer_norm", f=True), onnx="LayerNormalization (opset 17+)")
def _layer_norm(ctx, args, kwargs):
    x = ctx.v(args[0])
    shape = _tuple(get(args, kwargs, 1, "normalized_shape"), 1)
    w, b = get(args, kwargs, 2, "weight"), get(args, kwargs, 3, "bias")
    eps = float(get(args, kwargs, 4, "eps", 1e-5))
    axis = -len(shape)
    if ctx.opset >= 17:
        w = ctx.v(np.ones(shape, x.dtype.np), x.dtype) if w is None else w
        return ctx.op("LayerNormalization", [x, w, b], axis=axis, epsilon=eps)
    axes = list(range(x.rank + axis, x.rank))
    d = ctx.op("Sub", [x, ctx.reduce("ReduceMean", x, axes, True)])
    var = ctx.reduce("ReduceMean", ctx.op("Mul", [d, d]), axes, True)
    y = ctx.op("Div", [d, ctx.op("Sqrt", [ctx.op("Add", [var, ctx.v(eps, x.dtype)])])])
    y = y if w is None else ctx.op("Mul", [y, w])
    return y if b is None else ctx.op("Add", [y, b])


@exporter("group_norm", fns("group_norm", f=True), onnx="Reshape, ReduceMean, Sub, Mul, Div, Sqrt, Add")
def _group_norm(ctx, args, kwargs):
    x = ctx.v(args[0])
    g = int(get(args, kwargs, 1, "num_groups"))
    w, b = get(args, kwargs, 2, "weight"), get(args, kwargs, 3, "bias")
    eps = float(get(args, kwargs, 4, "eps", 1e-5))
    grouped = ctx.op("Reshape", [x, np.array([0, g, -1], np.int64)])
    d = ctx.op("Sub", [grouped, ctx.reduce("ReduceMean", grouped, [2], True)])
    var = ctx.reduce("ReduceMean", ctx.op("Mul", [d, d]), [2], True)
    y = ctx.op("Div", [d, ctx.op("Sqrt", [ctx.op("Add", [var, ctx.v(eps, x.dtype)])])])
    y = ctx.op("Reshape", [y, ctx.shape_v(ctx.shape(x))])
    if w is not None:
        y = ctx.op("Mul", [y, _channel_shape(ctx, ctx.v(w), x.rank)])
    if b is not None:
        y = ctx.op("Add", [y, _channel_shape(ctx, ctx.v(b), x.rank)])
    return y


# ---- pooling --------------------------------------------------------------------------------------
def _pool(ctx: Context, args: tuple, kwargs: dict, n: int, kind: str) -> V:
    x = ctx.v(args[0])
    kernel = _tuple(get(args, kwargs, 1, "kernel_size"), n)
    stride = get(args, kwargs, 2, "stride")
    stride = kernel if stride is None or stride == [] or stride == () else _tuple(stride, n)
    p = _tuple(get(args, kwargs, 3, "padding", 0), n)
    unbatched = x.rank == n + 1
    if unbatched:
        x = ctx.unsqueeze(x, [0])
    if kind == "max":
        if get(args, kwargs, 6, "return_indices", False):
            raise OnnxExporterError("max pooling with return_indices=True has no ONNX exporter here")
        out = ctx.op("MaxPool", [x], kernel_shape=kernel, strides=stride, pads=p + p,
                     dilations=_tuple(get(args, kwargs, 4, "dilation", 1), n),
                     ceil_mode=int(bool(get(args, kwargs, 5, "ceil_mode", False))))  # fmt: skip
    else:
        if get(args, kwargs, 6, "divisor_override") is not None:
            raise OnnxExporterError("avg pooling with divisor_override has no ONNX exporter")
        out = ctx.op("AveragePool", [x], kernel_shape=kernel, strides=stride, pads=p + p,
                     ceil_mode=int(bool(get(args, kwargs, 4, "ceil_mode", False))),
                     count_include_pad=int(bool(get(args, kwargs, 5, "count_include_pad", True))))  # fmt: skip
    return ctx.squeeze(out, [0]) if unbatched else out


for _n in (1, 2):
    for _kind in ("max", "avg"):
        exporter(f"{_kind}_pool{_n}d", fns(f"{_kind}_pool{_n}d", f=True),
                 onnx="MaxPool" if _kind == "max" else "AveragePool")(
            lambda ctx, a, k, n=_n, kind=_kind: _pool(ctx, a, k, n, kind))  # fmt: skip


def _adaptive(ctx: Context, args: tuple, kwargs: dict, n: int, kind: str) -> V:
    x = ctx.v(args[0])
    size = get(args, kwargs, 1, "output_size")
    size = [size] * n if isinstance(size, int) or size is None else list(size)
    spatial = list(x.shape[-n:])
    size = [s if o is None else o for s, o in zip(spatial, size, strict=True)]
    if all(o == 1 for o in size):
        return ctx.op("GlobalMaxPool" if kind == "max" else "GlobalAveragePool", [x])
    if x.dynamic or any(s % o for s, o in zip(spatial, size, strict=True)):
        raise OnnxExporterError(f"adaptive_{kind}_pool to {size} from {spatial} has no ONNX exporter unless the "
                                "output is 1 or divides the input (and the spatial dims are not dynamic)")  # fmt: skip
    k = [s // o for s, o in zip(spatial, size, strict=True)]
    return ctx.op("MaxPool" if kind == "max" else "AveragePool", [x], kernel_shape=k, strides=k)


for _n in (1, 2):
    for _kind in ("max", "avg"):
        exporter(f"adaptive_{_kind}_pool{_n}d", fns(f"adaptive_{_kind}_pool{_n}d", f=True),
                 onnx="GlobalAveragePool/GlobalMaxPool or AveragePool/MaxPool")(
            lambda ctx, a, k, n=_n, kind=_kind: _adaptive(ctx, a, k, n, kind))  # fmt: skip


# ---- embedding, dropout, padding, normalize -------------------------------------------------------
@exporter("embedding", fns("embedding", f=True), onnx="Gather")
def _embedding(ctx, args, kwargs):
    if get(args, kwargs, 3, "max_norm") is not None:
        raise OnnxExporterError("embedding with max_norm (renormalises the weight in place) has no ONNX exporter")
    return ctx.op("Gather", [get(args, kwargs, 1, "weight"), ctx.cast(args[0], _dtype.int64)], axis=0)


@exporter("dropout", fns("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
                          f=True) + fns("dropout"), onnx="Identity (eval)")  # fmt: skip
def _dropout(ctx, args, kwargs):
    p, training = get(args, kwargs, 1, "p", 0.5), get(args, kwargs, 2, "training", True)
    if training and p > 0:
        raise OnnxExporterError("dropout in training mode has no ONNX exporter: export the model in eval mode")
    return ctx.op("Identity", [args[0]])


@exporter("pad", fns("pad", f=True), onnx="Pad (constant, reflect, replicate)")
def _pad(ctx, args, kwargs):
    x = ctx.v(args[0])
    pad = [int(p) for p in get(args, kwargs, 1, "pad")]
    mode = get(args, kwargs, 2, "mode", "constant")
    value = get(args, kwargs, 3, "value") or 0
    begins, ends = [0] * x.rank, [0] * x.rank
    for i in range(len(pad) // 2):  # torch's pad lists the last dim first
        begins[x.rank - 1 - i], ends[x.rank - 1 - i] = pad[2 * i], pad[2 * i + 1]
    onnx_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge"}.get(mode)
    if onnx_mode is None:
        raise OnnxExporterError(f"pad with mode={mode!r} has no ONNX exporter")
    extra = [ctx.v(np.array(value, x.dtype.np), x.dtype)] if onnx_mode == "constant" else []
    return ctx.op("Pad", [x, np.array(begins + ends, np.int64), *extra], mode=onnx_mode)


@exporter("normalize", fns("normalize", f=True), onnx="ReduceL2, Max, Div")
def _normalize(ctx, args, kwargs):
    x = ctx.v(args[0])
    p, dim, eps = get(args, kwargs, 1, "p", 2.0), get(args, kwargs, 2, "dim", 1), get(args, kwargs, 3, "eps", 1e-12)
    if p not in (1, 2, 1.0, 2.0):
        raise OnnxExporterError(f"normalize with p={p} has no ONNX exporter (p=1, 2 do)")
    n = ctx.reduce("ReduceL2" if p == 2 else "ReduceL1", x, [dim % x.rank], True)
    return ctx.op("Div", [x, ctx.op("Max", [n, ctx.v(eps, x.dtype)])])


@exporter("prelu", fns("prelu", f=True), onnx="PRelu")
def _prelu(ctx, args, kwargs):
    x, w = ctx.v(args[0]), ctx.v(args[1])
    if x.rank >= 2 and w.shape[0] > 1:
        w = _channel_shape(ctx, w, x.rank)
    return ctx.op("PRelu", [x, w])


@exporter("glu", fns("glu", f=True), onnx="Split, Sigmoid, Mul")
def _glu(ctx, args, kwargs):
    x = ctx.v(args[0])
    axis = get(args, kwargs, 1, "dim", -1) % x.rank
    a, b = ctx.op("Split", [x], n_out=2, axis=axis, num_outputs=2 if ctx.opset >= 18 else None)
    return ctx.op("Mul", [a, ctx.op("Sigmoid", [b])])


@exporter("instance_norm", fns("instance_norm", f=True), onnx="InstanceNormalization or BatchNormalization")
def _instance_norm(ctx, args, kwargs):
    x = ctx.v(args[0])
    mean, var = get(args, kwargs, 1, "running_mean"), get(args, kwargs, 2, "running_var")
    w, b = get(args, kwargs, 3, "weight"), get(args, kwargs, 4, "bias")
    eps = float(get(args, kwargs, 7, "eps", 1e-5))
    c = x.shape[1]
    w = ctx.v(np.ones(c, x.dtype.np), x.dtype) if w is None else w
    b = ctx.v(np.zeros(c, x.dtype.np), x.dtype) if b is None else b
    if get(args, kwargs, 5, "use_input_stats", True):
        return ctx.op("InstanceNormalization", [x, w, b], epsilon=eps)
    return ctx.op("BatchNormalization", [x, w, b, mean, var], epsilon=eps)


@exporter("rms_norm", fns("rms_norm", f=True), onnx="Mul, ReduceMean, Add, Sqrt, Div")
def _rms_norm(ctx, args, kwargs):
    x = ctx.v(args[0])
    shape = _tuple(get(args, kwargs, 1, "normalized_shape"), 1)
    w, eps = get(args, kwargs, 2, "weight"), get(args, kwargs, 3, "eps")
    eps = float(np.finfo(x.dtype.np).eps) if eps is None else float(eps)
    axes = list(range(x.rank - len(shape), x.rank))
    ms = ctx.reduce("ReduceMean", ctx.op("Mul", [x, x]), axes, True)
    y = ctx.op("Div", [x, ctx.op("Sqrt", [ctx.op("Add", [ms, ctx.v(eps, x.dtype)])])])
    return y if w is None else ctx.op("Mul", [y, w])


@exporter("interpolate", fns("interpolate", "upsample", f=True), onnx="Resize")
def _interpolate(ctx, args, kwargs):
    x = ctx.v(args[0])
    size, scale = get(args, kwargs, 1, "size"), get(args, kwargs, 2, "scale_factor")
    mode, align = get(args, kwargs, 3, "mode", "nearest"), get(args, kwargs, 4, "align_corners")
    n = x.rank - 2
    if mode in ("nearest", "nearest-exact"):
        attrs = {"mode": "nearest", "coordinate_transformation_mode": "asymmetric" if mode == "nearest" else
                 "half_pixel", "nearest_mode": "floor" if mode == "nearest" else "round_prefer_ceil"}  # fmt: skip
    elif mode in ("linear", "bilinear", "trilinear"):
        attrs = {"mode": "linear", "coordinate_transformation_mode": "align_corners" if align else "pytorch_half_pixel"}
    else:
        raise OnnxExporterError(f"interpolate with mode={mode!r} has no ONNX exporter (nearest, linear modes do)")
    if scale is not None and get(args, kwargs, 5, "recompute_scale_factor") is not True:
        scales = [float(s) for s in (scale if isinstance(scale, (tuple, list)) else [scale] * n)]
        return ctx.op("Resize", [x, None, np.array([1.0, 1.0, *scales], np.float32)], **attrs)
    out = ctx.val.shape[2:]  # the traced output size; a traced size argument keeps it symbolic
    sizes = size if isinstance(size, (tuple, list)) else [size] * n if size is not None else list(out)
    full = ctx.make_shape([ctx.dim(x, 0), ctx.dim(x, 1), *sizes])
    return ctx.op("Resize", [x, None, None, ctx.shape_v(full)], **attrs)
