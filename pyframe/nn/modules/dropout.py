"""Dropout layers. Same as torch.nn's."""

from __future__ import annotations

from pyframe.nn import functional as F
from pyframe.nn.modules._utils import _Layer
from pyframe.tensor import Tensor

__all__ = [
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
]  # fmt: skip


class _DropoutNd(_Layer):
    """What the dropout layers share (torch's ``_DropoutNd``): ``p`` checked, ``inplace``, the
    repr; ``forward`` calls the class's functional form (``fn=``)."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return self._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd, fn=F.dropout):
    """Same as torch.nn.Dropout: zeroes elements with probability ``p`` in training mode and
    scales the rest by ``1 / (1 - p)``; the identity in eval mode."""


class Dropout1d(_DropoutNd, fn=F.dropout1d):
    """Same as torch.nn.Dropout1d: zeroes whole channels of (N, C, L) or (C, L)."""


class Dropout2d(_DropoutNd, fn=F.dropout2d):
    """Same as torch.nn.Dropout2d: zeroes whole channels of (N, C, H, W)."""


class Dropout3d(_DropoutNd, fn=F.dropout3d):
    """Same as torch.nn.Dropout3d: zeroes whole channels of (N, C, D, H, W) or (C, D, H, W)."""


class AlphaDropout(_DropoutNd, fn=F.alpha_dropout):
    """Same as torch.nn.AlphaDropout (for SELU networks)."""


class FeatureAlphaDropout(_DropoutNd, fn=F.feature_alpha_dropout):
    """Same as torch.nn.FeatureAlphaDropout: alpha dropout of whole channels of (N, C, *) (for SELU networks)."""
