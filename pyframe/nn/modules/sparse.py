"""``Embedding`` and ``EmbeddingBag``. Same as torch.nn's (``sparse=True``: the weight's gradient is a sparse COO
tensor)."""

from __future__ import annotations

from pyframe import _grad_mode
from pyframe.nn import functional as F
from pyframe.nn import init
from pyframe.nn.modules._utils import _changed
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.ops import creation
from pyframe.tensor import Tensor

__all__ = [
    "Embedding", "EmbeddingBag",
]  # fmt: skip


class Embedding(Module):
    """Same as torch.nn.Embedding: a ``(num_embeddings, embedding_dim)`` table, rows looked up by
    index; weight ~ N(0, 1), the ``padding_idx`` row zero (and its gradient zero)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Tensor | None = None, _freeze: bool = False, device=None,
                 dtype=None) -> None:  # fmt: skip
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        if padding_idx is not None:
            if padding_idx > 0 and padding_idx >= num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            if padding_idx < 0:
                if padding_idx < -num_embeddings:
                    raise AssertionError("Padding_idx must be within num_embeddings")
                padding_idx += num_embeddings
        self.padding_idx = padding_idx
        self.max_norm = max_norm
        self.norm_type = norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        self.sparse = sparse
        if _weight is None:
            weight = creation.empty(num_embeddings, embedding_dim, dtype=dtype, device=device)
            self._init(weight)
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError("Shape of weight does not match num_embeddings and embedding_dim")
            weight = _weight
        self.weight = Parameter(weight, requires_grad=not _freeze)

    def _init(self, weight: Tensor) -> None:
        with _grad_mode.no_grad():
            init.normal_(weight)
            if self.padding_idx is not None:
                weight[self.padding_idx].fill_(0)

    def reset_parameters(self) -> None:
        """Same as torch.nn.Embedding.reset_parameters: the weight drawn again from N(0, 1), the ``padding_idx`` row
        (if any) set to zeros.
        """
        self._init(self.weight)

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)  # fmt: skip

    def extra_repr(self) -> str:
        return _changed(self, f"{self.num_embeddings}, {self.embedding_dim}", padding_idx=None, max_norm=None,
                        norm_type=2, scale_grad_by_freq=False, sparse=False)  # fmt: skip

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:  # fmt: skip
        """Same as torch.nn.Embedding.from_pretrained: the table is ``embeddings`` itself."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)  # fmt: skip


class EmbeddingBag(Embedding):
    """Same as torch.nn.EmbeddingBag: ``forward(input, offsets=None, per_sample_weights=None)`` reduces each bag
    of rows by ``mode`` ("sum", "mean", "max") in one C pass (``F.embedding_bag``)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm: float | None = None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                 _weight: Tensor | None = None, include_last_offset: bool = False, padding_idx: int | None = None,
                 device=None, dtype=None) -> None:  # fmt: skip
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                         _weight, False, device, dtype)  # fmt: skip
        self.mode = mode
        self.include_last_offset = include_last_offset

    def forward(self, input: Tensor, offsets: Tensor | None = None,
                per_sample_weights: Tensor | None = None) -> Tensor:  # noqa: A002  # fmt: skip
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                               self.mode, self.sparse, per_sample_weights, self.include_last_offset,
                               self.padding_idx)  # fmt: skip

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, max_norm: float | None = None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                        sparse: bool = False, include_last_offset: bool = False,
                        padding_idx: int | None = None) -> EmbeddingBag:  # fmt: skip
        """Same as torch.nn.EmbeddingBag.from_pretrained: the table is ``embeddings`` itself."""
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings, include_last_offset,
                  padding_idx)  # fmt: skip
        bag.weight.requires_grad = not freeze
        return bag
