"""Dropout."""

from __future__ import annotations

import warnings

from pyframe import _dtype, _grad_mode
from pyframe._backend import check, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import _float_arg
from pyframe.ops import elementwise as ew
from pyframe.ops.random import _generator, bernoulli_
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "alpha_dropout", "feature_alpha_dropout", "dropout", "dropout1d", "dropout2d", "dropout3d",
]  # fmt: skip


def _check_p(fn: str, p) -> None:
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{fn}(): dropout probability has to be between 0 and 1, but got {p}")


def _apply_mask(input: Tensor, mask_shape: tuple, p: float, inplace: bool) -> Tensor:
    """``input`` times a Bernoulli(1 - p) mask of ``mask_shape`` (broadcast over the rest),
    scaled by 1 / (1 - p): the mask is drawn outside autograd, the product is recorded. An element-wise
    mask is drawn as bool and applied with ``where``, so backward keeps a byte per element (as torch's
    dropout), not a float mask and the input."""
    if not inplace and p < 1.0 and mask_shape == input._shape:
        if input.dtype.code in _NATIVE and input.is_contiguous():
            return _fused(input, p)
        with _grad_mode.no_grad():
            keep = empty_tensor(mask_shape, _dtype.bool_)
            bernoulli_(keep, 1.0 - p)
        return ew.where(keep, ew.mul(input, 1.0 / (1.0 - p)), 0.0)
    with _grad_mode.no_grad():
        mask = empty_tensor(mask_shape, input.dtype)
        if p == 1.0:
            ew.fill_(mask, 0.0)
        else:
            bernoulli_(mask, 1.0 - p)
            ew.inplace_ops["mul_"](mask, 1.0 / (1.0 - p))
    if inplace:
        return ew.inplace_ops["mul_"](input, mask)
    return ew.mul(input, mask)


_NATIVE = (_dtype.float32.code, _dtype.float64.code)


def _fused(input: Tensor, p: float) -> Tensor:
    """Element-wise dropout of a contiguous float32/float64 tensor in one C pass each way (pf_dropout): the same
    counters, mask and values as the composition above (``bernoulli_`` into bool, ``where``), without its
    intermediate tensors; the bool mask is kept for backward. Double backward differentiates the composition."""
    dt, n = input.dtype, input._numel
    keep, out = empty_tensor(input._shape, _dtype.bool_), empty_tensor(input._shape, dt)
    seed, offset = _generator(None).take(n)
    check(lib.pf_dropout(dt.code, input._ptr, out._ptr, keep._ptr, n, p, seed, offset))
    if needs_grad(input):

        def backward(g):
            if _grad_mode.enabled:  # create_graph: the composition's derivative, differentiable again
                return (ew.mul(ew.where(keep, g, 0.0), 1.0 / (1.0 - p)),)
            g = g.contiguous()
            gx = empty_tensor(g._shape, dt)
            check(lib.pf_dropout_backward(dt.code, g._ptr, keep._ptr, gx._ptr, n, p))
            return (gx,)

        record("MulBackward0", backward, (input,), out)
    return out


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.dropout: a Bernoulli(1 - p) mask from pyframe's seeded
    generator (``pyframe.manual_seed``), scaled by 1 / (1 - p). The random stream differs
    from torch's."""
    _float_arg(input, "dropout")
    _check_p("dropout", p)
    if not training or p == 0.0:
        return input
    return _apply_mask(input, input._shape, p, inplace)


def _feature_dropout(fn: str, input: Tensor, p: float, training: bool, inplace: bool, dims: int) -> Tensor:
    """Zeroes whole channels: one Bernoulli draw per (sample, channel) for a (N, C, *spatial)
    input with ``dims`` spatial dims, or per channel for an unbatched (C, *spatial) one."""
    _float_arg(input, fn)
    _check_p(fn, p)
    if input.ndim not in (dims + 1, dims + 2):
        raise ValueError(f"{fn}(): expected a {dims + 1}-d (unbatched) or {dims + 2}-d (batched) input, got shape "
                         f"{list(input._shape)}")  # fmt: skip
    if not training or p == 0.0:
        return input
    lead = 2 if input.ndim == dims + 2 else 1
    return _apply_mask(input, input._shape[:lead] + (1,) * dims, p, inplace)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.dropout1d: zeroes whole channels of (N, C, L) or (C, L)."""
    return _feature_dropout("dropout1d", input, p, training, inplace, 1)


def _deprecated_rank(fn: str, input: Tensor, spatial: int) -> None:
    warnings.warn(
        f"{fn}: Received a {input.ndim}-D input to {fn}, which is deprecated and will result in an error in a "
        "future release. To retain the behavior and silence this warning, please use dropout instead. Note that "
        f"{fn} exists to provide channel-wise dropout on inputs with {spatial} spatial dimensions, a channel "
        f"dimension, and an optional batch dimension (i.e. {spatial + 1}D or {spatial + 2}D inputs).",
        stacklevel=3,
    )


def _leading_mask(fn: str, input: Tensor, p: float, training: bool, inplace: bool, lead: int) -> Tensor:
    """torch's feature dropout of an input of another rank: one draw per index of the first ``lead`` dims."""
    _float_arg(input, fn)
    _check_p(fn, p)
    if input.ndim < lead:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0.0:
        return input
    return _apply_mask(input, input._shape[:lead] + (1,) * (input.ndim - lead), p, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.dropout2d: zeroes whole channels of (N, C, H, W). A 3-d input
    is taken as (N, C, L) with torch's warning (torch's current behaviour); any other rank warns as torch does
    and drops per (dim 0, dim 1) index (a 2-d input element by element)."""
    if isinstance(input, Tensor) and input.ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim. This behavior will "
            "change in a future release to interpret the input as one without a batch dimension, i.e. shape "
            "(C, H, W). To maintain the 1D channel-wise dropout behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
        return _feature_dropout("dropout2d", input, p, training, inplace, 1)
    if isinstance(input, Tensor) and input.ndim != 4:
        _deprecated_rank("dropout2d", input, 2)
        return _leading_mask("dropout2d", input, p, training, inplace, 2)
    return _feature_dropout("dropout2d", input, p, training, inplace, 2)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.dropout3d: zeroes whole channels of (N, C, D, H, W) or (C, D, H, W); any other
    rank warns as torch does and drops per index of dim 0 (the unbatched channel dim)."""
    if isinstance(input, Tensor) and input.ndim not in (4, 5):
        _deprecated_rank("dropout3d", input, 3)
        if input.ndim == 0:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        return _leading_mask("dropout3d", input, p, training, inplace, 1)
    return _feature_dropout("dropout3d", input, p, training, inplace, 3)


_SELU_NEG = -1.7580993408473766  # -scale * alpha of SELU: the value a dropped SELU unit takes


def _alpha(fn: str, input: Tensor, mask_shape: tuple | None, p: float, training: bool, inplace: bool) -> Tensor:
    """Alpha dropout with one Bernoulli(1 - p) draw per element of ``mask_shape`` (broadcast over the rest; None:
    the input's shape): dropped units take SELU's negative saturation value, then an affine map keeps zero mean
    and unit variance."""
    _float_arg(input, fn)
    _check_p(fn, p)
    if not training or p == 0.0:  # torch's: the identity, whatever the input's rank
        return input
    if mask_shape is not None and input.ndim < 2:
        raise RuntimeError(f"{fn}(): feature dropout requires at least 2 dimensions in the input, got shape "
                           f"{list(input._shape)}")  # fmt: skip
    if p == 1.0:
        out = ew.mul(input, 0.0)
        return ew.copy_(input, out) if inplace else out
    a = ((1 - p) * (1 + p * _SELU_NEG**2)) ** -0.5
    b = -a * _SELU_NEG * p
    with _grad_mode.no_grad():
        keep = empty_tensor(input._shape if mask_shape is None else mask_shape, input.dtype)
        bernoulli_(keep, 1.0 - p)
        shift = ew.add(ew.mul(ew.sub(1.0, keep), _SELU_NEG * a), b)  # b + a * alpha' where dropped
        scale = ew.mul(keep, a)
    out = ew.add(ew.mul(input, scale), shift)
    return ew.copy_(input, out) if inplace else out


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.alpha_dropout: dropped units take SELU's negative saturation
    value, then an affine map keeps zero mean and unit variance."""
    return _alpha("alpha_dropout", input, None, p, training, inplace)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Same as torch.nn.functional.feature_alpha_dropout: ``alpha_dropout`` of whole channels, one draw per
    (dim 0, dim 1) index of an input of at least 2 dims (a (N, C, *) batch)."""
    lead = input._shape[:2] if isinstance(input, Tensor) else ()
    shape = lead + (1,) * (input.ndim - 2) if isinstance(input, Tensor) and input.ndim >= 2 else ()
    return _alpha("feature_alpha_dropout", input, shape, p, training, inplace)
