"""linear_cross_entropy: ``cross_entropy(linear(input, W, b), target)``, and its chunked form, which never holds
the whole (batch, classes) logits: the loss is summed chunk by chunk of rows, and backward recomputes each
chunk's logits to form its gradients (LLM vocabulary heads, where classes far outnumber features)."""

from __future__ import annotations

import dataclasses
import math
import warnings

from pyframe import _dtype, _grad_mode
from pyframe._backend import ShapeError
from pyframe.autograd.graph import record
from pyframe.nn.functional._utils import _check_reduction, _float_arg, _tensor_arg
from pyframe.nn.functional.linear import linear
from pyframe.nn.functional.loss import cross_entropy
from pyframe.ops import elementwise as ew
from pyframe.ops import index as ix
from pyframe.ops import reduce as rd
from pyframe.ops.creation import arange, zeros
from pyframe.ops.join import cat
from pyframe.ops.products import matmul
from pyframe.tensor import Tensor

__all__ = ["linear_cross_entropy"]  # LinearCrossEntropyOptions is torch.nn's: pyframe.nn exports it

_POLICIES = ("auto", "accurate", "balanced", "compact")


@dataclasses.dataclass
class LinearCrossEntropyOptions:
    """Same as torch.nn.LinearCrossEntropyOptions: asks ``linear_cross_entropy`` for its chunked form.

    Attributes:
        allow_retain_graph: accepted; pyframe's backward recomputes each chunk from the saved inputs, so a second
            backward (``retain_graph=True``) always works.
        batch_chunk_size: rows per chunk; None picks it by ``chunking_method``.
        chunking_method: ``"auto"`` (``"aspect_ratio"`` for 16-bit floats, else ``"aspect_ratio:2"``),
            ``"aspect_ratio[:N]"`` (a chunk's logits about as large as the input, divided by N) or None (use
            ``batch_chunk_size``, one chunk when that is None too).
        acc_policy: ``"auto"``, ``"accurate"``, ``"balanced"`` or ``"compact"``; pyframe computes every step of
            a chunk in ``acc_dtype`` (torch's ``"accurate"``).
        acc_dtype: the dtype chunks compute in; None: float32 for float16/bfloat16 inputs, else the input's.
    """

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: _dtype.dtype | None = None

    def __post_init__(self) -> None:
        if self.acc_policy not in _POLICIES:
            raise ValueError(f"invalid acc_policy: {self.acc_policy!r} (one of {', '.join(_POLICIES)})")
        if self.chunking_method not in (None, "auto"):
            name, sep, factor = self.chunking_method.partition(":")
            if not (name == "aspect_ratio" and (not sep or (factor.isdigit() and int(factor) > 0))):
                raise ValueError(f"invalid chunking_method: {self.chunking_method!r} (\"auto\", \"aspect_ratio\", "
                                 f"\"aspect_ratio:N\" with N >= 1, or None)")  # fmt: skip
        size = self.batch_chunk_size
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size <= 0):
            raise ValueError(f"batch_chunk_size must be a positive int or None, got {size!r}")
        if self.acc_dtype is not None and not _dtype.as_dtype(self.acc_dtype).is_floating_point:
            raise ValueError(f"acc_dtype must be a floating dtype or None, got {self.acc_dtype!r}")

    def chunk_rows(self, rows: int, in_features: int, classes: int, dt: _dtype.dtype) -> int:
        """The rows per chunk for a (rows, in_features) input and ``classes`` classes."""
        method = self.chunking_method
        if method == "auto":
            method = None if self.batch_chunk_size is not None else (
                "aspect_ratio" if dt in (_dtype.float16, _dtype.bfloat16) else "aspect_ratio:2")  # fmt: skip
        if method is None:
            return max(1, min(self.batch_chunk_size or rows, rows))
        _, _, factor = method.partition(":")
        target = -(-rows // -(-classes // in_features))  # rows / ceil(classes / in_features), rounded up
        size = max(1, 1 << (target - 1).bit_length()) // int(factor or 1)
        if self.batch_chunk_size is not None and self.batch_chunk_size != size:
            raise ValueError(f"batch_chunk_size={self.batch_chunk_size} and chunking_method={method!r} give "
                             f"different chunk sizes ({size}); set chunking_method=None")  # fmt: skip
        return max(1, min(size, rows))


def linear_cross_entropy(input: Tensor, linear_weight: Tensor, target: Tensor, *,  # noqa: A002 - torch's names
                         linear_bias: Tensor | None = None, weight: Tensor | None = None, reduction: str = "mean",
                         ignore_index: int | None = None, label_smoothing: float = 0.0,
                         options: LinearCrossEntropyOptions | None = None) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.linear_cross_entropy: ``cross_entropy(linear(input, linear_weight,
    linear_bias), target, ...)`` for an input (in_features) or (N, in_features) and a weight (C, in_features) or
    (C, d1, ..., dK, in_features) (a K-dimensional loss: logits (N, C, d1, ..., dK)). ``ignore_index`` None means
    -100 for class-index targets and must stay None for probability targets.

    With ``options`` (a :class:`LinearCrossEntropyOptions`) the loss of class-index int64 targets without label
    smoothing and K = 0 is computed in chunks of rows, never holding the (N, C) logits; other cases warn, as
    torch, and take the direct path. The chunked form's backward recomputes each chunk; it is not differentiable
    twice (torch's is not either)."""
    fn = "linear_cross_entropy"
    _float_arg(input, fn)
    _tensor_arg(linear_weight, fn, "linear_weight")
    _tensor_arg(target, fn, "target")
    _check_reduction(reduction, fn)
    if input.ndim not in (1, 2):
        raise RuntimeError(f"{fn}(): expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError(f"{fn}(): expected linear_weight with dimensionality at least 2, got {linear_weight.ndim}")
    batch, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError(f"{fn}(): expected equal input and linear_weight last dimensions (in_features), got "
                           f"{in_features} and {linear_weight.shape[-1]}, respectively")  # fmt: skip
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes, *out_features):
        raise RuntimeError(f"{fn}(): expected linear_bias shape {(classes, *out_features)}, got "
                           f"{tuple(linear_bias.shape)}")  # fmt: skip
    if out_features and not batch:
        raise RuntimeError(f"{fn}(): K-dimensional loss defined by linear_weight shape {tuple(linear_weight.shape)} "
                           f"requires batched input, (N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")  # fmt: skip
    logits_shape = (*batch, classes, *out_features)
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError(f"{fn}(): ignore_index cannot be specified when target contains probabilities")
    ignore = -100 if ignore_index is None else ignore_index
    if options is not None:
        if not out_features and label_smoothing == 0.0 and target.dtype is _dtype.int64:
            return _chunked(input, linear_weight, linear_bias, target, weight, reduction, ignore, options)
        warnings.warn(f"{fn}: options ignored; the chunked path needs label_smoothing == 0, int64 class-index "
                      f"targets and out_features == (), got label_smoothing={label_smoothing}, target.dtype="
                      f"{target.dtype.name}, out_features={out_features}", stacklevel=2)  # fmt: skip
    w = linear_weight.reshape(math.prod(out_features, start=classes), in_features)
    b = linear_bias.reshape(-1) if linear_bias is not None else None
    logits = linear(input, w, b).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction, ignore_index=ignore,
                         label_smoothing=label_smoothing)  # fmt: skip


def _chunked(x: Tensor, W: Tensor, b: Tensor | None, target: Tensor, weight: Tensor | None, reduction: str,  # noqa: N803
             ignore: int, options: LinearCrossEntropyOptions) -> Tensor:  # fmt: skip
    fn = "linear_cross_entropy"
    x0, unbatched = x, x.ndim == 1
    if unbatched:
        x, target = x.reshape(1, -1), target.reshape(1)
    rows, classes = x.shape[0], W.shape[0]
    if tuple(target.shape) != (rows,):
        raise ShapeError(f"{fn}(): expected a target of shape [{rows}], got {list(target.shape)}")
    if weight is not None and tuple(weight.shape) != (classes,):
        raise ShapeError(f"{fn}(): weight should have shape [{classes}], got {list(weight.shape)}")
    valid = ew.ne(target, ignore)
    if rows and bool(rd.any(ew.logical_and(valid, ew.logical_or(ew.lt(target, 0), ew.ge(target, classes))))):
        raise IndexError(f"{fn}(): target values must be in [0, {classes - 1}] or ignore_index={ignore}")
    acc = options.acc_dtype or (_dtype.float32 if x.dtype in (_dtype.float16, _dtype.bfloat16) else x.dtype)
    acc = _dtype.as_dtype(acc)
    safe = ew.where(valid, target, 0)
    # each row's weight: its class's weight (1 without weights), 0 where ignored
    row_w = valid.to(acc)
    if weight is not None:
        row_w = ew.mul(ix.index_select(weight.detach(), 0, safe).to(acc), row_w)
    step = options.chunk_rows(rows, x.shape[1], classes, x.dtype)
    xs, Ws = x.detach().to(acc), W.detach().to(acc)
    bs = b.detach().to(acc) if b is not None else None
    chunks = [(s, min(s + step, rows)) for s in range(0, rows, step)]
    with _grad_mode.no_grad():
        losses = []
        for s, e in chunks:
            z = _logits(xs[s:e], Ws, bs)
            picked = ix.gather(z, 1, safe[s:e].reshape(-1, 1)).reshape(-1)
            losses.append(ew.mul(ew.sub(rd.logsumexp(z, 1), picked), row_w[s:e]))
        per_row = cat(losses) if losses else zeros(0, dtype=acc)
        denom = rd.sum(row_w)
        out = per_row if reduction == "none" else rd.sum(per_row)
        if reduction == "mean":
            out = ew.div(out, denom)
        out = out.to(x.dtype)
    if unbatched and reduction == "none":
        out = out.reshape(())

    def backward(g: Tensor):
        g = g.to(acc)
        scale = g.reshape(-1) if reduction == "none" else ew.div(g, denom) if reduction == "mean" else g
        cols = arange(classes).reshape(1, -1)
        gx, gW = [], zeros(classes, x.shape[1], dtype=acc)
        gb = zeros(classes, dtype=acc) if b is not None else None
        for s, e in chunks:
            z = _logits(xs[s:e], Ws, bs)
            onehot = ew.eq(cols, safe[s:e].reshape(-1, 1)).to(acc)
            rs = ew.mul(row_w[s:e], scale[s:e] if reduction == "none" else scale)
            G = ew.mul(ew.sub(rd.softmax(z, 1), onehot), rs.reshape(-1, 1))  # noqa: N806 - dlogits
            gx.append(matmul(G, Ws))
            gW = ew.add(gW, matmul(G.t(), xs[s:e]))
            if gb is not None:
                gb = ew.add(gb, rd.sum(G, 0))
        grad_x = (cat(gx) if gx else zeros(0, x.shape[1], dtype=acc)).to(x.dtype)
        return (grad_x.reshape(x0.shape), gW.to(W.dtype), gb.to(b.dtype) if gb is not None else None)

    inputs = (x0, W, b)
    if _grad_mode.enabled and any(isinstance(t, Tensor) and t.requires_grad for t in inputs):
        record("LinearCrossEntropyBackward0", backward, inputs, out, tuple(t for t in inputs if t is not None))
    return out


def _logits(x: Tensor, W: Tensor, b: Tensor | None) -> Tensor:  # noqa: N803
    return linear(x, W, b)
