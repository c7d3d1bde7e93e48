"""The transformer layers, stacks and ``Transformer``. Same as torch.nn's."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable

from pyframe.nn import functional as F
from pyframe.nn.modules.attention import MultiheadAttention
from pyframe.nn.modules.container import ModuleList
from pyframe.nn.modules.dropout import Dropout
from pyframe.nn.modules.linear import Linear
from pyframe.nn.modules.module import Module
from pyframe.nn.modules.normalization import LayerNorm
from pyframe.ops import creation
from pyframe.ops import elementwise as ew
from pyframe.ops._common import scalar_tensor
from pyframe.ops.index import triu
from pyframe.tensor import Tensor

__all__ = [
    "Transformer", "TransformerDecoder", "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer",
]  # fmt: skip


def _activation(activation) -> Callable:
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if callable(activation):
        return activation
    raise RuntimeError(f"activation should be relu/gelu or a callable, not {activation!r}")


class _TransformerLayer(Module):
    """What the encoder and decoder layers share: torch's signature, submodules named and
    registered in torch's order (so state dicts load both ways), the self-attention and
    feed-forward blocks. A decoder layer (``_cross``) adds ``multihead_attn`` over the memory and
    a third norm and dropout. There is no fused "fast path": eval mode computes the same ops."""

    _cross = False

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = F.relu, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:  # fmt: skip
        super().__init__()
        act = _activation(activation)
        blocks = 3 if self._cross else 2

        def attention():
            return MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                      device=device, dtype=dtype)  # fmt: skip

        self.self_attn = attention()
        if self._cross:
            self.multihead_attn = attention()
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, device=device, dtype=dtype)
        self.norm_first = norm_first
        for i in range(1, blocks + 1):
            setattr(self, f"norm{i}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device, dtype=dtype))
        for i in range(1, blocks + 1):
            setattr(self, f"dropout{i}", Dropout(dropout))
        self.activation = act

    def _sa_block(self, x: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]  # fmt: skip
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        last = self.dropout3 if self._cross else self.dropout2
        return last(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoderLayer(_TransformerLayer):
    """Same as torch.nn.TransformerEncoderLayer: self-attention then a feed-forward block,
    each with dropout and a residual connection, post-norm (or pre-norm with
    ``norm_first=True``). Submodule names as torch's (``self_attn``, ``linear1``,
    ``linear2``, ``norm1``, ``norm2``, ``dropout``, ``dropout1``, ``dropout2``)."""

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


def _clones(layer: Module, num_layers: int, owner: str) -> ModuleList:
    """``num_layers`` deep copies of ``layer`` (``layers.0`` ...)."""
    if not isinstance(num_layers, int) or num_layers < 0:
        raise ValueError(f"{owner}: num_layers must be a non-negative int, got {num_layers!r}")
    return ModuleList([copy.deepcopy(layer) for _ in range(num_layers)])


class TransformerEncoder(Module):
    """Same as torch.nn.TransformerEncoder: ``num_layers`` deep copies of ``encoder_layer``
    (``layers.0`` ...), then the optional final ``norm``. ``enable_nested_tensor`` and
    ``mask_check`` are accepted and have no effect (there are no nested tensors)."""

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:  # fmt: skip
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers, "TransformerEncoder")
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


class TransformerDecoderLayer(_TransformerLayer):
    """Same as torch.nn.TransformerDecoderLayer: self-attention, attention over ``memory``, then
    the feed-forward block, each with dropout and a residual; post-norm or ``norm_first``.
    Submodule names as torch's (``self_attn``, ``multihead_attn``, ``norm1``-``norm3``, ...)."""

    _cross = True

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:  # fmt: skip
        x = tgt
        if self.norm_first:
            x = ew.add(x, self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = ew.add(x, self._mha_block(self.norm2(x), memory, memory_mask, memory_key_padding_mask,
                                          memory_is_causal))  # fmt: skip
            x = ew.add(x, self._ff_block(self.norm3(x)))
        else:
            x = self.norm1(ew.add(x, self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal)))
            x = self.norm2(ew.add(x, self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                                     memory_is_causal)))  # fmt: skip
            x = self.norm3(ew.add(x, self._ff_block(x)))
        return x

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask, key_padding_mask, is_causal: bool) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                need_weights=False, is_causal=is_causal)[0]  # fmt: skip
        return self.dropout2(x)


class TransformerDecoder(Module):
    """Same as torch.nn.TransformerDecoder: ``num_layers`` deep copies of ``decoder_layer``, then
    the optional final ``norm``."""

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers, "TransformerDecoder")
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:  # fmt: skip
        out = tgt
        for mod in self.layers:
            out = mod(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)  # fmt: skip
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer(Module):
    """Same as torch.nn.Transformer: an encoder and a decoder stack, each with a final
    LayerNorm, every parameter with more than one dim re-initialised xavier-uniform."""

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable = F.relu, custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None) -> None:  # fmt: skip
        super().__init__()
        from pyframe import _grad_mode
        from pyframe.nn import init

        def stack(layer_cls, stack_cls, num_layers: int) -> Module:
            layer = layer_cls(d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps, batch_first,
                              norm_first, bias, device=device, dtype=dtype)  # fmt: skip
            return stack_cls(layer, num_layers, LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device,
                                                          dtype=dtype))  # fmt: skip

        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = stack(TransformerEncoderLayer, TransformerEncoder, num_encoder_layers)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = stack(TransformerDecoderLayer, TransformerDecoder, num_decoder_layers)
        with _grad_mode.no_grad():
            for p in self.parameters():
                if p.ndim > 1:
                    init.xavier_uniform_(p)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:  # fmt: skip
        batched = src.ndim == 3
        if batched and src._shape[0 if self.batch_first else 1] != tgt._shape[0 if self.batch_first else 1]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src._shape[-1] != self.d_model or tgt._shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)  # fmt: skip
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)  # fmt: skip

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """Same as torch's: a float [sz, sz] mask, -inf above the diagonal and 0 elsewhere."""
        from pyframe import _dtype

        above = triu(creation.ones(sz, sz, dtype=_dtype.bool_), 1)
        dt = creation.empty(0, dtype=dtype).dtype
        return ew.where(above, scalar_tensor(-math.inf, dt), scalar_tensor(0.0, dt))
