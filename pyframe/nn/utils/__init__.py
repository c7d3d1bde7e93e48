"""Utilities on parameters: gradient clipping, flattening, parametrizations. Same as torch.nn.utils."""

from pyframe.nn.utils import parametrizations, parametrize, prune, rnn
from pyframe.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_
from pyframe.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from pyframe.nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters", "parametrize",
    "parametrizations", "prune", "rnn", "weight_norm", "remove_weight_norm",
]  # fmt: skip
