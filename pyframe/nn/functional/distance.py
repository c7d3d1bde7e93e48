"""Distances: pairwise_distance, cosine_similarity and pdist."""

from __future__ import annotations

from pyframe.nn.functional._utils import _float_arg
from pyframe.ops import elementwise as ew
from pyframe.ops import index
from pyframe.ops import reduce as rd
from pyframe.tensor import Tensor

__all__ = [
    "cosine_similarity", "pairwise_distance", "pdist",
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


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """Same as torch.nn.functional.pdist (and torch.pdist): the distances between the rows of a 2-d input,
    upper triangle in row order."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    n = input.shape[0]
    i, j = index.triu_indices(n, n, 1)  # none for n < 2: an empty result that is still a function of input
    return rd.norm(input[i] - input[j], p, dim=-1)
