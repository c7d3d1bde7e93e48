"""Loss modules. Same as torch.nn's; class weights are (optional) buffers, as in torch, so they
follow ``to()`` and appear in ``state_dict``."""

from __future__ import annotations

import warnings
from collections import namedtuple
from collections.abc import Sequence
from itertools import pairwise

from pyframe.nn import functional as F
from pyframe.nn.functional.loss import _legacy_reduction
from pyframe.nn.modules._utils import _Layer
from pyframe.nn.modules.container import ModuleList, Sequential
from pyframe.nn.modules.linear import Linear
from pyframe.nn.modules.module import Module
from pyframe.ops import join
from pyframe.tensor import Tensor

__all__ = [
    "BCELoss", "BCEWithLogitsLoss", "CrossEntropyLoss", "HuberLoss", "KLDivLoss", "L1Loss", "MSELoss", "NLLLoss",
    "SmoothL1Loss", "CosineEmbeddingLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "MarginRankingLoss",
    "MultiLabelSoftMarginLoss", "MultiMarginLoss", "PoissonNLLLoss", "SoftMarginLoss", "TripletMarginLoss",
    "MultiLabelMarginLoss", "CTCLoss", "NLLLoss2d", "AdaptiveLogSoftmaxWithLoss", "TripletMarginWithDistanceLoss",
]  # fmt: skip


class _Loss(_Layer):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = _legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Same as torch.nn.MSELoss."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        return F.mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Same as torch.nn.CrossEntropyLoss: class indices or class probabilities as targets."""

    def __init__(self, weight: Tensor | None = None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0) -> None:  # fmt: skip
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction, label_smoothing=self.label_smoothing)  # fmt: skip


class NLLLoss(_WeightedLoss):
    """Same as torch.nn.NLLLoss: input holds log-probabilities."""

    def __init__(self, weight: Tensor | None = None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:  # fmt: skip
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class NLLLoss2d(NLLLoss):
    """Same as torch.nn.NLLLoss2d: NLLLoss under its old name (NLLLoss takes the 4-d input itself); deprecated,
    it warns as torch does."""

    def __init__(self, weight: Tensor | None = None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean") -> None:  # fmt: skip
        warnings.warn("`NLLLoss2d` has been deprecated. Please use `NLLLoss` instead as a drop-in replacement and "
                      "see https://pytorch.org/docs/main/nn.html#torch.nn.NLLLoss for more details.", FutureWarning,
                      stacklevel=2)  # fmt: skip
        super().__init__(weight, size_average, ignore_index, reduce, reduction)


class BCEWithLogitsLoss(_Loss):
    """Same as torch.nn.BCEWithLogitsLoss; ``weight`` and ``pos_weight`` are buffers."""

    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight: Tensor | None = None) -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                  pos_weight=self.pos_weight)  # fmt: skip


class L1Loss(_Loss):
    """Same as torch.nn.L1Loss."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Same as torch.nn.SmoothL1Loss."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Same as torch.nn.HuberLoss."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class BCELoss(_WeightedLoss):
    """Same as torch.nn.BCELoss: input holds probabilities."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class KLDivLoss(_Loss):
    """Same as torch.nn.KLDivLoss: input holds log-probabilities; "batchmean" is the reduction
    that matches the mathematical definition."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean", log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class SoftMarginLoss(_Loss):
    """Same as torch.nn.SoftMarginLoss."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class _MarginLoss(_Loss):
    def __init__(self, margin: float, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class _PairMarginLoss(_Loss):
    """MarginRankingLoss and CosineEmbeddingLoss: two inputs, a target of 1s and -1s and a
    ``margin`` (0 by default), given to the class's functional form (``fn=``)."""

    def __init__(self, margin: float = 0.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return self._fn(input1, input2, target, margin=self.margin, reduction=self.reduction)


class MarginRankingLoss(_PairMarginLoss, fn=F.margin_ranking_loss):
    """Same as torch.nn.MarginRankingLoss."""


class CosineEmbeddingLoss(_PairMarginLoss, fn=F.cosine_embedding_loss):
    """Same as torch.nn.CosineEmbeddingLoss."""


class HingeEmbeddingLoss(_MarginLoss):
    """Same as torch.nn.HingeEmbeddingLoss."""

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.hinge_embedding_loss(input, target, margin=self.margin, reduction=self.reduction)


class TripletMarginLoss(_MarginLoss):
    """Same as torch.nn.TripletMarginLoss."""

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6, swap: bool = False,
                 size_average=None, reduce=None, reduction: str = "mean") -> None:  # fmt: skip
        super().__init__(margin, size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got {margin} instead")
        self.p = p
        self.eps = eps
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p, eps=self.eps,
                                     swap=self.swap, reduction=self.reduction)  # fmt: skip


class TripletMarginWithDistanceLoss(_Loss):
    """Same as torch.nn.TripletMarginWithDistanceLoss: ``F.triplet_margin_with_distance_loss`` with a distance
    function (default ``pairwise_distance``), a margin and the swap option."""

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:  # fmt: skip
        super().__init__(size_average=None, reduce=None, reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} "
                             "instead")  # fmt: skip
        self.distance_function = distance_function
        self.margin = margin
        self.swap = swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(anchor, positive, negative,
                                                   distance_function=self.distance_function, margin=self.margin,
                                                   swap=self.swap, reduction=self.reduction)  # fmt: skip


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Same as torch.nn.MultiLabelSoftMarginLoss."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Same as torch.nn.MultiLabelMarginLoss (``F.multilabel_margin_loss``)."""

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Same as torch.nn.MultiMarginLoss."""

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:  # fmt: skip
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        self.p = p
        self.margin = margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin, weight=self.weight,
                                   reduction=self.reduction)  # fmt: skip


class PoissonNLLLoss(_Loss):
    """Same as torch.nn.PoissonNLLLoss."""

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None, eps: float = 1e-8,
                 reduce=None, reduction: str = "mean") -> None:  # fmt: skip
        super().__init__(size_average, reduce, reduction)
        self.log_input = log_input
        self.full = full
        self.eps = eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full, eps=self.eps,
                                  reduction=self.reduction)  # fmt: skip


class GaussianNLLLoss(_Loss):
    """Same as torch.nn.GaussianNLLLoss."""

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean") -> None:
        super().__init__(None, None, reduction)
        self.full = full
        self.eps = eps

    def forward(self, input: Tensor, target: Tensor, var) -> Tensor:  # noqa: A002
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps, reduction=self.reduction)


class CTCLoss(_Loss):
    """Same as torch.nn.CTCLoss: ``forward(log_probs, targets, input_lengths, target_lengths)``."""

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths, target_lengths) -> Tensor:
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)  # fmt: skip


_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Same as torch.nn.AdaptiveLogSoftmaxWithLoss (Grave et al., efficient softmax for large vocabularies): the
    classes below ``cutoffs[0]`` and one entry per further cluster share the ``head`` Linear; each cluster's
    classes get a two-layer projection in ``tail`` whose hidden size shrinks by ``div_value`` per cluster.
    ``forward(input, target)`` returns ``(output, loss)``: each target's log-probability and their negated
    mean; ``log_prob`` gives the full distribution, ``predict`` its argmax."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None) -> None:  # fmt: skip
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):  # fmt: skip
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")  # fmt: skip
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device, dtype=dtype)
        self.tail = ModuleList()
        for i, (lo, hi) in enumerate(pairwise(self.cutoffs)):
            hidden = int(in_features // (div_value ** (i + 1)))
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, device=device, dtype=dtype),
                                        Linear(hidden, hi - lo, bias=False, device=device, dtype=dtype)))  # fmt: skip

    def reset_parameters(self) -> None:
        """Same as torch's: the head and every tail projection drawn again."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{input_.shape}")  # fmt: skip
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{input_.shape}")  # fmt: skip
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)  # noqa: A001 - torch's name
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel() and (bool((target < 0).any()) or bool((target >= self.n_classes).any())):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{target.min().item()}, {target.max().item()}] were found. ")  # fmt: skip
        # each row reads one head column: its own class in the shortlist, else its cluster's entry, to which the
        # log-probability of the class within its cluster is added
        head_column = target
        output = input.new_zeros(target.shape[0])
        for i, (lo, hi) in enumerate(pairwise(self.cutoffs)):
            mask = (target >= lo) & (target < hi)
            rows = mask.nonzero().flatten()
            if rows.numel() == 0:
                continue
            head_column = head_column.index_fill(0, rows, self.shortlist_size + i)
            cluster_logprob = F.log_softmax(self.tail[i](input.index_select(0, rows)), dim=1)
            local = cluster_logprob.gather(1, (target[mask] - lo).unsqueeze(1)).squeeze(1)
            output = output.index_add(0, rows, local)
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, head_column.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:  # noqa: A002
        head_logprob = F.log_softmax(head_output, dim=1)
        parts = [head_logprob[:, : self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return join.cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        """Same as torch's: log-probabilities ``(N, n_classes)`` of every class."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:  # noqa: A002 - torch's name
        """Same as torch's: the most probable class of each row, ``log_prob(input).argmax(dim=1)``; the tails are
        evaluated only when a row's best head entry is a cluster."""
        head_output = self.head(input)
        best = head_output.argmax(dim=1)
        outside = best >= self.shortlist_size
        if not bool(outside.any()):
            return best
        full = self._full_log_prob(input[outside], head_output[outside]).argmax(dim=1)
        best = best.clone()
        best[outside] = full
        return best
