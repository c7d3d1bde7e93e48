"""``Dropout``. Same as torch.nn.Dropout."""

from __future__ import annotations

from pyframe.nn import functional as F
from pyframe.nn.modules.module import Module
from pyframe.tensor import Tensor

__all__ = [
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
]  # fmt: skip


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


class Dropout1d(Dropout):
    """Same as torch.nn.Dropout1d: zeroes whole channels of (N, C, L) or (C, L)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout):
    """Same as torch.nn.Dropout2d: zeroes whole channels of (N, C, H, W)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout):
    """Same as torch.nn.Dropout3d: zeroes whole channels of (N, C, D, H, W) or (C, D, H, W)."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(Module):
    """Same as torch.nn.AlphaDropout (for SELU networks)."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002
        return F.alpha_dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"
