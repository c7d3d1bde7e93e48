"""``Dropout``. Same as torch.nn.Dropout."""

from __future__ import annotations

from pyframe.nn import functional as F
from pyframe.nn.modules.module import Module
from pyframe.tensor import Tensor

__all__ = ["Dropout"]


class Dropout(Module):
    """Same as torch.nn.Dropout: zeroes elements with probability ``p`` in training mode and
    scales the rest by ``1 / (1 - p)``; the identity in eval mode."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
