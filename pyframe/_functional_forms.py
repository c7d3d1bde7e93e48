"""torch's top-level forms of ``nn.functional`` ops (``torch.batch_norm``, ``torch.dropout``, ``torch.embedding``,
``torch.kl_div``...), with torch's own argument orders, which are not always nn.functional's: ``torch.batch_norm``
takes the affine weights before the running statistics, ``torch.embedding`` the weight before the indices, and the
losses an integer reduction (0 none, 1 mean, 2 sum, as ``torch.nn._reduction``). Each calls the functional op,
which computes in the C core."""

from __future__ import annotations

from pyframe.nn import functional as F
from pyframe.tensor import Tensor

__all__ = [
    "batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm", "embedding", "dropout", "dropout_",
    "feature_dropout", "feature_dropout_", "alpha_dropout_", "feature_alpha_dropout_", "selu", "selu_", "celu",
    "celu_", "threshold", "threshold_", "rrelu", "rrelu_", "kl_div", "binary_cross_entropy_with_logits",
    "cosine_embedding_loss", "margin_ranking_loss", "hinge_embedding_loss", "poisson_nll_loss",
    "triplet_margin_loss", "ctc_loss", "adaptive_max_pool1d", "max_pool1d_with_indices",
]  # fmt: skip

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(reduction) -> str:
    """torch's integer reduction codes (the top-level losses take them), or the names nn.functional takes."""
    if isinstance(reduction, str) and reduction in _REDUCTIONS:
        return reduction
    if isinstance(reduction, int) and not isinstance(reduction, bool) and 0 <= reduction < 3:
        return _REDUCTIONS[reduction]
    raise ValueError(f"reduction must be 0 (none), 1 (mean) or 2 (sum), or one of those names; got {reduction!r}")


# ---- normalization: torch's orders put the affine weights before the running statistics -----------------------


def batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool, momentum: float,
               eps: float, cudnn_enabled: bool = True) -> Tensor:  # fmt: skip
    """Same as torch.batch_norm: ``F.batch_norm(input, running_mean, running_var, weight, bias, training,
    momentum, eps)``."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight, bias, running_mean, running_var, use_input_stats: bool, momentum: float,
                  eps: float, cudnn_enabled: bool = True) -> Tensor:  # fmt: skip
    """Same as torch.instance_norm: ``F.instance_norm`` with torch's top-level argument order."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:  # fmt: skip
    """Same as torch.layer_norm: ``F.layer_norm``."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:  # fmt: skip
    """Same as torch.group_norm: ``F.group_norm``."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def rms_norm(input: Tensor, normalized_shape, weight=None, eps: float | None = None) -> Tensor:
    """Same as torch.rms_norm: ``F.rms_norm``."""
    return F.rms_norm(input, normalized_shape, weight, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.embedding: ``F.embedding(indices, weight, ...)``, the weight first and ``padding_idx=-1``
    for none (ATen's convention); that row gets no gradient."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)  # fmt: skip


# ---- dropout and activations: (input, p, train) and the in-place forms ----------------------------------------


def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Same as torch.dropout: ``F.dropout(input, p, train)``."""
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """Same as torch.dropout_: ``dropout`` written into ``input``."""
    return F.dropout(input, p, train, inplace=True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Same as torch.feature_dropout: each (sample, channel) slice of dims 2 and on zeroed whole with probability
    ``p``, the rest scaled by ``1 / (1 - p)``."""
    if not train or p == 0:
        return input
    if input.ndim < 2:
        raise RuntimeError(f"feature_dropout needs at least 2 dims (batch, channel, ...), got {input.ndim}")
    keep = F.dropout(input.new_ones((*input.shape[:2], *(1,) * (input.ndim - 2))), p, True)
    return input * keep


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """Same as torch.feature_dropout_: ``feature_dropout`` written into ``input``."""
    return input.copy_(feature_dropout(input, p, train)) if train and p > 0 else input


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """Same as torch.alpha_dropout_: ``F.alpha_dropout`` written into ``input``."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """Same as torch.feature_alpha_dropout_: ``F.feature_alpha_dropout`` written into ``input``."""
    return F.feature_alpha_dropout(input, p, train, inplace=True)


def selu(input: Tensor) -> Tensor:
    """Same as torch.selu: ``F.selu``."""
    return F.selu(input)


def selu_(input: Tensor) -> Tensor:
    """Same as torch.selu_: ``F.selu`` written into ``input``."""
    return F.selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """Same as torch.celu: ``F.celu``."""
    return F.celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """Same as torch.celu_: ``F.celu`` written into ``input``."""
    return F.celu(input, alpha, inplace=True)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """Same as torch.threshold: ``F.threshold``."""
    return F.threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """Same as torch.threshold_: ``F.threshold`` written into ``input``."""
    return F.threshold(input, threshold, value, inplace=True)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          generator=None) -> Tensor:  # fmt: skip
    """Same as torch.rrelu: ``F.rrelu`` (drawing from the global generator)."""
    _no_generator("rrelu", generator)
    return F.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
           generator=None) -> Tensor:  # fmt: skip
    """Same as torch.rrelu_: ``F.rrelu`` written into ``input``."""
    _no_generator("rrelu_", generator)
    return F.rrelu(input, lower, upper, training, inplace=True)


def _no_generator(name: str, generator) -> None:
    if generator is not None:
        raise TypeError(f"{name}(): generator= is not supported; the slopes are drawn from the global generator "
                        "(seed it with pyframe.manual_seed)")  # fmt: skip


# ---- losses: integer reductions --------------------------------------------------------------------------------


def kl_div(input: Tensor, target: Tensor, reduction=1, *, log_target: bool = False) -> Tensor:
    """Same as torch.kl_div: ``F.kl_div`` with an integer reduction; its mean is over every element (torch's
    top-level form has no ``batchmean``)."""
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight=None, pos_weight=None,
                                     reduction=1) -> Tensor:  # fmt: skip
    """Same as torch.binary_cross_entropy_with_logits: ``pos_weight`` before the (integer) reduction."""
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)  # fmt: skip


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction=1) -> Tensor:  # fmt: skip
    """Same as torch.cosine_embedding_loss: ``F.cosine_embedding_loss`` with an integer reduction."""
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction=1) -> Tensor:  # fmt: skip
    """Same as torch.margin_ranking_loss: ``F.margin_ranking_loss`` with an integer reduction."""
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction=1) -> Tensor:
    """Same as torch.hinge_embedding_loss: ``F.hinge_embedding_loss`` with an integer reduction."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction) -> Tensor:  # fmt: skip
    """Same as torch.poisson_nll_loss: every argument given, the reduction an integer."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, reduction=1) -> Tensor:  # fmt: skip
    """Same as torch.triplet_margin_loss: ``F.triplet_margin_loss`` with an integer reduction."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0, reduction=1,
             zero_infinity: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.ctc_loss: ``F.ctc_loss`` with an integer reduction."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction), zero_infinity)


# ---- pooling that returns the indices too ----------------------------------------------------------------------


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple[Tensor, Tensor]:
    """Same as torch.adaptive_max_pool1d: (values, indices)."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:  # fmt: skip
    """Same as torch.max_pool1d_with_indices: (values, indices)."""
    return F.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)
