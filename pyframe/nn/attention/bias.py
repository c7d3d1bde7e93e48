"""Same as torch.nn.attention.bias: causal attention masks as tensors, ``causal_upper_left`` (query i sees keys
0..i, the same as ``is_causal=True``) and ``causal_lower_right`` (the last query sees every key: the diagonal
aligned to the bottom-right corner, for decoding with a cache)."""

from __future__ import annotations

import enum

from pyframe.ops.creation import ones
from pyframe.ops.index import tril
from pyframe.tensor import Tensor, _new

__all__ = ["CausalVariant", "CausalBias", "causal_upper_left", "causal_lower_right"]


class CausalVariant(enum.IntEnum):
    """Same as torch.nn.attention.bias.CausalVariant: where the causal diagonal is anchored."""

    UPPER_LEFT = 1
    LOWER_RIGHT = 2


class CausalBias(Tensor):
    """Same as torch.nn.attention.bias.CausalBias: a ``(seq_len_q, seq_len_kv)`` bool mask (True where a query
    may attend) of one ``CausalVariant``; pass it as ``attn_mask`` to ``scaled_dot_product_attention``."""

    __slots__ = ("variant", "seq_len_q", "seq_len_kv")

    def __new__(cls, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
        if not isinstance(variant, CausalVariant):
            raise TypeError(f"CausalBias: variant must be a CausalVariant, got {variant!r}")
        for name, n in (("seq_len_q", seq_len_q), ("seq_len_kv", seq_len_kv)):
            if not isinstance(n, int) or n < 0:
                raise ValueError(f"CausalBias: {name} must be a non-negative int, got {n!r}")
        shift = 0 if variant is CausalVariant.UPPER_LEFT else seq_len_kv - seq_len_q
        mask = tril(ones(seq_len_q, seq_len_kv), diagonal=shift).bool()
        t = _new(mask._storage, mask._shape, mask._strides, mask._offset, mask.dtype, cls)
        t.variant, t.seq_len_q, t.seq_len_kv = variant, seq_len_q, seq_len_kv
        return t

    def __init__(self, variant: CausalVariant, seq_len_q: int, seq_len_kv: int):
        pass  # everything happens in __new__

    def __repr__(self) -> str:
        return super().__repr__()


def causal_upper_left(*size) -> CausalBias:
    """Same as torch.nn.attention.bias.causal_upper_left: the mask of ``is_causal=True``, for sizes
    ``(seq_len_q, seq_len_kv)``."""
    if len(size) != 2:
        raise ValueError(f"causal_upper_left expects two sizes (seq_len_q, seq_len_kv), got {size}")
    return CausalBias(CausalVariant.UPPER_LEFT, size[0], size[1])


def causal_lower_right(*size) -> CausalBias:
    """Same as torch.nn.attention.bias.causal_lower_right: the causal mask anchored at the bottom-right corner,
    for sizes ``(seq_len_q, seq_len_kv)``."""
    if len(size) != 2:
        raise ValueError(f"causal_lower_right expects two sizes (seq_len_q, seq_len_kv), got {size}")
    return CausalBias(CausalVariant.LOWER_RIGHT, size[0], size[1])
