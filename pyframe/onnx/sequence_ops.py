"""Exporters of the sequence layers: ``scaled_dot_product_attention`` (causal and masked),
``nn.MultiheadAttention``, and ``nn.LSTM``/``nn.GRU``/``nn.RNN`` as ONNX's own LSTM/GRU/RNN operators."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pyframe import _dtype
from pyframe.nn.modules.attention import MultiheadAttention
from pyframe.nn.modules.rnn import GRU, LSTM, RNN
from pyframe.onnx._context import Context, OnnxExporterError, V, fns, get
from pyframe.onnx._registry import exporter, module_exporter
from pyframe.onnx.shape_ops import _slice, reshape


# ---- attention -------------------------------------------------------------------------------------
def causal_mask(ctx: Context, q_len: Any, k_len: Any, dt) -> V:
    """The additive causal mask (L, S): 0 on and below the diagonal, -inf above (torch's top-left alignment)."""
    if not isinstance(q_len, V) and not isinstance(k_len, V):
        return ctx.v(np.triu(np.full((q_len, k_len), -np.inf, dt.np), 1), dt)
    from onnx import numpy_helper

    full = ctx.op("ConstantOfShape", [ctx.shape_v(ctx.make_shape([q_len, k_len]))],
                  value=numpy_helper.from_array(np.array([-np.inf], dt.np)))  # fmt: skip
    return ctx.op("Trilu", [full, np.array(1, np.int64)], upper=1)


def additive(ctx: Context, mask: Any, dt, allowed_when_true: bool) -> V:
    """A mask as a value added to the scores: bool masks become 0/-inf, float masks are added as given."""
    m = ctx.v(mask)
    if m.dtype is not _dtype.bool_:
        return ctx.cast(m, dt)
    zero, ninf = ctx.v(np.array(0, dt.np), dt), ctx.v(np.array(-np.inf, dt.np), dt)
    return ctx.op("Where", [m, zero, ninf] if allowed_when_true else [m, ninf, zero])


def attention(ctx: Context, q: V, k: V, v: V, masks: list[V], scale: float, rank: int) -> tuple[V, V]:
    """softmax(q k^T * scale + masks) v, and the probabilities (inputs of rank ``rank``)."""
    perm = [*range(rank - 2), rank - 1, rank - 2]
    scores = ctx.op("Mul", [ctx.op("MatMul", [q, ctx.op("Transpose", [k], perm=perm)]), ctx.v(scale, q.dtype)])
    for m in masks:
        scores = ctx.op("Add", [scores, m])
    probs = ctx.op("Softmax", [scores], axis=-1)
    return ctx.op("MatMul", [probs, v]), probs


@exporter("scaled_dot_product_attention", fns("scaled_dot_product_attention", f=True),
          onnx="MatMul, Mul, Add, Where/Trilu (masks), Softmax")  # fmt: skip
def _sdpa(ctx, args, kwargs):
    q, k, v = (ctx.v(a) for a in args[:3])
    mask = get(args, kwargs, 3, "attn_mask")
    dropout_p, is_causal = get(args, kwargs, 4, "dropout_p", 0.0), get(args, kwargs, 5, "is_causal", False)
    scale = get(args, kwargs, 6, "scale")
    if dropout_p:
        raise OnnxExporterError("scaled_dot_product_attention with dropout_p > 0 has no ONNX exporter (pass "
                                "dropout_p=0.0 in eval, as `self.dropout if self.training else 0` does)")  # fmt: skip
    if q.shape[:-2] != k.shape[:-2] and get(args, kwargs, 7, "enable_gqa", False):
        raise OnnxExporterError("scaled_dot_product_attention with enable_gqa has no ONNX exporter")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    masks = []
    if is_causal:
        masks.append(causal_mask(ctx, ctx.dim(q, -2), ctx.dim(k, -2), q.dtype))
    if mask is not None:
        masks.append(additive(ctx, mask, q.dtype, allowed_when_true=True))
    return attention(ctx, q, k, v, masks, scale, k.rank)[0]


@module_exporter(MultiheadAttention, onnx="MatMul, Add, Reshape, Transpose, Softmax, Where")
def _mha(ctx: Context, m: MultiheadAttention, path: str, args: tuple, kwargs: dict) -> Any:
    if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
        raise OnnxExporterError("MultiheadAttention with kdim/vdim, add_bias_kv or add_zero_attn has no exporter")
    q, k, v = (ctx.v(a) for a in (get(args, kwargs, 0, "query"), get(args, kwargs, 1, "key"),
                                  get(args, kwargs, 2, "value")))  # fmt: skip
    kpm, need_weights = get(args, kwargs, 3, "key_padding_mask"), get(args, kwargs, 4, "need_weights", True)
    attn_mask, average = get(args, kwargs, 5, "attn_mask"), get(args, kwargs, 6, "average_attn_weights", True)
    is_causal = get(args, kwargs, 7, "is_causal", False)
    unbatched = q.rank == 2
    if unbatched:
        q, k, v = (ctx.unsqueeze(t, [0]) for t in (q, k, v))
    elif not m.batch_first:
        q, k, v = (ctx.op("Transpose", [t], perm=[1, 0, 2]) for t in (q, k, v))
    e, h = m.embed_dim, m.num_heads
    w = ctx.value_of(ctx.param(m.in_proj_weight, f"{path}.in_proj_weight"))
    b = None if m.in_proj_bias is None else ctx.value_of(ctx.param(m.in_proj_bias, f"{path}.in_proj_bias"))
    heads = []
    for i, t in enumerate((q, k, v)):
        wi = ctx.v(np.ascontiguousarray(w[i * e : (i + 1) * e].T))
        y = ctx.op("MatMul", [t, wi])
        if b is not None:
            y = ctx.op("Add", [y, ctx.v(b[i * e : (i + 1) * e])])
        y = ctx.op("Reshape", [y, np.array([0, 0, h, e // h], np.int64)])
        heads.append(ctx.op("Transpose", [y], perm=[0, 2, 1, 3]))  # (N, H, L, D)
    masks = []
    dt = q.dtype
    if attn_mask is not None:
        am = additive(ctx, attn_mask, dt, allowed_when_true=False)
        if ctx.v(attn_mask).rank == 3:  # (N*H, L, S)
            am = reshape(ctx, am, [-1, h, ctx.dim(ctx.v(attn_mask), 1), ctx.dim(ctx.v(attn_mask), 2)])
        masks.append(am)
    elif is_causal:
        masks.append(causal_mask(ctx, ctx.dim(q, 1), ctx.dim(k, 1), dt))
    if kpm is not None:
        kp = additive(ctx, ctx.unsqueeze(ctx.v(kpm), [1, 2]) if not unbatched else ctx.v(kpm), dt,
                      allowed_when_true=False)  # fmt: skip
        masks.append(kp)
    out, probs = attention(ctx, *heads, masks, 1.0 / math.sqrt(e // h), 4)
    out = ctx.op("Reshape", [ctx.op("Transpose", [out], perm=[0, 2, 1, 3]), np.array([0, 0, e], np.int64)])
    out_b = None if m.out_proj.bias is None else ctx.param(m.out_proj.bias, f"{path}.out_proj.bias")
    wt = ctx.v(np.ascontiguousarray(ctx.value_of(ctx.param(m.out_proj.weight, f"{path}.out_proj.weight")).T))
    out = ctx.op("MatMul", [out, wt])
    out = out if out_b is None else ctx.op("Add", [out, out_b])
    if unbatched:
        out = ctx.squeeze(out, [0])
    elif not m.batch_first:
        out = ctx.op("Transpose", [out], perm=[1, 0, 2])
    weights = None
    if need_weights:
        weights = ctx.reduce("ReduceMean", probs, [1], False) if average else probs
        if unbatched:
            weights = ctx.squeeze(weights, [0])
    return out, weights


# ---- recurrent layers ------------------------------------------------------------------------------
_ORDER = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN_TANH": [0], "RNN_RELU": [0]}  # torch gates -> ONNX's
_OP = {"LSTM": "LSTM", "GRU": "GRU", "RNN_TANH": "RNN", "RNN_RELU": "RNN"}


def _gates(a: np.ndarray, mode: str) -> np.ndarray:
    chunks = np.split(a, len(_ORDER[mode]), axis=0)
    return np.concatenate([chunks[i] for i in _ORDER[mode]], axis=0)


@module_exporter(LSTM, GRU, RNN, onnx="LSTM / GRU / RNN, Transpose, Reshape, Concat")
def _rnn(ctx: Context, m, path: str, args: tuple, kwargs: dict) -> Any:
    mode = m.mode
    if getattr(m, "proj_size", 0):
        raise OnnxExporterError("LSTM with proj_size has no ONNX exporter")
    x = ctx.v(args[0])
    if not isinstance(x, V) or x.shape is None:
        raise OnnxExporterError(f"{type(m).__name__} on a PackedSequence has no ONNX exporter")
    hx = get(args, kwargs, 1, "hx")
    batched = x.rank == 3
    if not batched:
        x = ctx.unsqueeze(x, [1])
    elif m.batch_first:
        x = ctx.op("Transpose", [x], perm=[1, 0, 2])
    hsize, dirs = m.hidden_size, 2 if m.bidirectional else 1
    h0 = c0 = None
    if hx is not None:
        h0, c0 = hx if mode == "LSTM" else (hx, None)
        h0 = ctx.v(h0) if batched else ctx.unsqueeze(ctx.v(h0), [1])
        c0 = None if c0 is None else (ctx.v(c0) if batched else ctx.unsqueeze(ctx.v(c0), [1]))
    cur, hs, cs = x, [], []
    for layer in range(m.num_layers):
        ws, rs, bs = [], [], []
        for d in range(dirs):
            sfx = f"_l{layer}" + ("_reverse" if d else "")
            w_ih = getattr(m, f"weight_ih{sfx}").detach().numpy()
            w_hh = getattr(m, f"weight_hh{sfx}").detach().numpy()
            ws.append(_gates(w_ih, mode))
            rs.append(_gates(w_hh, mode))
            if m.bias:
                b_ih = getattr(m, f"bias_ih{sfx}").detach().numpy()
                b_hh = getattr(m, f"bias_hh{sfx}").detach().numpy()
                bs.append(np.concatenate([_gates(b_ih, mode), _gates(b_hh, mode)]))
            else:
                bs.append(np.zeros(2 * w_ih.shape[0], w_ih.dtype))
        init = [None, None]
        if h0 is not None:
            init[0] = _slice(ctx, h0, [(0, layer * dirs, (layer + 1) * dirs, 1)])
        if c0 is not None:
            init[1] = _slice(ctx, c0, [(0, layer * dirs, (layer + 1) * dirs, 1)])
        attrs: dict = {"hidden_size": hsize, "direction": "bidirectional" if dirs == 2 else "forward"}
        if mode == "GRU":
            attrs["linear_before_reset"] = 1
        if mode.startswith("RNN"):
            attrs["activations"] = ["Tanh" if mode == "RNN_TANH" else "Relu"] * dirs
        inputs = [cur, ctx.v(np.stack(ws)), ctx.v(np.stack(rs)), ctx.v(np.stack(bs)), None, init[0]]
        if mode == "LSTM":
            inputs.append(init[1])
        outs = ctx.op(_OP[mode], inputs, n_out=3 if mode == "LSTM" else 2, **attrs)
        y = ctx.op("Transpose", [outs[0]], perm=[0, 2, 1, 3])  # (seq, batch, dirs, hidden)
        cur = ctx.op("Reshape", [y, np.array([0, 0, -1], np.int64)])
        hs.append(outs[1])
        if mode == "LSTM":
            cs.append(outs[2])
    h_n = hs[0] if len(hs) == 1 else ctx.op("Concat", hs, axis=0)
    c_n = None if not cs else cs[0] if len(cs) == 1 else ctx.op("Concat", cs, axis=0)
    out = cur
    if not batched:
        out, h_n = ctx.squeeze(out, [1]), ctx.squeeze(h_n, [1])
        c_n = None if c_n is None else ctx.squeeze(c_n, [1])
    elif m.batch_first:
        out = ctx.op("Transpose", [out], perm=[1, 0, 2])
    return (out, (h_n, c_n)) if mode == "LSTM" else (out, h_n)
