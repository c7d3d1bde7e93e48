"""Functional forms of the layers, activations and losses. Same as torch.nn.functional.

Every tensor computation runs in the C core through pyframe's ops. Layers with a costly
or numerically delicate gradient (linear, conv2d, the pools, batch_norm, layer_norm, the
binary cross entropies) record one node with a dedicated backward written in the same ops;
the rest are compositions and get their gradient from the ops they are made of.

The functions live in one module per family (``conv``, ``pooling``, ``normalization``,
``activation``, ``loss``, ...); this package re-exports them under torch's names.

Differences from PyTorch are listed in each docstring. Common to all: CPU only, float32
and float64 for the im2col-based ops (conv, pools, unfold, fold).
"""

from pyframe.nn.functional.activation import (
    celu,
    elu,
    gelu,
    glu,
    gumbel_softmax,
    hardshrink,
    hardsigmoid,
    hardswish,
    hardtanh,
    leaky_relu,
    log_softmax,
    logsigmoid,
    mish,
    prelu,
    relu,
    relu6,
    relu_,
    rrelu,
    selu,
    sigmoid,
    silu,
    softmax,
    softmin,
    softplus,
    softshrink,
    softsign,
    tanh,
    tanhshrink,
    threshold,
)
from pyframe.nn.functional.attention import multi_head_attention_forward, scaled_dot_product_attention
from pyframe.nn.functional.conv import conv1d, conv2d, conv_transpose1d, conv_transpose2d, fold, unfold
from pyframe.nn.functional.distance import cosine_similarity, pairwise_distance
from pyframe.nn.functional.dropout import alpha_dropout, dropout, dropout1d, dropout2d, dropout3d
from pyframe.nn.functional.linear import bilinear, linear
from pyframe.nn.functional.loss import (
    binary_cross_entropy,
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    cross_entropy,
    gaussian_nll_loss,
    hinge_embedding_loss,
    huber_loss,
    kl_div,
    l1_loss,
    margin_ranking_loss,
    mse_loss,
    multi_margin_loss,
    multilabel_soft_margin_loss,
    nll_loss,
    poisson_nll_loss,
    smooth_l1_loss,
    soft_margin_loss,
    triplet_margin_loss,
)
from pyframe.nn.functional.normalization import batch_norm, group_norm, instance_norm, layer_norm, normalize, rms_norm
from pyframe.nn.functional.padding import pad
from pyframe.nn.functional.pooling import (
    adaptive_avg_pool1d,
    adaptive_avg_pool2d,
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    avg_pool1d,
    avg_pool2d,
    max_pool1d,
    max_pool2d,
)
from pyframe.nn.functional.sparse import embedding, one_hot
from pyframe.nn.functional.upsampling import interpolate, pixel_shuffle, pixel_unshuffle, upsample

__all__ = [
    "linear", "bilinear", "conv2d", "unfold", "fold", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
    "batch_norm", "layer_norm", "group_norm", "embedding", "dropout", "one_hot", "pad",
    "relu", "relu_", "relu6", "leaky_relu", "elu", "hardtanh", "gelu", "tanh", "sigmoid", "silu", "softplus",
    "logsigmoid", "softmax", "softmin", "log_softmax", "normalize",
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "scaled_dot_product_attention", "multi_head_attention_forward",
    "conv1d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "avg_pool1d", "adaptive_avg_pool1d",
    "dropout1d", "dropout2d", "dropout3d", "interpolate", "upsample", "pixel_shuffle", "pixel_unshuffle",
    "mish", "selu", "celu", "hardsigmoid", "hardswish", "softsign", "tanhshrink", "softshrink", "hardshrink",
    "threshold", "glu", "prelu", "rrelu", "pairwise_distance", "cosine_similarity", "soft_margin_loss",
    "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss", "triplet_margin_loss",
    "multilabel_soft_margin_loss", "multi_margin_loss", "poisson_nll_loss", "gaussian_nll_loss",
    "gumbel_softmax", "adaptive_max_pool1d", "adaptive_max_pool2d", "alpha_dropout", "instance_norm", "rms_norm",
]  # fmt: skip
