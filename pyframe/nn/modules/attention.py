"""``MultiheadAttention``. Same as torch.nn.MultiheadAttention."""

from __future__ import annotations

from pyframe import _grad_mode
from pyframe.nn import functional as F
from pyframe.nn import init
from pyframe.nn.modules.linear import NonDynamicallyQuantizableLinear
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.ops import creation
from pyframe.tensor import Tensor

__all__ = [
    "MultiheadAttention",
]  # fmt: skip


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

        def new(*shape):
            return creation.empty(*shape, dtype=dtype, device=device)

        # created and initialised first, registered after (as every built-in layer), so a
        # registration hook has the last word; torch registers first, then _reset_parameters
        if self._qkv_same_embed_dim:
            weights = {"in_proj_weight": new(3 * e, e), "q_proj_weight": None, "k_proj_weight": None,
                       "v_proj_weight": None}  # fmt: skip
        else:
            weights = {"q_proj_weight": new(e, e), "k_proj_weight": new(e, self.kdim),
                       "v_proj_weight": new(e, self.vdim), "in_proj_weight": None}  # fmt: skip
        in_proj_bias = new(3 * e) if bias else None
        out_proj = NonDynamicallyQuantizableLinear(e, e, bias=bias, device=device, dtype=dtype)
        bias_k, bias_v = (new(1, 1, e), new(1, 1, e)) if add_bias_kv else (None, None)
        _init_parameters([w for w in weights.values() if w is not None], in_proj_bias, out_proj.bias, bias_k, bias_v)
        for name, w in weights.items():
            self.register_parameter(name, None if w is None else Parameter(w))
        self.register_parameter("in_proj_bias", None if in_proj_bias is None else Parameter(in_proj_bias))
        self.out_proj = out_proj
        if add_bias_kv:
            self.bias_k, self.bias_v = Parameter(bias_k), Parameter(bias_v)
        else:
            self.bias_k = self.bias_v = None

    def _reset_parameters(self) -> None:
        """torch's initialisation (``__init__`` applies it before registering the parameters)."""
        weights = [self.in_proj_weight] if self._qkv_same_embed_dim else [self.q_proj_weight, self.k_proj_weight,
                                                                           self.v_proj_weight]  # fmt: skip
        _init_parameters(weights, self.in_proj_bias, self.out_proj.bias, self.bias_k, self.bias_v)

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


def _init_parameters(weights: list, in_proj_bias, out_proj_bias, bias_k, bias_v) -> None:
    """torch's ``MultiheadAttention._reset_parameters`` on the given tensors (None where absent):
    xavier-uniform projection weights, zero biases, xavier-normal ``bias_k`` and ``bias_v``."""
    with _grad_mode.no_grad():
        for w in weights:
            init.xavier_uniform_(w)
        if in_proj_bias is not None:
            init.constant_(in_proj_bias, 0.0)
            init.constant_(out_proj_bias, 0.0)
        for b in (bias_k, bias_v):
            if b is not None:
                init.xavier_normal_(b)
