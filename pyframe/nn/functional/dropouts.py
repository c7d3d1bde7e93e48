"""Dropout."""

from __future__ import annotations

from pyframe import _grad_mode
from pyframe._backend import lib
from pyframe.nn.functional._utils import _float_arg
from pyframe.ops import elementwise as ew
from pyframe.tensor import Tensor, empty_tensor


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.dropout: a Bernoulli(1 - p) mask from pyframe's seeded
    generator (``pyframe.manual_seed``), scaled by 1 / (1 - p). The random stream differs
    from torch's."""
    _float_arg(input, "dropout")
    if not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout(): probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    from pyframe.factory import _draw

    with _grad_mode.no_grad():
        mask = empty_tensor(input._shape, input.dtype)
        if p == 1.0:
            ew.fill_(mask, 0.0)
        else:
            _draw(lib.PF_RAND_BERNOULLI, mask, 1.0 - p, 0.0)
            ew.inplace_ops["mul_"](mask, 1.0 / (1.0 - p))
    if inplace:
        return ew.inplace_ops["mul_"](input, mask)
    return ew.mul(input, mask)
