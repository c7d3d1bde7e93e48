"""Exporters of shapes and views, joining and splitting, indexing and slicing, and the factories whose
sizes may be traced (``zeros``, ``arange``, ...)."""

from __future__ import annotations

import builtins
import operator
from typing import Any

import numpy as np

from pyframe import _dtype
from pyframe.onnx._context import INT64_MAX, Context, OnnxExporterError, V, fns, get, out_dtype, size_args
from pyframe.onnx._registry import exporter


# ---- shapes and views -----------------------------------------------------------------------------
@exporter("getattr", (builtins.getattr,), (), onnx="Shape (dynamic axes)")
def _getattr(ctx, args, kwargs):
    x, attr = args
    if isinstance(x, V) and attr == "shape":
        return ctx.shape(x)
    if isinstance(x, V) and attr in ("T", "mT"):
        perm = list(range(x.rank))[::-1] if attr == "T" else [*range(x.rank - 2), x.rank - 1, x.rank - 2]
        return ctx.op("Transpose", [x], perm=perm)
    raise OnnxExporterError(f"reading .{attr} of a traced tensor has no ONNX exporter")


@exporter("size", (), ("size",), onnx="Shape, Gather (dynamic axes)")
def _size(ctx, args, kwargs):
    x, dim = ctx.v(args[0]), get(args, kwargs, 1, "dim")
    return ctx.shape(x) if dim is None else ctx.dim(x, dim)


@exporter("numel", fns("numel"), ("numel", "nelement"), onnx="Size")
def _numel(ctx, args, kwargs):
    x = ctx.v(args[0])
    return int(np.prod(x.shape)) if not x.dynamic else ctx.op("Size", [x])


def reshape(ctx: Context, x: V, shape: Any) -> V:
    if isinstance(shape, V):
        return ctx.op("Reshape", [x, shape])
    return ctx.op("Reshape", [x, ctx.shape_v(ctx.make_shape(list(shape)))])


@exporter("reshape", fns("reshape"), ("view", "reshape"), onnx="Reshape")
def _reshape(ctx, args, kwargs):
    shape = kwargs.get("shape", kwargs.get("size")) or size_args(args, 1)
    if not isinstance(shape, V) and len(shape) == 1 and not isinstance(shape[0], V) and not isinstance(shape[0], int):
        raise OnnxExporterError(f"view/reshape to {shape!r} (a dtype view) has no ONNX exporter")
    return reshape(ctx, ctx.v(args[0]), shape)


@exporter("view_as/reshape_as", (), ("view_as", "reshape_as"), onnx="Shape, Reshape")
def _view_as(ctx, args, kwargs):
    return reshape(ctx, ctx.v(args[0]), ctx.shape(ctx.v(args[1])))


@exporter("flatten", fns("flatten"), ("flatten",), onnx="Flatten or Reshape")
def _flatten(ctx, args, kwargs):
    x = ctx.v(args[0])
    start = get(args, kwargs, 1, "start_dim", 0) % max(x.rank, 1)
    end = get(args, kwargs, 2, "end_dim", -1) % max(x.rank, 1)
    if x.rank == 0:
        return reshape(ctx, x, [1])
    if end == x.rank - 1 and start <= 1:
        out = ctx.op("Flatten", [x], axis=start)
        return out if start == 1 else ctx.op("Reshape", [out, np.array([-1], np.int64)])
    return reshape(
        ctx, x, [*(ctx.dim(x, i) for i in range(start)), -1, *(ctx.dim(x, i) for i in range(end + 1, x.rank))]
    )


@exporter("unflatten", fns("unflatten"), ("unflatten",), onnx="Reshape")
def _unflatten(ctx, args, kwargs):
    x = ctx.v(args[0])
    dim, sizes = get(args, kwargs, 1, "dim") % x.rank, list(get(args, kwargs, 2, "sizes"))
    return reshape(ctx, x, [*(ctx.dim(x, i) for i in range(dim)), *sizes,
                            *(ctx.dim(x, i) for i in range(dim + 1, x.rank))])  # fmt: skip


@exporter("permute", fns("permute"), ("permute",), onnx="Transpose")
def _permute(ctx, args, kwargs):
    x = ctx.v(args[0])
    dims = kwargs.get("dims") or size_args(args, 1)
    return ctx.op("Transpose", [x], perm=[d % x.rank for d in dims])


@exporter("transpose", fns("transpose", "swapaxes", "t"), ("transpose", "swapaxes", "t"), onnx="Transpose")
def _transpose(ctx, args, kwargs):
    x = ctx.v(args[0])
    if x.rank < 2:
        return ctx.op("Identity", [x])
    d0, d1 = (get(args, kwargs, 1, "dim0"), get(args, kwargs, 2, "dim1")) if ctx.target_name != "t" else (0, 1)
    perm = list(range(x.rank))
    perm[d0 % x.rank], perm[d1 % x.rank] = perm[d1 % x.rank], perm[d0 % x.rank]
    return ctx.op("Transpose", [x], perm=perm)


@exporter("unsqueeze", fns("unsqueeze"), ("unsqueeze",), onnx="Unsqueeze")
def _unsqueeze(ctx, args, kwargs):
    x = ctx.v(args[0])
    return ctx.unsqueeze(x, [get(args, kwargs, 1, "dim") % (x.rank + 1)])


@exporter("squeeze", fns("squeeze"), ("squeeze",), onnx="Squeeze")
def _squeeze(ctx, args, kwargs):
    x = ctx.v(args[0])
    dim = get(args, kwargs, 1, "dim")
    dims = [d % x.rank for d in ([dim] if isinstance(dim, int) else dim)] if dim is not None else None
    if dims is None:
        if x.dynamic:
            raise OnnxExporterError("squeeze() without dims on a tensor with dynamic axes: give the dims")
        dims = [i for i, s in enumerate(x.shape) if s == 1]
    dims = [d for d in dims if x.shape[d] == 1]  # torch leaves a dim that is not 1
    return ctx.squeeze(x, dims) if dims else ctx.op("Identity", [x])


@exporter("expand", fns("broadcast_to"), ("expand", "broadcast_to"), onnx="Expand")
def _expand(ctx, args, kwargs):
    x = ctx.v(args[0])
    sizes = size_args(args, 1) if ctx.target_name != "broadcast_to" else list(get(args, kwargs, 1, "size"))
    if isinstance(sizes, V):
        return ctx.op("Expand", [x, sizes])
    lead = len(sizes) - x.rank
    sizes = [ctx.dim(x, i - lead) if (not isinstance(s, V) and s == -1) else s for i, s in enumerate(sizes)]
    return ctx.op("Expand", [x, ctx.shape_v(ctx.make_shape(sizes))])


@exporter("expand_as", (), ("expand_as",), onnx="Shape, Expand")
def _expand_as(ctx, args, kwargs):
    return ctx.op("Expand", [ctx.v(args[0]), ctx.shape_v(ctx.shape(ctx.v(args[1])))])


@exporter("repeat", (), ("repeat",), onnx="Tile")
def _repeat(ctx, args, kwargs):
    x = ctx.v(args[0])
    reps = size_args(args, 1)
    if len(reps) > x.rank:
        x = reshape(ctx, x, [1] * (len(reps) - x.rank) + [ctx.dim(x, i) for i in range(x.rank)])
    return ctx.op("Tile", [x, ctx.shape_v(ctx.make_shape(list(reps)))])


# ---- joining and splitting -------------------------------------------------------------------------
@exporter("cat", fns("cat", "concat", "concatenate"), (), onnx="Concat")
def _cat(ctx, args, kwargs):
    dt = out_dtype(ctx)
    parts = [ctx.cast(t, dt) for t in get(args, kwargs, 0, "tensors")]
    return ctx.op("Concat", parts, axis=get(args, kwargs, 1, "dim", 0) % parts[0].rank)


@exporter("stack", fns("stack"), (), onnx="Unsqueeze, Concat")
def _stack(ctx, args, kwargs):
    dt = out_dtype(ctx)
    parts = [ctx.cast(t, dt) for t in get(args, kwargs, 0, "tensors")]
    axis = get(args, kwargs, 1, "dim", 0) % (parts[0].rank + 1)
    return ctx.op("Concat", [ctx.unsqueeze(p, [axis]) for p in parts], axis=axis)


def _split_pieces(ctx: Context, x: V, sizes: list[int], axis: int, equal_parts: bool) -> list[V]:
    n = len(sizes)
    if n == 1:
        return [ctx.op("Identity", [x])]
    if equal_parts and ctx.opset >= 18:
        return ctx.op("Split", [x], n_out=n, axis=axis, num_outputs=n)
    if equal_parts:
        return ctx.op("Split", [x], n_out=n, axis=axis)
    return ctx.op("Split", [x, np.array(sizes, np.int64)], n_out=n, axis=axis)


@exporter("split", fns("split", "chunk", "tensor_split", "unbind"), ("split", "chunk", "unbind"), onnx="Split")
def _split(ctx, args, kwargs):
    x = ctx.v(args[0])
    name = ctx.target_name
    axis = get(args, kwargs, 1 if name == "unbind" else 2, "dim", 0) % x.rank
    sizes = [t.shape[axis] if name != "unbind" else 1 for t in ctx.val]
    if name == "split" and isinstance(get(args, kwargs, 1, "split_size_or_sections"), V) and len(set(sizes)) != 1:
        raise OnnxExporterError("split by a traced size into unequal pieces has no ONNX exporter")
    equal = len(set(sizes)) == 1 and (x.dynamic or name == "unbind")
    pieces = _split_pieces(ctx, x, sizes, axis, equal)
    if name == "unbind":
        pieces = [ctx.squeeze(p, [axis]) for p in pieces]
    return tuple(pieces)


@exporter("narrow", fns("narrow"), ("narrow",), onnx="Slice")
def _narrow(ctx, args, kwargs):
    x = ctx.v(args[0])
    dim, start, length = args[1] % x.rank, args[2], args[3]
    end = (
        ctx.op("Add", [ctx.v(start), ctx.v(length)])
        if isinstance(start, V) or isinstance(length, V)
        else start + length
    )
    return _slice(ctx, x, [(dim, start, end, 1)])


@exporter("select", fns("select"), ("select",), onnx="Gather")
def _select(ctx, args, kwargs):
    x = ctx.v(args[0])
    return ctx.op("Gather", [x, ctx.cast(args[2], _dtype.int64)], axis=args[1] % x.rank)


# ---- indexing ----------------------------------------------------------------------------------------
def _scalar(ctx: Context, s: Any, default: int) -> Any:
    if s is None:
        return default
    return s


def _slice(ctx: Context, x: V, items: list[tuple]) -> V:
    """One Slice over (axis, start, end, step) items; starts and ends may be traced sizes."""
    if not items:
        return x
    axes = [a for a, *_ in items]
    starts = ctx.make_shape([_scalar(ctx, s, 0) for _, s, _, _ in items])
    ends = ctx.make_shape([_scalar(ctx, e, INT64_MAX if (st or 1) > 0 else -INT64_MAX) for _, _, e, st in items])
    steps = [st or 1 for *_, st in items]
    return ctx.op("Slice", [x, ctx.shape_v(starts), ctx.shape_v(ends), np.array(axes, np.int64),
                            np.array(steps, np.int64)])  # fmt: skip


@exporter("getitem", (operator.getitem,), (), onnx="Slice, Gather, Unsqueeze")
def _getitem(ctx, args, kwargs):
    base, key = args
    if not isinstance(base, V):
        if isinstance(base, (tuple, list)):
            return base[key]
        base = ctx.v(base)
    if base.dtype is _dtype.int64 and base.shape is not None and len(base.shape) == 1 and isinstance(key, int):
        out = ctx.op("Gather", [base, np.array(key, np.int64)], axis=0)  # a traced shape's entry
        out.dtype, out.shape = _dtype.int64, ()
        return out
    key = key if isinstance(key, tuple) else (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if any(k is Ellipsis for k in key):
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (base.rank - n_real) + key[i + 1 :]
    slices, ints, tensors, news = [], [], [], []
    axis = out_axis = 0
    for k in key:
        if k is None:
            news.append(out_axis)
            out_axis += 1
            continue
        if isinstance(k, slice):
            if not (k.start is None and k.stop is None and k.step in (None, 1)):
                slices.append((axis, k.start, k.stop, k.step))
            out_axis += 1
        elif isinstance(k, (int, np.integer)) or (isinstance(k, V) and k.shape == ()):
            ints.append((axis, k))
        elif isinstance(k, V):
            if k.dtype is _dtype.bool_:
                raise OnnxExporterError("indexing with a bool mask has a data-dependent shape: no ONNX exporter")
            tensors.append((axis, k))
            out_axis += k.rank
        else:
            raise OnnxExporterError(f"indexing with {type(k).__name__} has no ONNX exporter")
        axis += 1
    if tensors and (ints or len(tensors) > 1):
        raise OnnxExporterError("indexing with a tensor together with other tensor or int indices has no exporter")
    out = _slice(ctx, base, slices)
    for ax, i in sorted(ints, reverse=True):
        out = ctx.op("Gather", [out, ctx.cast(i, _dtype.int64)], axis=ax)
    for ax, t in tensors:
        out = ctx.op("Gather", [out, ctx.cast(t, _dtype.int64)], axis=ax)
    if news:
        out = ctx.unsqueeze(out, news)
    return out if out is not base else ctx.op("Identity", [base])


@exporter("tril/triu", fns("tril", "triu"), ("tril", "triu"), onnx="Trilu")
def _trilu(ctx, args, kwargs):
    return ctx.op("Trilu", [ctx.v(args[0]), np.array(get(args, kwargs, 1, "diagonal", 0), np.int64)],
                  upper=int(ctx.target_name == "triu"))  # fmt: skip


@exporter("flip", fns("flip"), ("flip",), onnx="Slice")
def _flip(ctx, args, kwargs):
    x = ctx.v(args[0])
    dims = size_args(args, 1) if ctx.kind == "call_method" else list(get(args, kwargs, 1, "dims"))
    return _slice(ctx, x, [(d % x.rank, -1, -INT64_MAX, -1) for d in dims])


# ---- factories with traced sizes ------------------------------------------------------------------
@exporter("zeros/ones/full/empty", fns("zeros", "ones", "full", "empty"), ("new_zeros", "new_ones", "new_full"),
          onnx="ConstantOfShape")  # fmt: skip
def _fill(ctx, args, kwargs):
    name = ctx.target_name
    start = 1 if name.startswith("new_") else 0
    if name in ("full", "new_full"):
        size, value = get(args, kwargs, start, "size"), get(args, kwargs, start + 1, "fill_value")
    else:
        size = kwargs.get("size") or size_args(args, start)
        value = 1 if name.endswith("ones") else 0
    dt = out_dtype(ctx)
    shape = size if isinstance(size, V) else ctx.shape_v(ctx.make_shape(list(size)))
    return _constant_of_shape(ctx, shape, value, dt)


def _constant_of_shape(ctx: Context, shape: V, value: Any, dt) -> V:
    from onnx import numpy_helper

    return ctx.op("ConstantOfShape", [shape], value=numpy_helper.from_array(np.array([value], dt.np)))


@exporter("zeros_like/ones_like/full_like", fns("zeros_like", "ones_like", "full_like"), (),
          onnx="Shape, ConstantOfShape")  # fmt: skip
def _fill_like(ctx, args, kwargs):
    x = ctx.v(args[0])
    name = ctx.target_name
    value = get(args, kwargs, 1, "fill_value") if name == "full_like" else (1 if name == "ones_like" else 0)
    return _constant_of_shape(ctx, ctx.shape_v(ctx.shape(x)), value, out_dtype(ctx))


@exporter("arange", fns("arange"), (), onnx="Range")
def _arange(ctx, args, kwargs):
    start, end, step = get(args, kwargs, 0, "start"), get(args, kwargs, 1, "end"), get(args, kwargs, 2, "step", 1)
    if end is None:
        start, end = 0, start
    dt = out_dtype(ctx)
    return ctx.op("Range", [ctx.squeeze_scalar(start, dt), ctx.squeeze_scalar(end, dt), ctx.squeeze_scalar(step, dt)])


# ---- gathering -------------------------------------------------------------------------------------------
@exporter("index_select", fns("index_select"), ("index_select",), onnx="Gather")
def _index_select(ctx, args, kwargs):
    x = ctx.v(args[0])
    idx = ctx.cast(get(args, kwargs, 2, "index"), _dtype.int64)
    return ctx.op("Gather", [x, idx], axis=get(args, kwargs, 1, "dim") % x.rank)


@exporter("gather", fns("gather"), ("gather",), onnx="GatherElements")
def _gather(ctx, args, kwargs):
    x = ctx.v(args[0])
    idx = ctx.cast(get(args, kwargs, 2, "index"), _dtype.int64)
    return ctx.op("GatherElements", [x, idx], axis=get(args, kwargs, 1, "dim") % x.rank)


@exporter("topk", fns("topk"), ("topk",), onnx="TopK")
def _topk(ctx, args, kwargs):
    x = ctx.v(args[0])
    k, dim = get(args, kwargs, 1, "k"), get(args, kwargs, 2, "dim")
    axis = (x.rank - 1 if dim is None else dim) % x.rank
    kv = ctx.unsqueeze(ctx.cast(k, _dtype.int64), [0]) if isinstance(k, V) else np.array([k], np.int64)
    values, indices = ctx.op("TopK", [x, kv], n_out=2, axis=axis, largest=int(get(args, kwargs, 3, "largest", True)),
                             sorted=1)  # fmt: skip
    return (values, indices)
