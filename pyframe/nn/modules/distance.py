"""``PairwiseDistance`` and ``CosineSimilarity``. Same as torch.nn's."""

from __future__ import annotations

from pyframe.nn import functional as F
from pyframe.nn.modules.module import Module
from pyframe.tensor import Tensor

__all__ = [
    "CosineSimilarity", "PairwiseDistance",
]  # fmt: skip


class PairwiseDistance(Module):
    """Same as torch.nn.PairwiseDistance."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Same as torch.nn.CosineSimilarity."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
