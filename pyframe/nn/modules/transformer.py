"""``TransformerEncoderLayer`` and ``TransformerEncoder``. Same as torch.nn's."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

from pyframe import factory
from pyframe.nn import functional as F
from pyframe.nn.modules.attention import MultiheadAttention
from pyframe.nn.modules.container import ModuleList
from pyframe.nn.modules.dropout import Dropout
from pyframe.nn.modules.linear import Linear
from pyframe.nn.modules.module import Module
from pyframe.nn.modules.normalization import LayerNorm
from pyframe.ops import elementwise as ew
from pyframe.ops._common import scalar_tensor
from pyframe.tensor import Tensor

__all__ = ["Transformer", "TransformerEncoder", "TransformerEncoderLayer"]


def _activation(activation) -> Callable:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if callable(activation):
        return activation
    raise RuntimeError(f"activation should be relu/gelu or a callable, not {activation!r}")


class TransformerEncoderLayer(Module):
    """Same as torch.nn.TransformerEncoderLayer: self-attention then a feed-forward block,
    each with dropout and a residual connection, post-norm (or pre-norm with
    ``norm_first=True``). Submodule names as torch's (``self_attn``, ``linear1``,
    ``linear2``, ``norm1``, ``norm2``, ``dropout``, ``dropout1``, ``dropout2``), so state
    dicts load both ways. There is no fused "fast path": eval mode computes the same ops."""

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:  # fmt: skip
        super().__init__()
        act = _activation(activation)
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            dtype=dtype)  # fmt: skip
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = act

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:  # fmt: skip
        x = src
        if self.norm_first:
            x = ew.add(x, self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal))
            x = ew.add(x, self._ff_block(self.norm2(x)))
        else:
            x = self.norm1(ew.add(x, self._sa_block(x, src_mask, src_key_padding_mask, is_causal)))
            x = self.norm2(ew.add(x, self._ff_block(x)))
        return x

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]  # fmt: skip
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """Same as torch.nn.TransformerEncoder: ``num_layers`` deep copies of ``encoder_layer``
    (``layers.0`` ...), then the optional final ``norm``. ``enable_nested_tensor`` and
    ``mask_check`` are accepted and have no effect (there are no nested tensors)."""

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:  # fmt: skip
        super().__init__()
        if not isinstance(num_layers, int) or num_layers < 0:
            raise ValueError(f"TransformerEncoder: num_layers must be a non-negative int, got {num_layers!r}")
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:  # fmt: skip
        out = src
        for mod in self.layers:
            out = mod(out, src_mask=mask, is_causal=bool(is_causal), src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer:
    """Only ``Transformer.generate_square_subsequent_mask`` (the full encoder-decoder model
    is not implemented yet)."""

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """Same as torch's: a float [sz, sz] mask, -inf above the diagonal and 0 elsewhere."""
        from pyframe import _dtype

        above = ew.triu(factory.ones(sz, sz, dtype=_dtype.bool_), 1)
        dt = factory.empty(0, dtype=dtype).dtype
        return ew.where(above, scalar_tensor(-math.inf, dt), scalar_tensor(0.0, dt))
