"""Utilities on parameters: gradient clipping, flattening, parametrizations. Same as torch.nn.utils."""

from pyframe.nn.utils import parametrizations, parametrize, prune, rnn
from pyframe.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_
from pyframe.nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters

__all__ = [
    "clip_grad_norm_", "clip_grad_value_", "parameters_to_vector", "vector_to_parameters", "parametrize",
    "parametrizations", "prune", "rnn",
]  # fmt: skip
