"""Parameters as one flat vector and back. Same as torch.nn.utils.parameters_to_vector and
vector_to_parameters."""

from __future__ import annotations

from collections.abc import Iterable

from pyframe.ops import join as _join
from pyframe.tensor import Tensor
from pyframe.tensor import set_data as _set_data

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated (differentiable, a copy)."""
    return _join.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Points each parameter at its slice of ``vec`` (as torch's ``param.data = ...``: the
    parameters then share ``vec``'s memory)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected pyframe.Tensor, but got: {type(vec).__name__}")
    pointer = 0
    vec = vec.detach()
    for param in parameters:
        n = param.numel()
        _set_data(param, vec[pointer : pointer + n].view(param._shape))
        pointer += n
