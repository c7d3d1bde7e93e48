"""``MultiheadAttention``. Same as torch.nn.MultiheadAttention."""

from __future__ import annotations

from pyframe import _grad_mode
from pyframe.nn import functional as F
from pyframe.nn import init
from pyframe.nn.modules.linear import Linear
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.ops import creation
from pyframe.tensor import Tensor

__all__ = [
    "MultiheadAttention",
]  # fmt: skip


class NonDynamicallyQuantizableLinear(Linear):
    """torch's name for MultiheadAttention's output projection (a plain Linear)."""


class MultiheadAttention(Module):
    """Same as torch.nn.MultiheadAttention: parameters ``in_proj_weight`` [3E, E] (or
    ``q/k/v_proj_weight`` when ``kdim``/``vdim`` differ from E), ``in_proj_bias``,
    ``out_proj``, optional ``bias_k``/``bias_v``, initialised as torch's (xavier-uniform
    projections, zero biases). Differences: see ``F.multi_head_attention_forward``."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None, dtype=None) -> None:  # fmt: skip
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")  # fmt: skip
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim must be divisible by num_heads, got {embed_dim} and {num_heads}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout}")
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        self.add_zero_attn = add_zero_attn
        e = embed_dim
        with _grad_mode.no_grad():
            if self._qkv_same_embed_dim:
                self.in_proj_weight = Parameter(init.xavier_uniform_(creation.empty(3 * e, e, dtype=dtype)))
                for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                    self.register_parameter(name, None)
            else:
                self.q_proj_weight = Parameter(init.xavier_uniform_(creation.empty(e, e, dtype=dtype)))
                self.k_proj_weight = Parameter(init.xavier_uniform_(creation.empty(e, self.kdim, dtype=dtype)))
                self.v_proj_weight = Parameter(init.xavier_uniform_(creation.empty(e, self.vdim, dtype=dtype)))
                self.register_parameter("in_proj_weight", None)
            if bias:
                self.in_proj_bias = Parameter(creation.zeros(3 * e, dtype=dtype))
            else:
                self.register_parameter("in_proj_bias", None)
            out_proj = NonDynamicallyQuantizableLinear(e, e, bias=bias, dtype=dtype)
            if bias:
                init.constant_(out_proj.bias, 0.0)
            self.out_proj = out_proj
            if add_bias_kv:
                self.bias_k = Parameter(init.xavier_normal_(creation.empty(1, 1, e, dtype=dtype)))
                self.bias_v = Parameter(init.xavier_normal_(creation.empty(1, 1, e, dtype=dtype)))
            else:
                self.bias_k = self.bias_v = None

    def _reset_parameters(self) -> None:
        with _grad_mode.no_grad():
            if self._qkv_same_embed_dim:
                init.xavier_uniform_(self.in_proj_weight)
            else:
                for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                    init.xavier_uniform_(w)
            if self.in_proj_bias is not None:
                init.constant_(self.in_proj_bias, 0.0)
                init.constant_(self.out_proj.bias, 0.0)
            if self.bias_k is not None:
                init.xavier_normal_(self.bias_k)
                init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:  # fmt: skip
        """(attn_output, attn_weights or None), as torch's."""
        batched = isinstance(query, Tensor) and query.ndim == 3
        if self.batch_first and batched:
            # transpose once per distinct tensor, so self-attention keeps its one fused projection
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (t.transpose(1, 0) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal,
        )  # fmt: skip
        if self.batch_first and batched:
            out = out.transpose(1, 0)
        return out, weights
