"""Losses."""

from __future__ import annotations

import math
import warnings

from pyframe import _dtype, _grad_mode
from pyframe._backend import NULL, ShapeError, check, ffi, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import _REDUCTIONS, _check_reduction, _float_arg, _reduce_loss, _regrad, _tensor_arg
from pyframe.nn.functional.activation import _softplus_neg_abs, logsigmoid, softplus
from pyframe.nn.functional.distance import pairwise_distance
from pyframe.nn.functional.sparse import _index_arg
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.ops import reduce as rd
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "cross_entropy",
    "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss", "margin_ranking_loss", "mse_loss",
    "multi_margin_loss", "multilabel_soft_margin_loss", "nll_loss", "poisson_nll_loss", "smooth_l1_loss",
    "soft_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss", "multilabel_margin_loss",
    "ctc_loss",
]  # fmt: skip

_NATIVE = (_dtype.float32.code, _dtype.float64.code)  # dtypes the fused C kernels take


def _legacy_reduction(size_average, reduce, stacklevel: int = 3) -> str:
    """torch's deprecated ``size_average``/``reduce`` pair (None counts as True) as a ``reduction``, with its
    warning (torch's ``_Reduction.legacy_get_string``)."""
    mean, summed = size_average is not False, reduce is not False
    reduction = "mean" if mean and summed else "sum" if summed else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  UserWarning, stacklevel=stacklevel)  # fmt: skip
    return reduction


def _reduction(fn: str, size_average, reduce, reduction: str, allowed: tuple = _REDUCTIONS) -> str:
    """The reduction a loss applies: ``reduction``, unless torch's deprecated ``size_average``/``reduce`` are given
    (then what they stand for, as torch maps them); checked against ``allowed``."""
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce, stacklevel=4)
    _check_reduction(reduction, fn, allowed)
    return reduction


_CTYPE = {_dtype.float32.code: "float *", _dtype.float64.code: "double *"}
_new, _cast = ffi.new, ffi.cast
_EPS32 = 9.999999960041972e-13  # torch's EPSILON of the losses below: 1e-12 as a float32


def _check_same_size(fn: str, input: Tensor, target: Tensor, strict: bool) -> None:
    if target._shape != input._shape:
        msg = (
            f"{fn}(): using a target size ({list(target._shape)}) that is different to the input size "
            f"({list(input._shape)})"
        )
        if strict:
            raise ValueError(msg + "; please ensure they have the same size")
        warnings.warn(msg + ". This will likely lead to incorrect results due to broadcasting.", stacklevel=3)


def _weighted_sum_or_mean(loss: Tensor, weight, reduction: str, fn: str, mean_by_weight: bool) -> Tensor:
    """torch's per-element ``weight`` of mse/l1/huber: same size as the input; "mean" divides by the weights' sum
    (mse, l1) or by the element count (huber)."""
    _tensor_arg(weight, fn, "weight")
    if weight._shape != loss._shape:
        raise ValueError(f"{fn}(): Weights and input must have the same size, got weight {list(weight._shape)} and "
                         f"input {list(loss._shape)}")  # fmt: skip
    loss = ew.mul(loss, weight)
    if reduction == "mean" and mean_by_weight:
        return ew.div(rd.sum(loss), rd.sum(weight))
    return _reduce_loss(loss, reduction)


def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
             weight: Tensor | None = None) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.mse_loss; ``weight`` weighs each element (its "mean" divides by the weights'
    sum)."""
    reduction = _reduction("mse_loss", size_average, reduce, reduction)
    _check_same_size("mse_loss", _tensor_arg(input, "mse_loss"), _tensor_arg(target, "mse_loss", "target"), False)
    loss = ew.square(ew.sub(input, target))
    if weight is not None:
        return _weighted_sum_or_mean(loss, weight, reduction, "mse_loss", True)
    return _reduce_loss(loss, reduction)


def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
            weight: Tensor | None = None) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.l1_loss; ``weight`` weighs each element (its "mean" divides by the weights'
    sum)."""
    reduction = _reduction("l1_loss", size_average, reduce, reduction)
    _check_same_size("l1_loss", _tensor_arg(input, "l1_loss"), _tensor_arg(target, "l1_loss", "target"), False)
    loss = ew.abs(ew.sub(input, target))
    if weight is not None:
        return _weighted_sum_or_mean(loss, weight, reduction, "l1_loss", True)
    return _reduce_loss(loss, reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.smooth_l1_loss."""
    reduction = _reduction("smooth_l1_loss", size_average, reduce, reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss(): beta must be non-negative, got {beta}")
    _check_same_size("smooth_l1_loss", input, target, False)
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    loss = ew.with_derivative(
        "SmoothL1LossBackward0",
        lambda x, t: _smooth_l1(x, t, beta),
        lambda g, x, t: _piecewise_l1_grad(g, x, t, beta, 1.0 / beta),
        input,
        target,
    )
    return _reduce_loss(loss, reduction)


def _smooth_l1(x, t, beta):
    d = ew.abs(ew.sub(x, t))
    return ew.where(ew.lt(d, beta), ew.div(ew.mul(ew.square(d), 0.5), beta), ew.sub(d, 0.5 * beta))


def _piecewise_l1_grad(g, x, t, edge, slope):
    """smooth_l1/huber as torch: with d = x - t, -edge slope below -edge, edge slope above edge, else d slope (the
    quadratic side at +-edge and at NaN)."""
    d = ew.sub(x, t)
    gd = ew.where(ew.lt(d, -edge), -edge * slope, ew.where(ew.gt(d, edge), edge * slope, ew.mul(d, slope)))
    gd = ew.mul(g, gd)
    return gd, ew.neg(gd)


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.huber_loss; ``weight`` weighs each element (its "mean" is over the elements)."""
    _check_reduction(reduction, "huber_loss")
    if delta <= 0:
        raise ValueError(f"huber_loss(): delta must be positive, got {delta}")
    _check_same_size("huber_loss", input, target, False)
    loss = ew.with_derivative(
        "HuberLossBackward0",
        lambda x, t: _huber(x, t, delta),
        lambda g, x, t: _piecewise_l1_grad(g, x, t, delta, 1.0),
        input,
        target,
    )
    if weight is not None:
        return _weighted_sum_or_mean(loss, weight, reduction, "huber_loss", False)
    return _reduce_loss(loss, reduction)


def _huber(x, t, delta):
    d = ew.abs(ew.sub(x, t))
    return ew.where(ew.lt(d, delta), ew.mul(ew.square(d), 0.5), ew.mul(ew.sub(d, 0.5 * delta), delta))


def _classes_last(fn: str, input: Tensor, target: Tensor) -> tuple[Tensor, Tensor, tuple]:
    """input (C), (N, C) or (N, C, d1, ...) as [M, C] and an int64 target as [M], with the
    target's shape (the shape of an unreduced loss)."""
    if input.ndim == 0:
        raise ShapeError(f"{fn}(): input must have a class dim, got a 0-d tensor")
    expected = () if input.ndim == 1 else (input._shape[0],) + input._shape[2:]
    if target._shape != expected:
        raise ShapeError(
            f"{fn}(): expected target of shape {list(expected)} for input of shape {list(input._shape)} "
            f"(classes in dim {0 if input.ndim == 1 else 1}), got target of shape {list(target._shape)}"
        )
    c = input._shape[0 if input.ndim == 1 else 1]
    if input.ndim == 1:
        return input.view(1, c), target.reshape(1), expected
    if input.ndim == 2:
        return input, target, expected
    return input.permute(0, *range(2, input.ndim), 1).reshape(-1, c), target.reshape(-1), expected


def nll_loss(
    input: Tensor, target: Tensor, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
    reduction: str = "mean",
) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.nll_loss, for input (C), (N, C) or (N, C, d1, ...).
    ``size_average`` and ``reduce`` (deprecated in torch) map to ``reduction`` as torch maps them."""
    reduction = _reduction("nll_loss", size_average, reduce, reduction)
    _float_arg(input, "nll_loss")
    target = _index_arg(target, "nll_loss")
    inp, t, shape = _classes_last("nll_loss", input, target)
    c = inp._shape[1]
    if weight is not None and (_tensor_arg(weight, "nll_loss", "weight")._shape != (c,)):
        raise ShapeError(f"nll_loss(): weight should have shape [{c}] ({c} classes), got {list(weight._shape)}")
    valid = ew.ne(t, ignore_index)
    tt = ew.where(valid, t, 0)
    if tt._numel:
        lo, hi = int(rd.amin(tt)), int(rd.amax(tt))
        if lo < 0 or hi >= c:
            raise IndexError(f"nll_loss(): target {lo if lo < 0 else hi} is out of bounds for {c} classes")
    picked = ix.gather(inp, 1, tt.view(-1, 1)).view(-1)
    wt = valid.to(inp.dtype)
    if weight is not None:
        wt = ew.mul(ix.index_select(weight, 0, tt), wt)
    loss = ew.neg(ew.mul(picked, wt))
    if reduction == "none":
        return loss.reshape(shape)
    if reduction == "sum":
        return rd.sum(loss)
    return ew.div(rd.sum(loss), rd.sum(wt))


def cross_entropy(
    input: Tensor, target: Tensor, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
    reduction: str = "mean", label_smoothing: float = 0.0,
) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.cross_entropy: log_softmax over the class dim, then the
    negative log likelihood; class-index targets (N,) / (N, d1, ...) or class probabilities
    shaped like the input; ``label_smoothing`` as torch."""
    reduction = _reduction("cross_entropy", size_average, reduce, reduction)
    _float_arg(input, "cross_entropy")
    _tensor_arg(target, "cross_entropy", "target")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy(): label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    cdim = 0 if input.ndim == 1 else 1
    c = input._shape[cdim] if input.ndim else 0
    if weight is not None and _tensor_arg(weight, "cross_entropy", "weight")._shape != (c,):
        raise ShapeError(f"cross_entropy(): weight should have shape [{c}] ({c} classes), got {list(weight._shape)}")
    if (
        label_smoothing == 0 and input.ndim == 2 and input.dtype.code in _NATIVE and target.dtype is _dtype.int64
        and target._shape == (input._shape[0],) and c > 0
        and (weight is None or (weight.dtype is input.dtype and not weight.requires_grad))
    ):  # fmt: skip
        return _fused_cross_entropy(input, target, weight, ignore_index, reduction)
    lsm = rd.log_softmax(input, cdim)
    wshape = tuple(c if i == cdim else 1 for i in range(input.ndim))
    if target.dtype.is_floating_point:  # class probabilities
        if target._shape != input._shape:
            raise ShapeError(
                f"cross_entropy(): probability targets must have the input's shape {list(input._shape)}, "
                f"got {list(target._shape)}"
            )
        if label_smoothing > 0:
            target = ew.add(ew.mul(target, 1.0 - label_smoothing), label_smoothing / c)
        prod = ew.mul(lsm, target)
        if weight is not None:
            prod = ew.mul(prod, weight.view(wshape))
        loss = ew.neg(rd.sum(prod, cdim))
        return _reduce_loss(loss, reduction)
    nll = nll_loss(lsm, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return nll
    target = _index_arg(target, "cross_entropy")
    smooth = ew.neg(rd.sum(ew.mul(lsm, weight.view(wshape)) if weight is not None else lsm, cdim))
    ignored = ew.eq(target, ignore_index)
    smooth = ew.where(ignored, 0.0, smooth)
    if reduction == "sum":
        smooth = rd.sum(smooth)
    elif reduction == "mean":
        if weight is not None:
            kept = ix.index_select(weight, 0, ew.where(ignored, 0, target).reshape(-1))
            denom = rd.sum(ew.where(ignored.reshape(-1), 0.0, kept))
        else:
            denom = rd.sum(ew.logical_not(ignored)).to(input.dtype)
        smooth = ew.div(rd.sum(smooth), denom)
    return ew.add(ew.mul(nll, 1.0 - label_smoothing), ew.mul(smooth, label_smoothing / c))


def _fused_cross_entropy(input: Tensor, target: Tensor, weight, ignore_index: int, reduction: str) -> Tensor:
    """(N, C) logits and int64 class indices in one C call each way (pf_cross_entropy): the
    row log-sum-exp is kept, backward writes w_t * scale * (softmax - onehot) directly. Double
    backward differentiates the composition."""
    x = input.contiguous()
    t = target.contiguous()
    w = weight.contiguous() if weight is not None else None
    n, c = x._shape
    dt = x.dtype
    rows, lse = empty_tensor((n,), dt), empty_tensor((n,), dt)
    sums = _new("double[2]")
    wp = w._ptr if w is not None else NULL
    check(lib.pf_cross_entropy(dt.code, x._ptr, _cast("int64_t *", t._ptr), wp, n, c, int(ignore_index), rows._ptr,
                               lse._ptr, sums))  # fmt: skip
    total = sums[1]
    if reduction == "none":
        out = rows
    else:
        value = sums[0] if reduction == "sum" else (sums[0] / total if total else math.nan)
        out = empty_tensor((), dt)
        _cast(_CTYPE[dt.code], out._ptr)[0] = value
    if needs_grad(input):

        def backward(g):
            if _grad_mode.enabled:  # create_graph: differentiate the composition instead
                return _regrad(lambda a: nll_loss(rd.log_softmax(a, 1), target, weight, ignore_index=ignore_index,
                                                  reduction=reduction), (input,), g)  # fmt: skip
            gx = empty_tensor((n, c), dt)
            if reduction == "none":
                gs, g0 = g.contiguous(), 0.0
                gp = gs._ptr
            else:
                # every row ignored: the gradient is all zeros whatever the scale
                gp, g0 = NULL, float(g.item()) / (total if reduction == "mean" and total else 1.0)
            check(lib.pf_cross_entropy_backward(dt.code, x._ptr, _cast("int64_t *", t._ptr), wp, lse._ptr, gp, g0, n,
                                                c, int(ignore_index), gx._ptr))  # fmt: skip
            return (gx,)

        record("NllLossBackward0", backward, (input,), out, (input,))
    return out


def _weighted(loss: Tensor, weight, reduction: str) -> Tensor:
    if weight is not None:
        loss = ew.mul(loss, weight)
    return _reduce_loss(loss, reduction)


def binary_cross_entropy(
    input: Tensor, target: Tensor, weight=None, size_average=None, reduce=None, reduction: str = "mean"
) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.binary_cross_entropy: logs clamped at -100 and a gradient
    of (x - t) / max(x (1 - x), 1e-12), as torch."""
    reduction = _reduction("binary_cross_entropy", size_average, reduce, reduction)
    _float_arg(input, "binary_cross_entropy")
    _float_arg(target, "binary_cross_entropy", "target")
    _check_same_size("binary_cross_entropy", input, target, True)
    if input._numel:
        lo, hi = float(rd.amin(input)), float(rd.amax(input))
        if not (lo >= 0.0 and hi <= 1.0):
            raise ValueError(
                f"binary_cross_entropy(): all elements of input should be between 0 and 1, got values in [{lo}, {hi}]"
            )
    x, t = input, target

    def logs(x):
        return ew.clamp(ew.log(x), min=-100.0), ew.clamp(ew.log1p(ew.neg(x)), min=-100.0)

    with _grad_mode.no_grad():
        logx, log1mx = logs(x)
        loss = ew.neg(ew.add(ew.mul(t, logx), ew.mul(ew.sub(1.0, t), log1mx)))
    if needs_grad(x, t):

        def backward(g):
            gx = gt = None
            if x.requires_grad:
                gx = ew.div(ew.mul(g, ew.sub(x, t)), ew.clamp(ew.mul(ew.sub(1.0, x), x), min=_EPS32))
            if t.requires_grad:  # torch's: the logs unclamped (inf at 0 and 1)
                gt = ew.mul(g, ew.sub(ew.log1p(ew.neg(x)), ew.log(x)))
            return gx, gt

        record("BinaryCrossEntropyBackward0", backward, (x, t), loss, (x, t))
    return _weighted(loss, weight, reduction)


def binary_cross_entropy_with_logits(
    input: Tensor, target: Tensor, weight=None, size_average=None, reduce=None, reduction: str = "mean",
    pos_weight=None,
) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.binary_cross_entropy_with_logits, computed stably:
    (1 - t) x + (1 + (pw - 1) t) softplus(-x), with softplus(-x) = log1p(exp(-|x|)) + max(-x, 0);
    the gradient sigmoid(x) (1 + (pw - 1) t) - pw t is exact at x = 0 too."""
    fn = "binary_cross_entropy_with_logits"
    reduction = _reduction(fn, size_average, reduce, reduction)
    _float_arg(input, fn)
    _float_arg(target, fn, "target")
    _check_same_size(fn, input, target, True)
    x, t, pw = input, target, pos_weight

    def sp_neg(x):  # softplus(-x)
        return ew.add(_softplus_neg_abs(x), ew.relu(ew.neg(x)))

    if pw is None and x.dtype is t.dtype and x._shape == t._shape and not (_grad_mode.enabled and t.requires_grad):
        return _weighted(_bce_with_logits_fused(x, t), weight, reduction)
    with _grad_mode.no_grad():
        spn = sp_neg(x)
        lin = ew.mul(ew.sub(1.0, t), x)
        loss = ew.add(lin, ew.mul(ew.add(ew.mul(ew.sub(pw, 1.0), t), 1.0), spn) if pw is not None else spn)
    if needs_grad(x, t, pw):

        def backward(g):
            gx = gt = gp = None
            if x.requires_grad:
                s = ew.sigmoid(x)
                if pw is None:
                    gx = ew.mul(g, ew.sub(s, t))
                else:
                    pt = ew.mul(pw, t)
                    gx = ew.mul(g, ew.sub(ew.mul(s, ew.add(ew.sub(pt, t), 1.0)), pt))
            if t.requires_grad:
                if pw is None:
                    gt = ew.neg(ew.mul(g, x))
                else:
                    sn = sp_neg(x)
                    gt = ew.mul(g, ew.sub(ew.mul(pw, sn), ew.add(sn, x)))  # pw softplus(-x) - softplus(x)
            if pw is not None and pw.requires_grad:
                gp = ew._grad_to(ew.mul(ew.mul(g, t), sp_neg(x)), pw)
            return gx, gt, gp

        record("BinaryCrossEntropyWithLogitsBackward0", backward, (x, t, pw), loss, (x, t))
    return _weighted(loss, weight, reduction)


def _bce_with_logits_fused(x: Tensor, t: Tensor) -> Tensor:
    """The elementwise loss in one C pass (PF_BCE_WITH_LOGITS), and its gradient sigmoid(x) - t in one more before
    the incoming gradient's factor; with create_graph, the ops'."""
    loss = empty_tensor(x._shape, x.dtype)
    check(lib.pf_binary(lib.PF_BCE_WITH_LOGITS, x._d(), t._d(), loss._d()))
    if needs_grad(x):

        def backward(g):
            if _grad_mode.enabled:
                return (ew.mul(g, ew.sub(ew.sigmoid(x), t)), None)
            d = empty_tensor(x._shape, x.dtype)
            check(lib.pf_binary(lib.PF_BCE_WITH_LOGITS_BACKWARD, x._d(), t._d(), d._d()))
            return (ew.mul(g, d), None)

        record("BinaryCrossEntropyWithLogitsBackward0", backward, (x, t), loss, (x, t))
    return loss


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.kl_div (input holds log-probabilities); "batchmean" too."""
    reduction = _reduction("kl_div", size_average, reduce, reduction, _REDUCTIONS + ("batchmean",))
    if log_target:
        loss = ew.mul(ew.exp(target), ew.sub(target, input))
    else:  # torch's composition: xlogy(t, t) - t x (0 log 0 = 0; a negative target gives NaN)
        from pyframe.ops.pointwise import xlogy

        loss = ew.sub(xlogy(target, target), ew.mul(target, input))
    if reduction == "batchmean":
        return ew.div(rd.sum(loss), input._shape[0] if input.ndim else 1)
    return _reduce_loss(loss, reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False, size_average=None,
                     eps: float = 1e-8, reduce=None, reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.poisson_nll_loss: exp(x) - y x (``log_input``) or
    x - y log(x + eps), plus Stirling's term for y > 1 when ``full``."""
    _float_arg(input, "poisson_nll_loss")
    reduction = _reduction("poisson_nll_loss", size_average, reduce, reduction)
    if log_input:
        loss = ew.sub(ew.exp(input), ew.mul(target, input))
    else:
        loss = ew.sub(input, ew.mul(target, ew.log(ew.add(input, eps))))
    if full:
        import math

        safe = ew.where(ew.gt(target, 1.0), target, 2.0)  # the unused branch stays finite
        stirling = ew.add(ew.sub(ew.mul(safe, ew.log(safe)), safe), ew.mul(ew.log(ew.mul(safe, 2 * math.pi)), 0.5))
        loss = ew.add(loss, ew.where(ew.gt(target, 1.0), stirling, 0.0))
    return _reduce_loss(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.gaussian_nll_loss: 0.5 (log var + (x - y)^2 / var), var
    clamped at ``eps`` without stopping its gradient (as torch); ``var`` may lack the last dim
    or have size 1 there."""
    import math

    fn = "gaussian_nll_loss"
    _float_arg(input, fn)
    _check_reduction(reduction, fn)
    if not isinstance(var, Tensor):
        from pyframe.ops._common import as_tensor_of

        var = as_tensor_of(float(var), input.dtype)
    if var._shape != input._shape:
        if input._shape[:-1] == var._shape:
            var = var.unsqueeze(-1)
        elif not (input._shape[:-1] == var._shape[:-1] and var._shape[-1:] == (1,)) and var.ndim:
            raise ShapeError(f"{fn}(): var is of incorrect size: {list(var._shape)} for input {list(input._shape)}")
    with _grad_mode.no_grad():
        if bool(rd.any(ew.lt(var, 0)).item()):
            raise ValueError(f"{fn}(): var has negative entry/entries")
        lift = ew.sub(ew.clamp(var, min=eps), var)  # added without history: var's gradient passes unchanged
    v = ew.add(var, lift)
    loss = ew.mul(ew.add(ew.log(v), ew.div(ew.square(ew.sub(input, target)), v)), 0.5)
    if full:
        loss = ew.add(loss, 0.5 * math.log(2 * math.pi))
    return _reduce_loss(loss, reduction)


def _same_shape(fn: str, a: Tensor, b: Tensor, names: str = "input and target") -> None:
    if a._shape != b._shape:
        raise ShapeError(f"{fn}(): {names} must have the same shape, got {list(a._shape)} and {list(b._shape)}")


def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean"):
    """Same as torch.nn.functional.soft_margin_loss: log(1 + exp(-y x)), computed stably."""
    _float_arg(input, "soft_margin_loss")
    reduction = _reduction("soft_margin_loss", size_average, reduce, reduction)
    _same_shape("soft_margin_loss", input, target)
    loss = ew.with_derivative("SoftMarginLossBackward0", lambda x, t: softplus(ew.neg(ew.mul(t, x))),
                              _soft_margin_grad, input, target)  # fmt: skip
    return _reduce_loss(loss, reduction)


def _soft_margin_grad(g, x, t):
    """torch's: z = exp(-t x), -t z / (1 + z) (NaN where z is infinite)."""
    z = ew.exp(ew.neg(ew.mul(t, x)))
    q = ew.mul(g, ew.div(z, ew.add(z, 1.0)))
    return ew.neg(ew.mul(q, t)), ew.neg(ew.mul(q, x))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average=None,
                        reduce=None, reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.margin_ranking_loss: max(0, -y (x1 - x2) + margin)."""
    _float_arg(input1, "margin_ranking_loss", "input1")
    _float_arg(input2, "margin_ranking_loss", "input2")
    _tensor_arg(target, "margin_ranking_loss", "target")
    reduction = _reduction("margin_ranking_loss", size_average, reduce, reduction)
    if not (input1.ndim == input2.ndim == target.ndim):
        raise ShapeError(f"margin_ranking_loss(): All input tensors should have same dimension but got sizes: "
                         f"input1: {list(input1._shape)}, input2: {list(input2._shape)}, target: "
                         f"{list(target._shape)}")  # fmt: skip
    # clamp_min, not relu: at the margin the gradient flows, at NaN it does not (torch's)
    loss = ew.clamp(ew.add(ew.mul(ew.neg(target), ew.sub(input1, input2)), margin), min=0.0)
    return _reduce_loss(loss, reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.hinge_embedding_loss: x where y = 1, max(0, margin - x) where y = -1."""
    _float_arg(input, "hinge_embedding_loss")
    reduction = _reduction("hinge_embedding_loss", size_average, reduce, reduction)
    margin_part = ew.where(ew.ne(target, 1), ew.clamp(ew.sub(margin, input), min=0.0), 0.0)  # as margin_ranking
    self_part = ew.where(ew.ne(target, -1), input, 0.0)
    return _reduce_loss(ew.add(margin_part, self_part), reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0, size_average=None,
                          reduce=None, reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.cosine_embedding_loss: 1 - cos where y = 1, max(0, cos - margin)
    where y = -1, with torch's cosine (eps 1e-12 added to each squared norm)."""
    fn = "cosine_embedding_loss"
    _float_arg(input1, fn, "input1")
    _float_arg(input2, fn, "input2")
    reduction = _reduction(fn, size_average, reduce, reduction)
    _same_shape(fn, input1, input2, "input1 and input2")
    if input1.ndim not in (1, 2):
        raise ShapeError(f"{fn}(): expected 1-d or 2-d inputs, got shape {list(input1._shape)}")
    if target.ndim != input1.ndim - 1 or (target.ndim == 1 and target._shape[0] != input1._shape[0]):
        raise ShapeError(f"{fn}(): target of shape {list(target._shape)} does not match inputs of shape "
                         f"{list(input1._shape)}")  # fmt: skip
    d = input1.ndim - 1
    prod = rd.sum(ew.mul(input1, input2), d)
    m1 = ew.add(rd.sum(ew.mul(input1, input1), d), _EPS32)
    m2 = ew.add(rd.sum(ew.mul(input2, input2), d), _EPS32)
    cos = ew.div(prod, ew.sqrt(ew.mul(m1, m2)))
    pos = ew.where(ew.eq(target, 1), ew.sub(1.0, cos), 0.0)
    neg = ew.where(ew.eq(target, -1), ew.clamp(ew.sub(cos, margin), min=0.0), 0.0)
    return _reduce_loss(ew.add(pos, neg), reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.triplet_margin_loss: max(0, d(a, p) - d(a, n) + margin)."""
    fn = "triplet_margin_loss"
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        _float_arg(t, fn, name)
    reduction = _reduction(fn, size_average, reduce, reduction)
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
    # torch's clamp_min((margin + d_pos) - d_neg, 0): its order, and a NaN distance passes no gradient (relu's would)
    return _reduce_loss(ew.clamp(ew.sub(ew.add(d_pos, margin), d_neg), min=0.0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.triplet_margin_with_distance_loss: ``max(0, margin + d(a, p) - d(a, n))`` for any
    distance function ``d`` (default ``pairwise_distance``); ``swap`` uses ``min(d(a, n), d(p, n))`` as the
    negative distance."""
    fn = "triplet_margin_with_distance_loss"
    _check_reduction(reduction, fn)
    if margin <= 0:
        raise ValueError(f"{fn}(): margin must be greater than 0, got {margin}")
    for name, t in (("anchor", anchor), ("positive", positive), ("negative", negative)):
        _tensor_arg(t, fn, name)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"{fn}(): The anchor, positive, and negative tensors are expected to have the same number "
                           f"of dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")  # fmt: skip
    d = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = d(anchor, positive), d(anchor, negative)
    if swap:
        d_neg = ew.minimum(d_neg, d(positive, negative))
    return _reduce_loss(ew.clamp(ew.sub(ew.add(d_pos, margin), d_neg), min=0.0), reduction)  # torch: clamp_min


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
                                reduce=None, reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.multilabel_soft_margin_loss: the binary logistic loss of
    each class, averaged over classes (the last dim)."""
    fn = "multilabel_soft_margin_loss"
    _float_arg(input, fn)
    reduction = _reduction(fn, size_average, reduce, reduction)
    _same_shape(fn, input, target)
    loss = ew.neg(ew.add(ew.mul(target, logsigmoid(input)), ew.mul(ew.sub(1.0, target), logsigmoid(ew.neg(input)))))
    if weight is not None:
        loss = ew.mul(loss, weight)
    loss = rd.mean(loss, -1) if input.ndim else loss
    return _reduce_loss(loss, reduction)


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      size_average=None, reduce=None, reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.multi_margin_loss: sum over classes i != y of
    max(0, margin - x[y] + x[i])^p (times weight[y]), divided by the number of classes. A 0-d input is one sample
    of one class; for a 0-d or 1-d input the unreduced loss has the target's shape, as torch's."""
    fn = "multi_margin_loss"
    _float_arg(input, fn)
    reduction = _reduction(fn, size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError(f"{fn}(): only p == 1 and p == 2 supported, got {p!r}")
    if input.ndim > 2:
        raise ShapeError(f"{fn}(): expected a 0-d, 1-d or 2-d input, got shape {list(input._shape)}")
    x = input if input.ndim == 2 else input.reshape(1, -1)
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
    z = ew.add(ew.sub(x, xy), margin)
    z = ew.where(ew.gt(z, 0.0), z, 0.0)  # torch's kernel counts z > 0 only: 0 at the margin and for NaN
    if p == 2:
        z = ew.mul(z, z)
    if weight is not None:
        z = ew.mul(z, ix.index_select(weight, 0, t).unsqueeze(1))
    from pyframe.ops._common import zeros_of

    own = zeros_of(x._shape, x.dtype)
    ix.scatter_add_(own, 1, idx, ew.add(zeros_of((x._shape[0], 1), x.dtype), 1.0))
    z = ew.where(ew.gt(own, 0.0), 0.0, z)  # the target class itself does not count
    loss = ew.div(rd.sum(z, 1), c)
    if input.ndim < 2:
        loss = loss.reshape(target._shape)
    return _reduce_loss(loss, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.multilabel_margin_loss: for each sample, the targets are the class indices
    before the first -1; ``sum over targets j and non-targets i of max(0, 1 - (x[j] - x[i])) / C``."""
    from pyframe.nn.functional.sparse import one_hot
    from pyframe.ops import scan

    reduction = _reduction("multilabel_margin_loss", size_average, reduce, reduction)
    x, t = (input, target) if input.ndim == 2 else (input.reshape(1, -1), target.reshape(1, -1))
    if input.ndim > 2 or t.shape != x.shape:
        raise ValueError(f"multilabel_margin_loss(): inconsistent input {list(input.shape)} and target "
                         f"{list(target.shape)}")  # fmt: skip
    c = x.shape[1]
    valid = scan.cumprod(ew.ne(t, -1).to(_dtype.int64), 1)  # 1 up to the first -1
    idx = ew.mul(t, valid)  # -1s and what follows them point at class 0, masked out below
    hot = ew.mul(one_hot(idx, c), valid.unsqueeze(-1))  # (N, K, C)
    is_target = ew.gt(rd.sum(hot, 1), 0)  # (N, C)
    xt = ix.gather(x, 1, idx)  # (N, K)
    margins = ew.relu(ew.add(ew.sub(1.0, xt.unsqueeze(-1)), x.unsqueeze(1)))  # (N, K, C)
    keep = ew.mul(ew.logical_not(is_target).unsqueeze(1).to(x.dtype), valid.unsqueeze(-1).to(x.dtype))
    loss = ew.div(rd.sum(ew.mul(margins, keep), (1, 2)), c)
    if input.ndim < 2:
        loss = loss.reshape(())
    return _reduce_loss(loss, reduction)


def _lengths(v, fn: str, name: str, n: int) -> Tensor:
    """input_lengths / target_lengths: a tensor or a sequence of n ints, as a contiguous int64 tensor."""
    from pyframe.ops.creation import tensor

    t = v if isinstance(v, Tensor) else tensor(list(v) if isinstance(v, (tuple, list)) else [v], dtype=_dtype.int64)
    if t.dtype.is_floating_point or t.dtype is _dtype.bool_:
        raise TypeError(f"{fn}(): {name} must be integers, got {t.dtype.name}")
    t = t.reshape(-1).to(_dtype.int64).contiguous()
    if t._shape != (n,):
        raise ShapeError(f"{fn}(): {name} must have one entry per sample ({n}), got shape {list(t._shape)}")
    return t


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.ctc_loss: the connectionist temporal classification loss of ``log_probs``
    (T, N, C) (or unbatched (T, C)) against ``targets`` (N, S) padded or 1-d concatenated, computed in C by
    torch's algorithm (forward variables in log space) with torch's gradient; "mean" divides each sample's loss
    by its target length (at least 1) before averaging over the batch."""
    fn = "ctc_loss"
    _float_arg(log_probs, fn, "log_probs")
    _check_reduction(reduction, fn)
    _tensor_arg(targets, fn, "targets")
    if targets.dtype.is_floating_point or targets.dtype is _dtype.bool_:
        raise TypeError(f"{fn}(): targets must be integers, got {targets.dtype.name}")
    if log_probs.ndim == 2:  # unbatched
        lp, tg = log_probs.unsqueeze(1), targets.reshape(1, -1)
    elif log_probs.ndim == 3:
        lp, tg = log_probs, targets
    else:
        raise ShapeError(f"{fn}(): log_probs must be (T, N, C) or (T, C), got shape {list(log_probs._shape)}")
    if log_probs.dtype is not _dtype.float32 and log_probs.dtype is not _dtype.float64:
        raise TypeError(f"{fn}(): only float32 and float64 log_probs are supported, got {log_probs.dtype.name}")
    n = lp._shape[1]
    il, tl = _lengths(input_lengths, fn, "input_lengths", n), _lengths(target_lengths, fn, "target_lengths", n)
    tg = tg.to(_dtype.int64)
    tg = tg if tg.ndim == 2 or tg._contig else tg.contiguous()
    max_target = int(rd.amax(tl)) if n else 0
    alpha = empty_tensor((n, lp._shape[0], 2 * max(max_target, 0) + 1), lp.dtype)
    nll = empty_tensor((n,), lp.dtype)
    check(lib.pf_ctc_loss(lp._d(), tg._d(), il._d(), tl._d(), int(blank), nll._d(), alpha._d()))
    if needs_grad(lp):
        y = nll.detach()  # the backward reads the loss: nll itself would be a cycle through its node

        def backward(g):
            grad = empty_tensor(lp._shape, lp.dtype)
            beta = empty_tensor(alpha._shape, lp.dtype)
            check(lib.pf_ctc_loss_backward(g._d(), lp._d(), tg._d(), il._d(), tl._d(), y._d(), alpha._d(),
                                           beta._d(), int(blank), int(bool(zero_infinity)), grad._d()))  # fmt: skip
            return (grad,)

        record("CtcLossBackward0", backward, (lp,), nll, (lp,))
    loss = nll
    if zero_infinity:
        loss = ew.where(ew.eq(loss, math.inf), 0.0, loss)
    if reduction == "mean":
        loss = rd.mean(ew.div(loss, ew.clamp(tl, min=1).to(loss.dtype)))
    elif reduction == "sum":
        loss = rd.sum(loss)
    elif log_probs.ndim == 2:
        loss = loss.squeeze(0)
    return loss
