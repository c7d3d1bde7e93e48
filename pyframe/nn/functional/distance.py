"""Distances: pairwise_distance and cosine_similarity."""

from __future__ import annotations

from pyframe.nn.functional._utils import _float_arg
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.tensor import Tensor

__all__ = [
    "cosine_similarity", "pairwise_distance",
]  # fmt: skip


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """Same as torch.nn.functional.pairwise_distance: ``||x1 - x2 + eps||_p`` over the last dim."""
    _float_arg(x1, "pairwise_distance", "x1")
    _float_arg(x2, "pairwise_distance", "x2")
    diff = ew.add(ew.sub(x1, x2), eps)
    if diff.ndim == 0:
        diff = diff.reshape(1)
    return rd.norm(diff, p, -1, keepdim=keepdim)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Same as torch.nn.functional.cosine_similarity: ``x1 . x2 / (max(||x1||, eps) max(||x2||, eps))``
    along ``dim``, inputs broadcast."""
    _float_arg(x1, "cosine_similarity", "x1")
    _float_arg(x2, "cosine_similarity", "x2")
    n1 = ew.clamp(rd.norm(x1, 2, dim, keepdim=True), min=eps)
    n2 = ew.clamp(rd.norm(x2, 2, dim, keepdim=True), min=eps)
    return rd.sum(ew.mul(ew.div(x1, n1), ew.div(x2, n2)), dim)
