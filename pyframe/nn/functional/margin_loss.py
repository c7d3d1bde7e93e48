"""Margin and ranking losses: soft_margin, margin_ranking, hinge_embedding, cosine_embedding,
triplet_margin, multi_margin, multilabel_soft_margin."""

from __future__ import annotations

from pyframe._backend import ShapeError
from pyframe.nn.functional._utils import _check_reduction, _float_arg, _reduce_loss, _tensor_arg
from pyframe.nn.functional.activation import logsigmoid, softplus
from pyframe.nn.functional.distance import pairwise_distance
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.ops import reduce as rd
from pyframe.tensor import Tensor


def _same_shape(fn: str, a: Tensor, b: Tensor, names: str = "input and target") -> None:
    if a._shape != b._shape:
        raise ShapeError(f"{fn}(): {names} must have the same shape, got {list(a._shape)} and {list(b._shape)}")


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"):
    """Same as torch.nn.functional.soft_margin_loss: log(1 + exp(-y x)), computed stably."""
    _float_arg(input, "soft_margin_loss")
    _check_reduction(reduction, "soft_margin_loss")
    _same_shape("soft_margin_loss", input, target)
    return _reduce_loss(softplus(ew.neg(ew.mul(target, input))), reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.margin_ranking_loss: max(0, -y (x1 - x2) + margin)."""
    _float_arg(input1, "margin_ranking_loss", "input1")
    _float_arg(input2, "margin_ranking_loss", "input2")
    _tensor_arg(target, "margin_ranking_loss", "target")
    _check_reduction(reduction, "margin_ranking_loss")
    if not (input1.ndim == input2.ndim == target.ndim):
        raise ShapeError(f"margin_ranking_loss(): All input tensors should have same dimension but got sizes: "
                         f"input1: {list(input1._shape)}, input2: {list(input2._shape)}, target: "
                         f"{list(target._shape)}")  # fmt: skip
    loss = ew.relu(ew.add(ew.mul(ew.neg(target), ew.sub(input1, input2)), margin))
    return _reduce_loss(loss, reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.hinge_embedding_loss: x where y = 1, max(0, margin - x) where y = -1."""
    _float_arg(input, "hinge_embedding_loss")
    _check_reduction(reduction, "hinge_embedding_loss")
    margin_part = ew.where(ew.ne(target, 1), ew.relu(ew.sub(margin, input)), 0.0)
    self_part = ew.where(ew.ne(target, -1), input, 0.0)
    return _reduce_loss(ew.add(margin_part, self_part), reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average=None,
                          reduce=None, reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.cosine_embedding_loss: 1 - cos where y = 1, max(0, cos - margin)
    where y = -1, with torch's cosine (eps 1e-12 added to each squared norm)."""
    fn = "cosine_embedding_loss"
    _float_arg(input1, fn, "input1")
    _float_arg(input2, fn, "input2")
    _check_reduction(reduction, fn)
    _same_shape(fn, input1, input2, "input1 and input2")
    if input1.ndim not in (1, 2):
        raise ShapeError(f"{fn}(): expected 1-d or 2-d inputs, got shape {list(input1._shape)}")
    if target.ndim != input1.ndim - 1 or (target.ndim == 1 and target._shape[0] != input1._shape[0]):
        raise ShapeError(f"{fn}(): target of shape {list(target._shape)} does not match inputs of shape "
                         f"{list(input1._shape)}")  # fmt: skip
    d = input1.ndim - 1
    prod = rd.sum(ew.mul(input1, input2), d)
    m1 = ew.add(rd.sum(ew.mul(input1, input1), d), 1e-12)
    m2 = ew.add(rd.sum(ew.mul(input2, input2), d), 1e-12)
    cos = ew.div(prod, ew.sqrt(ew.mul(m1, m2)))
    pos = ew.where(ew.eq(target, 1), ew.sub(1.0, cos), 0.0)
    neg = ew.where(ew.eq(target, -1), ew.relu(ew.sub(cos, margin)), 0.0)
    return _reduce_loss(ew.add(pos, neg), reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.triplet_margin_loss: max(0, d(a, p) - d(a, n) + margin)."""
    fn = "triplet_margin_loss"
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        _float_arg(t, fn, name)
    _check_reduction(reduction, fn)
    if not (anchor.ndim == positive.ndim == negative.ndim) or anchor.ndim not in (1, 2):
        raise ShapeError(f"{fn}(): The anchor, positive, and negative tensors are expected to have the same number "
                         f"of dimensions (1 or 2), but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and "
                         f"negative {negative.ndim}D inputs")  # fmt: skip
    if margin <= 0:
        raise ValueError(f"{fn}(): margin must be greater than 0, got {margin}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = ew.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce_loss(ew.relu(ew.add(ew.sub(d_pos, d_neg), margin)), reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                                reduce=None, reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.multilabel_soft_margin_loss: the binary logistic loss of
    each class, averaged over classes (the last dim)."""
    fn = "multilabel_soft_margin_loss"
    _float_arg(input, fn)
    _check_reduction(reduction, fn)
    _same_shape(fn, input, target)
    loss = ew.neg(ew.add(ew.mul(target, logsigmoid(input)), ew.mul(ew.sub(1.0, target), logsigmoid(ew.neg(input)))))
    if weight is not None:
        loss = ew.mul(loss, weight)
    loss = rd.mean(loss, -1) if input.ndim else loss
    return _reduce_loss(loss, reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average=None, reduce=None, reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.multi_margin_loss: sum over classes i != y of
    max(0, margin - x[y] + x[i])^p (times weight[y]), divided by the number of classes."""
    fn = "multi_margin_loss"
    _float_arg(input, fn)
    _check_reduction(reduction, fn)
    if p not in (1, 2):
        raise ValueError(f"{fn}(): only p == 1 and p == 2 supported, got {p!r}")
    if input.ndim not in (1, 2):
        raise ShapeError(f"{fn}(): expected a 1-d or 2-d input, got shape {list(input._shape)}")
    x = input if input.ndim == 2 else input.unsqueeze(0)
    t = target.reshape(-1) if isinstance(target, Tensor) else target
    _tensor_arg(t, fn, "target")
    if t.dtype.is_floating_point or t._shape != (x._shape[0],):
        raise ShapeError(f"{fn}(): target must be an integer tensor of shape [{x._shape[0]}], got "
                         f"{t.dtype.name} {list(target._shape)}")  # fmt: skip
    c = x._shape[1]
    if t._numel and (int(rd.min(t).item()) < 0 or int(rd.max(t).item()) >= c):
        raise IndexError(f"{fn}(): target values must be in [0, {c - 1}]")
    idx = t.unsqueeze(1)
    xy = ix.gather(x, 1, idx)  # [N, 1]
    z = ew.relu(ew.add(ew.sub(x, xy), margin))
    if p == 2:
        z = ew.mul(z, z)
    if weight is not None:
        z = ew.mul(z, ix.index_select(weight, 0, t).unsqueeze(1))
    from pyframe.ops._common import zeros_of

    own = zeros_of(x._shape, x.dtype)
    ix.scatter_add_(own, 1, idx, ew.add(zeros_of((x._shape[0], 1), x.dtype), 1.0))
    z = ew.where(ew.gt(own, 0.0), 0.0, z)  # the target class itself does not count
    loss = ew.div(rd.sum(z, 1), c)
    if input.ndim == 1:
        loss = loss.squeeze(0)
    return _reduce_loss(loss, reduction)
