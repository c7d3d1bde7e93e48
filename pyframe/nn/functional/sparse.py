"""Embedding and one_hot."""

from __future__ import annotations

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import _tensor_arg
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.ops import reduce as rd
from pyframe.ops._common import zeros_of
from pyframe.tensor import Tensor

__all__ = [
    "embedding", "one_hot",
]  # fmt: skip


def _index_arg(t, fn: str) -> Tensor:
    _tensor_arg(t, fn, "indices")
    if t.dtype is _dtype.int32:
        return t.to(_dtype.int64)
    if t.dtype is not _dtype.int64:
        raise TypeError(f"{fn}(): indices must be an int64 (or int32) tensor, got {t.dtype.name}")
    return t


def embedding(input: Tensor, weight: Tensor, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.embedding: rows of ``weight`` gathered in C; the row at
    ``padding_idx`` gets no gradient. ``max_norm``, ``scale_grad_by_freq`` and ``sparse`` are
    not supported (NotImplementedError)."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("embedding(): max_norm, scale_grad_by_freq and sparse are not supported")
    idx = _index_arg(input, "embedding")
    _tensor_arg(weight, "embedding", "weight")
    if weight.ndim != 2:
        raise ShapeError(f"embedding(): weight must be 2-d [num_embeddings, embedding_dim], got {list(weight._shape)}")
    v, dim = weight._shape
    if padding_idx is not None:
        if not -v <= padding_idx < v:
            raise ValueError(f"embedding(): padding_idx {padding_idx} must be within num_embeddings {v}")
        padding_idx %= v
    flat = idx.reshape(-1)
    if flat._numel:
        lo, hi = int(rd.amin(flat)), int(rd.amax(flat))
        if lo < 0 or hi >= v:
            raise IndexError(
                f"embedding(): index {lo if lo < 0 else hi} is out of range for an embedding table of {v} rows "
                f"(weight shape {list(weight._shape)})"
            )
    with _grad_mode.no_grad():
        out = ix.index_select(weight, 0, flat)
    if needs_grad(weight):

        def backward(g):
            gw = ix.index_add_(zeros_of(weight._shape, g.dtype), 0, flat, g.reshape(-1, dim))
            if padding_idx is not None:
                gw[padding_idx] = 0
            return (gw,)

        record("EmbeddingBackward0", backward, (weight,), out)
    return out.view(idx._shape + (dim,))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """Same as torch.nn.functional.one_hot: int64 [..., num_classes]."""
    _tensor_arg(tensor, "one_hot", "tensor")
    if tensor.dtype is not _dtype.int64:
        raise TypeError(f"one_hot(): is only applicable to index tensors of dtype int64, got {tensor.dtype.name}")
    if tensor._numel == 0:
        if num_classes == -1:
            raise RuntimeError("one_hot(): can not infer the total number of classes from an empty tensor")
    else:
        lo, hi = int(rd.amin(tensor)), int(rd.amax(tensor))
        if lo < 0:
            raise RuntimeError(f"one_hot(): class values must be non-negative, got {lo}")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError(f"one_hot(): class values must be smaller than num_classes={num_classes}, got {hi}")
    from pyframe.ops.creation import arange

    return ew.eq(tensor.unsqueeze(-1), arange(num_classes)).to(_dtype.int64)
