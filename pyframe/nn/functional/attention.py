"""Attention: scaled_dot_product_attention and multi_head_attention_forward."""

from __future__ import annotations

import math

from pyframe import _dtype, _grad_mode
from pyframe._backend import NULL, ShapeError, check, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import _float_arg, _regrad, _tensor_arg
from pyframe.nn.functional.dropout import dropout
from pyframe.nn.functional.linear import linear
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.ops._common import broadcast_shapes, scalar_tensor
from pyframe.ops.index import tril
from pyframe.ops.products import matmul
from pyframe.ops.random import _generator
from pyframe.ops.view import view_op
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "multi_head_attention_forward", "scaled_dot_product_attention",
]  # fmt: skip

_NATIVE = (_dtype.float32.code, _dtype.float64.code)  # dtypes the fused C kernel takes


def _causal_mask(q_len: int, k_len: int) -> Tensor:
    """Bool [L, S], True where query i may attend to key j (j <= i, aligned top-left as torch)."""
    from pyframe.ops.creation import ones

    return tril(ones(q_len, k_len, dtype=_dtype.bool_))


def _masked_softmax(scores: Tensor, masked: bool) -> Tensor:
    """Softmax over the last dim; with a mask, a row with no allowed key gives zeros (torch's
    "safe softmax") instead of NaN."""
    if not masked:
        return rd.softmax(scores, -1)
    with _grad_mode.no_grad():
        dead = ew.eq(rd.amax(scores, -1, True), -math.inf)
        any_dead = bool(rd.any(dead).item())
    if not any_dead:
        return rd.softmax(scores, -1)
    zero = scalar_tensor(0.0, scores.dtype)
    return ew.where(dead, zero, rd.softmax(ew.where(dead, zero, scores), -1))


def _check_mask(fn: str, mask: Tensor, name: str, dt) -> None:
    _tensor_arg(mask, fn, name)
    if mask.dtype is not _dtype.bool_ and mask.dtype is not dt:
        raise TypeError(f"{fn}(): {name} must be a bool tensor or a float tensor of the query's dtype "
                        f"{dt.name}, got {mask.dtype.name}")  # fmt: skip


def scaled_dot_product_attention(
    query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None, dropout_p: float = 0.0,
    is_causal: bool = False, scale: float | None = None, enable_gqa: bool = False,
) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.scaled_dot_product_attention:
    ``softmax(q k^T * scale + mask) v`` over the last two dims, batch dims broadcast.

    A bool ``attn_mask`` is True where attention is allowed; a float one is added to the
    scores. A query row whose keys are all masked out gives zeros (as torch). Calls
    without a mask (``is_causal`` and dropout allowed), float32/float64 and equal batch dims
    run as one fused C call each way (pf_attention); otherwise the product, softmax and dropout
    run as a composition of ops (float16 and bfloat16 in float32, as torch's CPU kernels
    accumulate). Both drop the same weights for the same generator state.
    Double backward works on both. Dropout uses pyframe's random stream, not torch's."""
    if (
        attn_mask is None and type(query) is Tensor and type(key) is Tensor and type(value) is Tensor
        and query.dtype is key.dtype is value.dtype and query.dtype.code in _NATIVE
        and (type(dropout_p) is float or type(dropout_p) is int) and 0.0 <= dropout_p < 1.0
        and (scale is None or type(scale) is float or type(scale) is int)
        and len(query._shape) >= 2 and len(key._shape) == len(query._shape) == len(value._shape)
        and query._shape[:-2] == key._shape[:-2] == value._shape[:-2] and query._shape[-1] == key._shape[-1]
        and key._shape[-2] == value._shape[-2] and key._shape[-2] > 0 and query._shape[-1] > 0
    ):  # fmt: skip
        # the common call, every check below passing: straight to the fused kernel
        s = 1.0 / math.sqrt(query._shape[-1]) if scale is None else float(scale)
        return _fused_attention(query, key, value, s, is_causal, float(dropout_p))
    fn = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        _float_arg(t, fn, name)
        if t.ndim < 2:
            raise ShapeError(f"{fn}(): {name} must have at least 2 dims (..., seq, features), got shape "
                             f"{list(t._shape)}")  # fmt: skip
    if not (query.dtype is key.dtype is value.dtype):
        raise TypeError(f"{fn}(): query, key and value must have one dtype, got {query.dtype.name}, "
                        f"{key.dtype.name} and {value.dtype.name}")  # fmt: skip
    if query._shape[-1] != key._shape[-1]:
        raise ShapeError(f"{fn}(): query's last dim {query._shape[-1]} (shape {list(query._shape)}) must equal "
                         f"key's {key._shape[-1]} (shape {list(key._shape)})")  # fmt: skip
    if key._shape[-2] != value._shape[-2]:
        raise ShapeError(f"{fn}(): key and value must have the same sequence length (dim -2), got shapes "
                         f"{list(key._shape)} and {list(value._shape)}")  # fmt: skip
    if not isinstance(dropout_p, (int, float)) or isinstance(dropout_p, bool) or not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"{fn}(): dropout_p must be a probability in [0, 1], got {dropout_p!r}")
    if scale is not None and (not isinstance(scale, (int, float)) or isinstance(scale, bool)):
        raise TypeError(f"{fn}(): scale must be a float or None, got {type(scale).__name__}")
    if is_causal and attn_mask is not None:
        raise ValueError(f"{fn}(): pass either attn_mask or is_causal=True, not both")
    if enable_gqa and key.ndim >= 3 and key._shape[-3] != query._shape[-3]:
        hq, hk = query._shape[-3], key._shape[-3]
        if hq % hk or value._shape[-3] != hk:
            raise ShapeError(f"{fn}(): with enable_gqa, query heads {hq} must be a multiple of key/value heads "
                             f"{hk} (value has {value._shape[-3]})")  # fmt: skip
        key = _repeat_heads(key, hq // hk)
        value = _repeat_heads(value, hq // hk)
    q_len, k_len = query._shape[-2], key._shape[-2]
    try:
        broadcast_shapes(query._shape[:-2], key._shape[:-2], value._shape[:-2])
    except Exception:
        raise ShapeError(f"{fn}(): batch dims of query {list(query._shape)}, key {list(key._shape)} and value "
                         f"{list(value._shape)} do not broadcast") from None  # fmt: skip
    if attn_mask is not None:
        _check_mask(fn, attn_mask, "attn_mask", query.dtype)
        scores = broadcast_shapes(query._shape[:-2], key._shape[:-2]) + (q_len, k_len)
        try:
            fits = broadcast_shapes(attn_mask._shape, scores) == scores  # a mask must not add batch dims
        except Exception:
            fits = False
        if not fits:
            raise ShapeError(f"{fn}(): attn_mask of shape {list(attn_mask._shape)} does not broadcast to the "
                             f"attention scores' shape {list(scores)}")  # fmt: skip
    # head dim 0: torch's scale is inf, applied to an empty query, so the scores are 0 (uniform weights)
    e = query._shape[-1]
    s = (1.0 / math.sqrt(e) if e else math.inf) if scale is None else float(scale)
    if (
        attn_mask is None and dropout_p < 1.0 and query.dtype.code in _NATIVE and k_len > 0 and e > 0
        and query.ndim == key.ndim == value.ndim and query._shape[:-2] == key._shape[:-2] == value._shape[:-2]
    ):  # fmt: skip
        return _fused_attention(query, key, value, s, is_causal, float(dropout_p))
    dt = query.dtype
    if dt in (_dtype.float16, _dtype.bfloat16):
        # scores and softmax in float32, as torch's CPU kernels accumulate: half's scores overflow past 65504
        up = _dtype.float32
        q, k, v = query.to(up), key.to(up), value.to(up)
        if attn_mask is not None and attn_mask.dtype is dt:
            attn_mask = attn_mask.to(up)
        return _like_query(query, _composed_attention(q, k, v, attn_mask, dropout_p, is_causal, s)).to(dt)
    return _like_query(query, _composed_attention(query, key, value, attn_mask, dropout_p, is_causal, s))


def _query_order(query: Tensor) -> tuple | None:
    """The dims of the query before the last, outermost first in its memory order (with the last dim after them),
    or None when that is the natural order (or the query has fewer than 3 dims)."""
    n = query.ndim
    if n < 3:
        return None
    st = query._strides
    if all(st[d] >= st[d + 1] for d in range(n - 2)):  # already outermost first (ties keep their order)
        return None
    lead = sorted(range(n - 1), key=lambda d: -st[d])  # stable: ties keep their order
    return None if lead == list(range(n - 1)) else (*lead, n - 1)


def _empty_like_query(query: Tensor, shape: tuple, dt) -> Tensor:
    """A new dense tensor of ``shape`` laid out as ``_like_query`` lays out a result."""
    order = _query_order(query)
    if order is None or len(shape) != query.ndim:
        return empty_tensor(shape, dt)
    dense = empty_tensor(tuple(shape[d] for d in order), dt)
    strides = [0] * len(shape)
    for i, d in enumerate(order):
        strides[d] = dense._strides[i]
    return view_op(dense, tuple(shape), tuple(strides), 0)  # dense's dims put back in shape's order


def _like_query(query: Tensor, out: Tensor) -> Tensor:
    """The result laid out as torch's CPU kernels lay it out: dense, its dims before the last in the memory order of
    the query's (a query made by ``x.view(b, L, h, e).transpose(1, 2)`` gives a (b, L, h, e)-major result, so
    ``out.transpose(1, 2).view(b, L, h * e)`` works without ``contiguous()``, as in torch)."""
    n = out.ndim
    order = _query_order(query) if query.ndim == n else None
    if order is None:
        return out
    back = tuple(order.index(d) for d in range(n))
    return out.permute(order).contiguous().permute(back)


def _composed_attention(query, key, value, attn_mask, dropout_p, is_causal, s, keep=None):
    """The op-by-op path: masks, dropout, broadcast batch dims, float16; double backward. ``keep``: the
    dropout mask to apply (the fused path's, drawn again), else one is drawn."""
    q_len, k_len = query._shape[-2], key._shape[-2]
    scores = matmul(ew.mul(query, s), key.transpose(-2, -1))
    if is_causal:
        attn_mask = _causal_mask(q_len, k_len)
    if attn_mask is not None:
        if attn_mask.dtype is _dtype.bool_:
            scores = ew.where(attn_mask, scores, scalar_tensor(-math.inf, scores.dtype))
        else:
            scores = ew.add(scores, attn_mask)
    # a causal mask leaves every query at least key 0, so only a user's mask can empty a row
    p = _masked_softmax(scores, attn_mask is not None and not (is_causal and k_len > 0))
    if keep is not None:
        p = ew.where(keep, ew.mul(p, 1.0 / (1.0 - dropout_p)), 0.0)  # what dropout makes of it
    elif dropout_p > 0.0:
        p = dropout(p, dropout_p, True)
    return matmul(p, value)


def _unit_last(t: Tensor) -> Tensor:
    return t if t._shape[-1] <= 1 or t._strides[-1] == 1 else t.contiguous()


def _fused_attention(query: Tensor, key: Tensor, value: Tensor, s: float, is_causal: bool, dropout_p: float) -> Tensor:
    """One C call each way (pf_attention): strided q, k, v are read in place (a unit last
    stride is all it needs) and the output is written laid out as ``_like_query`` lays it out;
    the causal mask is a loop bound, the softmax weights are kept for backward. Dropout takes
    the counters ``dropout`` would take for the weights' shape, so it drops the same weights;
    its mask is kept for backward (a byte per weight; bytes past a causal row's last key are
    not written and never read). Double backward differentiates the composition with the mask
    drawn again from those counters."""
    q, k, v = _unit_last(query), _unit_last(key), _unit_last(value)
    dt = q.dtype
    out = _empty_like_query(query, q._shape[:-1] + (v._shape[-1],), dt)  # written in place of _like_query's copy
    p = empty_tensor(q._shape[:-1] + (k._shape[-2],), dt)
    seed = offset = 0
    mask = None  # the dropout mask, kept for backward (a byte per weight)
    if dropout_p > 0.0:
        seed, offset = _generator(None).take(p._numel)
        mask = empty_tensor(p._shape, _dtype.bool_)
    check(lib.pf_attention(q._d(), k._d(), v._d(), out._d(), p._d(), s, int(is_causal), dropout_p, seed, offset,
                           NULL if mask is None else mask._d()))  # fmt: skip
    if needs_grad(query, key, value):

        def backward(g):
            if _grad_mode.enabled:  # create_graph: differentiate the composition instead
                keep = None
                if dropout_p > 0.0:
                    keep = empty_tensor(p._shape, _dtype.bool_)
                    check(lib.pf_random(lib.PF_RAND_BERNOULLI, keep._d(), seed, offset, 1.0 - dropout_p, 0.0))
                return _regrad(lambda a, b, c: _composed_attention(a, b, c, None, dropout_p, is_causal, s, keep),
                               (query, key, value), g)  # fmt: skip
            g = _unit_last(g)
            # each gradient laid out as its input (q from x.view(b, L, h, e).transpose(1, 2) gets a (b, L, h, e)-major
            # gradient), so the views' backward back to x's shape needs no copy
            gq, gk, gv = (_empty_like_query(t, t._shape, dt) for t in (query, key, value))
            kept = NULL if mask is None else mask._d()
            check(lib.pf_attention_backward(g._d(), q._d(), k._d(), v._d(), p._d(), gq._d(), gk._d(), gv._d(), s,
                                            int(is_causal), dropout_p, kept))  # fmt: skip
            return (gq if query.requires_grad else None, gk if key.requires_grad else None,
                    gv if value.requires_grad else None)  # fmt: skip

        record("ScaledDotProductAttentionBackward0", backward, (query, key, value), out, (query, key, value))
    return out


def _repeat_heads(t: Tensor, n: int) -> Tensor:
    """[..., H, S, E] -> [..., H*n, S, E], each head repeated n times in a row (repeat_interleave)."""
    shape = t._shape
    return t.unsqueeze(-3).expand(*shape[:-2], n, *shape[-2:]).reshape(*shape[:-3], shape[-3] * n, *shape[-2:])


def _float_mask(fn: str, mask: Tensor | None, name: str, dt) -> Tensor | None:
    """torch's canonical mask: a bool mask (True = masked out) becomes -inf/0 in ``dt``."""
    if mask is None:
        return None
    _tensor_arg(mask, fn, name)
    if mask.dtype is _dtype.bool_:
        return ew.where(mask, scalar_tensor(-math.inf, dt), scalar_tensor(0.0, dt))
    if not mask.dtype.is_floating_point:
        raise TypeError(f"{fn}(): only bool and floating types of {name} are supported, got {mask.dtype.name}")
    return mask if mask.dtype is dt else mask.to(dt)


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """One more key column that every query may attend to (bias_k or add_zero_attn)."""
    if mask is None:
        return None
    from pyframe.nn.functional.padding import pad

    return pad(mask, (0, 1))


def multi_head_attention_forward(
    query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
    in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None, bias_v: Tensor | None,
    add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None,
    training: bool = True, key_padding_mask: Tensor | None = None, need_weights: bool = True,
    attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False, q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None, v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
    static_v: Tensor | None = None, average_attn_weights: bool = True, is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:  # fmt: skip
    """Same as torch.nn.functional.multi_head_attention_forward, sequence-first inputs
    ``(L, N, E)`` or unbatched ``(L, E)``. Bool masks are True where attention is NOT allowed
    (torch's convention here, the opposite of SDPA's). Differences: ``static_k``/``static_v``
    are not supported (NotImplementedError); a query row with every key masked out gives zeros
    where torch's ``need_weights=True`` path gives NaN."""
    fn = "multi_head_attention_forward"
    if static_k is not None or static_v is not None:
        raise NotImplementedError(f"{fn}(): static_k / static_v are not supported")
    for name, t in (("query", query), ("key", key), ("value", value)):
        _float_arg(t, fn, name)
    batched = query.ndim == 3
    if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
        raise ShapeError(f"{fn}(): query, key and value must all be 3-d (L, N, E) or all 2-d (L, E), got shapes "
                         f"{list(query._shape)}, {list(key._shape)} and {list(value._shape)}")  # fmt: skip
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query._shape
    src_len = key._shape[0]
    if embed_dim != embed_dim_to_check:
        raise ShapeError(f"{fn}(): was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    if embed_dim % num_heads:
        raise ShapeError(f"{fn}(): embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if key._shape[:2] != value._shape[:2] or key._shape[1] != bsz:
        raise ShapeError(f"{fn}(): key {list(key._shape)} and value {list(value._shape)} must share (S, N) with "
                         f"N = query's batch {bsz}")  # fmt: skip
    head_dim = embed_dim // num_heads
    if is_causal and attn_mask is None:
        raise RuntimeError(f"{fn}(): need attn_mask if specifying the is_causal hint")
    if key_padding_mask is not None:
        if key_padding_mask._shape != (bsz, src_len):
            raise ShapeError(f"{fn}(): expected key_padding_mask of shape {[bsz, src_len] if batched else [src_len]},"
                             f" got {list(key_padding_mask._shape)}")  # fmt: skip
        is_causal = False
    dt = query.dtype
    key_padding_mask = _float_mask(fn, key_padding_mask, "key_padding_mask", dt)
    attn_mask = _float_mask(fn, attn_mask, "attn_mask", dt)
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if attn_mask._shape != (tgt_len, src_len):
                raise ShapeError(f"{fn}(): the shape of the 2D attn_mask is {list(attn_mask._shape)}, but should "
                                 f"be {[tgt_len, src_len]}")  # fmt: skip
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.ndim == 3:
            if attn_mask._shape != (bsz * num_heads, tgt_len, src_len):
                raise ShapeError(f"{fn}(): the shape of the 3D attn_mask is {list(attn_mask._shape)}, but should "
                                 f"be {[bsz * num_heads, tgt_len, src_len]}")  # fmt: skip
        else:
            raise ShapeError(f"{fn}(): attn_mask must be 2-d or 3-d, got shape {list(attn_mask._shape)}")

    # input projections
    if not use_separate_proj_weight:
        if in_proj_weight is None or in_proj_weight._shape != (3 * embed_dim, embed_dim):
            got = None if in_proj_weight is None else list(in_proj_weight._shape)
            raise ShapeError(f"{fn}(): in_proj_weight must have shape {[3 * embed_dim, embed_dim]}, got {got}")
        w_q, w_k, w_v = in_proj_weight.chunk(3)
    else:
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
        if w_q is None or w_k is None or w_v is None:
            raise ValueError(f"{fn}(): use_separate_proj_weight needs q_proj_weight, k_proj_weight, v_proj_weight")
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    if not use_separate_proj_weight and query is key and key is value:
        q, k, v = linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
    else:
        q, k, v = linear(query, w_q, b_q), linear(key, w_k, b_k), linear(value, w_v, b_v)

    from pyframe.ops.join import cat

    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.reshape(1, 1, embed_dim).expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.reshape(1, 1, embed_dim).expand(1, bsz, embed_dim)])
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        raise ValueError(f"{fn}(): bias_k and bias_v must both be given or both be None")

    # [L, N, E] -> [N*H, L, hd]
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = k.reshape(k._shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    v = v.reshape(v._shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if add_zero_attn:
        from pyframe.ops._common import zeros_of

        z = zeros_of((bsz * num_heads, 1, head_dim), dt)
        k, v = cat([k, z], 1), cat([v, z], 1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    s = k._shape[1]
    if key_padding_mask is not None:
        kpm = key_padding_mask.reshape(bsz, 1, 1, s).expand(bsz, num_heads, 1, s).reshape(bsz * num_heads, 1, s)
        attn_mask = kpm if attn_mask is None else ew.add(attn_mask, kpm)
    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = matmul(ew.mul(q, 1.0 / math.sqrt(head_dim)), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = ew.add(scores, attn_mask)
        w = _masked_softmax(scores, attn_mask is not None)
        if dropout_p > 0.0:
            w = dropout(w, dropout_p)
        out = matmul(w, v)  # [N*H, L, hd]
    else:
        if attn_mask is not None and attn_mask._shape[0] == 1 and attn_mask.ndim == 3:
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask is not None:
            attn_mask = attn_mask.reshape(bsz, num_heads, -1, s)
        out = scaled_dot_product_attention(
            q.reshape(bsz, num_heads, tgt_len, head_dim), k.reshape(bsz, num_heads, s, head_dim),
            v.reshape(bsz, num_heads, s, head_dim), attn_mask, dropout_p,
        ).reshape(bsz * num_heads, tgt_len, head_dim)  # fmt: skip
        w = None
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if w is not None:
        w = w.reshape(bsz, num_heads, tgt_len, s)
        if average_attn_weights:
            w = rd.mean(w, 1)
    if not batched:
        out = out.squeeze(1)
        w = w.squeeze(0) if w is not None else None
    return out, w
