"""Utilities on parameters: gradient clipping, flattening, parametrizations, weight and spectral norm hooks,
batch-norm fusion, ``skip_init``. Same as torch.nn.utils."""

from pyframe import _submodules
from pyframe.nn.utils import parametrizations, parametrize, prune, rnn, stateless
from pyframe.nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from pyframe.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from pyframe.nn.utils.fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from pyframe.nn.utils.init import skip_init
from pyframe.nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from pyframe.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters", "parametrize",
    "parametrizations", "prune", "rnn", "weight_norm", "remove_weight_norm", "clip_grad_norm", "clip_grads_with_norm_",
    "get_total_norm", "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
    "skip_init", "spectral_norm", "remove_spectral_norm", "stateless",
]  # fmt: skip


# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
