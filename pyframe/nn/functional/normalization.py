"""Normalization: batch, layer and group norm, normalize."""

from __future__ import annotations

import math

from pyframe import _dtype, _grad_mode
from pyframe._backend import NULL, ShapeError, check, lib
from pyframe.autograd.graph import needs_grad, record
from pyframe.nn.functional._utils import _float_arg, _regrad, _same_dtype, _tensor_arg
from pyframe.ops import elementwise as ew
from pyframe.ops import reduce as rd
from pyframe.tensor import Tensor, empty_tensor

__all__ = [
    "batch_norm", "group_norm", "instance_norm", "layer_norm", "normalize", "rms_norm", "local_response_norm",
]  # fmt: skip

_NATIVE = (_dtype.float32.code, _dtype.float64.code)  # dtypes the fused C kernels take
_HALF = (_dtype.float16, _dtype.bfloat16)  # computed in float32 and rounded once, as torch's CPU kernels


def _normalized(x: Tensor, red: tuple, eps: float):
    """(x - mean) / sqrt(var + eps) over dims ``red``, with the mean, biased var and 1/std.
    float16 and bfloat16 are normalized in float32, as torch: a half variance overflows once values pass
    about 256 (a layer of 1000s normalized to 0s), and the statistics come back in the 16-bit dtype."""
    if x.dtype in _HALF:
        y, mean, var, invstd = _normalized(x.float(), red, eps)
        return y.to(x.dtype), mean.to(x.dtype), var.to(x.dtype), invstd.to(x.dtype)
    mean = rd.mean(x, red, keepdim=True)
    var = rd.var(x, red, keepdim=True, correction=0)
    invstd = ew.rsqrt(ew.add(var, eps))
    return ew.mul(ew.sub(x, mean), invstd), mean, var, invstd


def _norm_composite(red: tuple, wshape: tuple, eps: float):
    def composite(x, w, b):
        y = _normalized(x, red, eps)[0]
        if w is not None:
            y = ew.mul(y, w.reshape(wshape))
        return ew.add(y, b.reshape(wshape)) if b is not None else y

    return composite


def _layer_normalize(x: Tensor, red: tuple, lead: tuple, shape: tuple, w, b, eps: float) -> Tensor:
    """Normalize over the last dims ``red``, then scale and shift by ``w``, ``b`` (of ``shape``),
    as one node. float32/float64 run one C call each way (pf_layer_norm, saving the row mean
    and 1/std); float16 and bfloat16 run the float32 kernel between casts (one rounding, as torch). Backward
    is the closed form gx = invstd * (gh - mean(gh) - xhat * mean(gh * xhat)) with gh = g * w; gw, gb sum over
    ``lead``."""
    d = math.prod(shape)
    if x.dtype in _HALF and d and all(t is None or t.dtype is x.dtype for t in (w, b)):
        w32, b32 = (t.float() if t is not None else None for t in (w, b))
        return _layer_normalize(x.float(), red, lead, shape, w32, b32, eps).to(x.dtype)
    if x.dtype.code not in _NATIVE or d == 0:
        return _layer_normalize_composed(x, red, lead, shape, w, b, eps)
    x = x.contiguous()
    rows = x._numel // d if d else 0
    w = w.contiguous() if w is not None else None
    b = b.contiguous() if b is not None else None
    dt = x.dtype
    y = empty_tensor(x._shape, dt)
    mean = empty_tensor((rows,), dt)
    rstd = empty_tensor((rows,), dt)
    wp = w._ptr if w is not None else NULL
    check(lib.pf_layer_norm(dt.code, x._ptr, wp, b._ptr if b is not None else NULL, y._ptr, mean._ptr,
                            rstd._ptr, rows, d, float(eps)))  # fmt: skip
    if needs_grad(x, w, b):

        def backward(g):
            if _grad_mode.enabled:  # create_graph: differentiate the composition instead
                return _regrad(_norm_composite(red, shape, eps), (x, w, b), g)
            g = g.contiguous()
            gx = empty_tensor(x._shape, dt) if x.requires_grad else None
            gw = empty_tensor(shape, dt) if w is not None and w.requires_grad else None
            gb = empty_tensor(shape, dt) if b is not None and b.requires_grad else None
            check(lib.pf_layer_norm_backward(dt.code, g._ptr, x._ptr, mean._ptr, rstd._ptr, wp,
                                             gx._ptr if gx is not None else NULL, gw._ptr if gw is not None else NULL,
                                             gb._ptr if gb is not None else NULL, rows, d))  # fmt: skip
            return gx, gw, gb

        record("NativeLayerNormBackward0", backward, (x, w, b), y, tuple(t for t in (x, w) if t is not None))
    return y


def _layer_normalize_composed(x: Tensor, red: tuple, lead: tuple, shape: tuple, w, b, eps: float) -> Tensor:
    with _grad_mode.no_grad():
        xhat, _, _, invstd = _normalized(x, red, eps)
        y = ew.mul(xhat, w) if w is not None else xhat
        if b is not None:
            y = ew.add(y, b)
        elif w is None:
            y = xhat.clone()  # xhat is saved: the output may be changed in place
    if needs_grad(x, w, b):

        def backward(g):
            if _grad_mode.enabled:  # create_graph: differentiate the composition instead
                return _regrad(_norm_composite(red, shape, eps), (x, w, b), g)
            gx = gw = gb = None
            if x.requires_grad:
                gh = ew.mul(g, w) if w is not None else g
                proj = rd.mean(ew.mul(gh, xhat), red, keepdim=True)
                gx = ew.mul(ew.sub(ew.sub(gh, rd.mean(gh, red, keepdim=True)), ew.mul(xhat, proj)), invstd)
            if w is not None and w.requires_grad:
                gw = rd.sum(ew.mul(g, xhat), lead)
            if b is not None and b.requires_grad:
                gb = rd.sum(g, lead)
            return gx, gw, gb

        record("NativeLayerNormBackward0", backward, (x, w, b), y, tuple(t for t in (x, w) if t is not None))
    return y


def _batch_normalize(x: Tensor, red: tuple, bshape: tuple, w, b, eps: float):
    """Batch-statistics normalization of (N, C, ...) per channel as one node, composed of ops
    (float16, bfloat16 and the rare cases the fused kernel does not take). The per-channel affine map is
    folded into y = x * scale + shift, and with xc = x - mean, a = w * invstd and m values per
    channel, gx = a * (g - sum(g) / m) - xc * a * invstd^2 * sum(g * xc) / m."""
    if x.dtype in _HALF:  # in float32, as torch: a half variance overflows past about 256
        w32, b32 = (t.float() if t is not None else None for t in (w, b))
        y, mean, var = _batch_normalize(x.float(), red, bshape, w32, b32, eps)
        return y.to(x.dtype), mean, var
    c = x._shape[1]
    m = x._numel // c
    with _grad_mode.no_grad():
        mean = rd.mean(x, red, keepdim=True)
        var = rd.var(x, red, keepdim=True, correction=0)
        invstd = ew.rsqrt(ew.add(var, eps))
        scale = ew.mul(invstd, w.view(bshape)) if w is not None else invstd
        shift = ew.mul(mean, scale)
        shift = ew.sub(b.view(bshape), shift) if b is not None else ew.neg(shift)
        y = ew.add(ew.mul(x, scale), shift)
    if needs_grad(x, w, b):

        def backward(g):
            if _grad_mode.enabled:  # create_graph: differentiate the composition instead
                return _regrad(_norm_composite(red, bshape, eps), (x, w, b), g)
            sum_g = rd.sum(g, red, keepdim=True)
            xc = ew.sub(x, mean)
            sum_gxhat = ew.mul(rd.sum(ew.mul(g, xc), red, keepdim=True), invstd)
            gx = None
            if x.requires_grad:
                k = ew.mul(ew.mul(scale, invstd), ew.div(sum_gxhat, m))
                gx = ew.sub(ew.mul(ew.sub(g, ew.div(sum_g, m)), scale), ew.mul(xc, k))
            gw = sum_gxhat.view(c) if w is not None and w.requires_grad else None
            gb = sum_g.view(c) if b is not None and b.requires_grad else None
            return gx, gw, gb

        record("NativeBatchNormBackward0", backward, (x, w, b), y, tuple(t for t in (x, w) if t is not None))
    return y, mean, var


def _fused_batch_norm(x: Tensor, w, b, rm, rv, momentum: float, eps: float) -> Tensor:
    """Training-mode batch norm in two C kernels (``pf_batch_norm_forward``/``_backward``): the
    statistics, the normalization and the running-statistics update in one call, the input,
    weight and bias gradients in another."""
    shape, c = x._shape, x._shape[1]
    x3 = (x if x._contig else x.contiguous()).view(shape[0], c, -1)
    y = empty_tensor(shape, x.dtype)  # the output owns its memory: in-place ops on it stay legal
    # float64 whatever x is: a float32 mean off by half an ulp of a large mean is a large error
    # beside a small spread, and backward centres x on it again
    mean, var = empty_tensor((c,), _dtype.float64), empty_tensor((c,), _dtype.float64)
    null = lambda t: t._d() if t is not None else NULL  # noqa: E731
    y3 = y.view(x3._shape)
    check(lib.pf_batch_norm_forward(x3._d(), null(w), null(b), eps, momentum, null(rm), null(rv), y3._d(), mean._d(),
                                    var._d()))  # fmt: skip
    for t in (rm, rv):
        if t is not None:
            t._bump()
    if needs_grad(x, w, b):

        def backward(g):
            if _grad_mode.enabled:  # create_graph: differentiate the composition instead
                red, bshape = (0,) + tuple(range(2, len(shape))), (1, c) + (1,) * (len(shape) - 2)
                return _regrad(_norm_composite(red, bshape, eps), (x, w, b), g)
            g3 = (g if g._contig else g.contiguous()).view(x3._shape)
            gx = empty_tensor(shape, x.dtype) if x.requires_grad else None
            gw = empty_tensor((c,), x.dtype) if w is not None and w.requires_grad else None
            gb = empty_tensor((c,), x.dtype) if b is not None and b.requires_grad else None
            gx3 = gx.view(x3._shape) if gx is not None else None
            check(lib.pf_batch_norm_backward(g3._d(), x3._d(), mean._d(), var._d(), null(w), eps, null(gx3), null(gw),
                                             null(gb)))  # fmt: skip
            return gx, gw, gb

        record("NativeBatchNormBackward0", backward, (x, w, b), y, tuple(t for t in (x, w) if t is not None))
    return y


def _fused_batch_norm_eval(x: Tensor, w, b, rm: Tensor, rv: Tensor, eps: float) -> Tensor:
    """Batch norm with the running statistics in one C pass (``pf_batch_norm_eval``), when nothing needs a
    gradient (inference): the composition of seven ops cost about 0.1 ms a call at batch 1."""
    shape = x._shape
    x3 = (x if x._contig else x.contiguous()).view(shape[0], shape[1], math.prod(shape[2:]))
    y = empty_tensor(shape, x.dtype)
    null = lambda t: t._d() if t is not None else NULL  # noqa: E731
    check(lib.pf_batch_norm_eval(x3._d(), null(w), null(b), rm._d(), rv._d(), eps, y.view(x3._shape)._d()))
    return y


def _half_with_float_params(input: Tensor, *params) -> bool:
    """torch's mixed-type normalization: a float16/bfloat16 input with float32 parameters (and statistics), as
    under autocast, is normalized in float32 and the result rounded to the input's dtype once."""
    given = [t for t in params if isinstance(t, Tensor)]
    return (input.dtype is _dtype.float16 or input.dtype is _dtype.bfloat16) and bool(given) and all(
        t.dtype is _dtype.float32 for t in given)  # fmt: skip


def batch_norm(
    input: Tensor, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5
):  # fmt: skip
    """Same as torch.nn.functional.batch_norm for inputs (N, C, ...): batch statistics when
    training (biased variance to normalize, unbiased for the running update, done in place
    without recording), the running statistics otherwise. ``momentum`` must be a number."""
    _float_arg(input, "batch_norm")
    if input.ndim < 2:
        raise ShapeError(
            f"batch_norm(): expected an input of at least 2 dims (N, C, ...), got shape {list(input._shape)}"
        )
    c = input._shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None:
            _tensor_arg(t, "batch_norm", name)
            if t._shape != (c,):
                raise ShapeError(
                    f"batch_norm(): {name} should have shape [{c}] for an input of shape {list(input._shape)} "
                    f"({c} channels), got {list(t._shape)}"
                )
    if _half_with_float_params(input, running_mean, running_var, weight, bias):
        return batch_norm(input.float(), running_mean, running_var, weight, bias, training, momentum, eps).to(
            input.dtype)  # fmt: skip
    _same_dtype("batch_norm", input, weight=weight, bias=bias)
    red = (0,) + tuple(range(2, input.ndim))
    bshape = (1, c) + (1,) * (input.ndim - 2)
    if not training:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm(): running_mean and running_var must be given when training=False")
        given = (input, running_mean, running_var, weight, bias)
        native = input.dtype.code in _NATIVE and all(t is None or t.dtype is input.dtype for t in given)
        if native and isinstance(eps, (int, float)) and eps >= 0 and not needs_grad(*given):
            return _fused_batch_norm_eval(input, weight, bias, running_mean, running_var, float(eps))
        scale = ew.rsqrt(ew.add(running_var, eps))
        if weight is not None:
            scale = ew.mul(scale, weight)
        shift = ew.mul(running_mean, scale)
        shift = ew.sub(bias, shift) if bias is not None else ew.neg(shift)
        return ew.add(ew.mul(input, scale.view(bshape)), shift.view(bshape))
    count = input._numel // c if c else 0
    if input._numel == 0:  # torch's: an empty batch normalizes to an empty result, the running stats untouched
        return input.clone()
    if count <= 1:
        raise ValueError(
            f"batch_norm(): expected more than 1 value per channel when training, got input size {list(input._shape)}"
        )
    if not isinstance(momentum, (int, float)):
        raise TypeError(f"batch_norm(): momentum must be a number, got {momentum!r}")
    stats = (running_mean, running_var)
    if input.dtype in (_dtype.float32, _dtype.float64) and all(t is None or t.dtype is input.dtype for t in stats):
        return _fused_batch_norm(input, weight, bias, running_mean, running_var, float(momentum), float(eps))
    y, mean, var = _batch_normalize(input, red, bshape, weight, bias, eps)
    with _grad_mode.no_grad():
        if running_mean is not None:
            running_mean.mul_(1.0 - momentum).add_(ew.mul(mean.view(c), momentum))
        if running_var is not None:
            running_var.mul_(1.0 - momentum).add_(ew.mul(var.view(c), momentum * count / (count - 1)))
    return y


def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps=1e-5) -> Tensor:
    """Same as torch.nn.functional.layer_norm."""
    if (
        type(input) is Tensor and input._contig and input._shape and input.dtype.code in _NATIVE
        and (weight is None or (type(weight) is Tensor and weight.dtype is input.dtype and weight._contig
                                and weight._shape == input._shape[-1:]))
        and (bias is None or (type(bias) is Tensor and bias.dtype is input.dtype and bias._contig
                              and bias._shape == input._shape[-1:]))
        and (normalized_shape == input._shape[-1] if type(normalized_shape) is int
             else tuple(normalized_shape) == input._shape[-1:])
        and input._shape[-1] and not needs_grad(input, weight, bias)
    ):  # fmt: skip
        # the common call outside autograd (a dense input, the last dim, parameters that fit): one C call
        d = input._shape[-1]
        dt = input.dtype
        rows = input._numel // d
        y = empty_tensor(input._shape, dt)
        mean = empty_tensor((rows,), dt)
        rstd = empty_tensor((rows,), dt)
        wp, bp = NULL if weight is None else weight._ptr, NULL if bias is None else bias._ptr
        check(lib.pf_layer_norm(dt.code, input._ptr, wp, bp, y._ptr, mean._ptr, rstd._ptr, rows, d, float(eps)))
        return y
    _float_arg(input, "layer_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input._shape[input.ndim - k :] != shape or input.ndim < k:
        raise ShapeError(
            f"layer_norm(): given normalized_shape={list(shape)}, expected input with shape [*, "
            f"{', '.join(map(str, shape))}], but got input of size {list(input._shape)}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and _tensor_arg(t, "layer_norm", name)._shape != shape:
            raise ShapeError(f"layer_norm(): {name} should have shape {list(shape)}, got {list(t._shape)}")
    if _half_with_float_params(input, weight, bias):
        return layer_norm(input.float(), normalized_shape, weight, bias, eps).to(input.dtype)
    _same_dtype("layer_norm", input, weight=weight, bias=bias)
    red = tuple(range(input.ndim - k, input.ndim))
    lead = tuple(range(input.ndim - k))
    return _layer_normalize(input, red, lead, shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps=1e-5) -> Tensor:
    """Same as torch.nn.functional.group_norm (a composition of the ops)."""
    _float_arg(input, "group_norm")
    if input.ndim < 2 or input._shape[1] % num_groups:
        raise ShapeError(
            f"group_norm(): expected an input (N, C, ...) with C divisible by num_groups={num_groups}, got shape "
            f"{list(input._shape)}"
        )
    if input.dtype in _HALF and all(t is None or t.dtype is input.dtype for t in (weight, bias)):
        w32, b32 = (t.float() if t is not None else None for t in (weight, bias))
        return group_norm(input.float(), num_groups, w32, b32, eps).to(input.dtype)  # one rounding, as torch
    n, c = input._shape[:2]
    xg = input.reshape(n, num_groups, math.prod(input._shape[1:]) // num_groups)  # explicit: n may be 0
    y = _normalized(xg, (2,), eps)[0].reshape(input._shape)
    bshape = (1, c) + (1,) * (input.ndim - 2)
    if weight is not None:
        y = ew.mul(y, weight.view(bshape))
    return ew.add(y, bias.view(bshape)) if bias is not None else y


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """Same as torch.nn.functional.normalize: x / max(||x||_p, eps) along ``dim``."""
    return ew.div(input, ew.clamp(rd.norm(input, p, dim, keepdim=True), min=eps))


def instance_norm(input: Tensor, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:  # fmt: skip
    """Same as torch.nn.functional.instance_norm: each (sample, channel) normalised over its
    spatial dims, computed as torch does, by batch_norm on a (1, N*C, ...) view; running
    statistics (if given) get the batch mean of the per-instance updates."""
    _float_arg(input, "instance_norm")
    if input.ndim < 3:
        raise ShapeError(f"instance_norm(): expected an input of at least 3 dims (N, C, ...), got shape "
                         f"{list(input._shape)}")  # fmt: skip
    n, c = input._shape[:2]

    def per_instance(t):
        return None if t is None else t.unsqueeze(0).expand(n, c).reshape(n * c).contiguous()

    rm, rv = per_instance(running_mean), per_instance(running_var)
    out = batch_norm(input.reshape(1, n * c, *input._shape[2:]), rm, rv, per_instance(weight), per_instance(bias),
                     use_input_stats, momentum, eps)  # fmt: skip
    with _grad_mode.no_grad():
        if running_mean is not None and use_input_stats:
            ew.copy_(running_mean, rd.mean(rm.reshape(n, c), 0))
        if running_var is not None and use_input_stats:
            ew.copy_(running_var, rd.mean(rv.reshape(n, c), 0))
    return out.reshape(input._shape)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """Same as torch.nn.functional.rms_norm: x / sqrt(mean(x^2) + eps) over the last
    ``len(normalized_shape)`` dims, times ``weight``; ``eps`` defaults to the dtype's epsilon."""
    _float_arg(input, "rms_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input._shape[-k:] != shape:
        raise ShapeError(f"rms_norm(): normalized_shape {list(shape)} does not match the last dims of input shape "
                         f"{list(input._shape)}")  # fmt: skip
    if weight is not None and weight._shape != shape:
        raise ShapeError(f"rms_norm(): weight must have shape {list(shape)}, got {list(weight._shape)}")
    if eps is None:
        eps = _EPS[input.dtype.name]
    red = tuple(range(input.ndim - k, input.ndim))
    y = ew.mul(input, ew.rsqrt(ew.add(rd.mean(ew.mul(input, input), red, keepdim=True), eps)))
    return ew.mul(y, weight) if weight is not None else y


_EPS = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float32": 2.0**-23, "float64": 2.0**-52}  # torch.finfo(dt).eps


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Same as torch.nn.functional.local_response_norm: each value divided by ``(k + alpha * mean of the squares
    of ``size`` neighbouring channels)^beta``, the mean from avg_pool2d over the channel dim as torch's."""
    from pyframe.nn.functional.padding import pad
    from pyframe.nn.functional.pooling import avg_pool2d

    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    sizes = input.shape
    div = ew.mul(input, input).reshape(sizes[0], 1, sizes[1], -1)  # (N, 1, C, rest)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).reshape(sizes)
    return ew.div(input, ew.pow(ew.add(ew.mul(div, alpha), k), beta))


# ---- torch's native_* forms: the normalized tensor and the statistics it used (torch.native_layer_norm ...) ----


def native_layer_norm(input: Tensor, normalized_shape, weight: Tensor | None, bias: Tensor | None,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """Same as torch.native_layer_norm: ``(layer_norm(...), mean, rstd)``, the row statistics with the normalized
    dims kept as size 1 (``rstd`` is ``1 / sqrt(biased var + eps)``); as torch's, only the first result is
    differentiable."""
    out = layer_norm(input, normalized_shape, weight, bias, eps)
    k = 1 if isinstance(normalized_shape, int) else len(normalized_shape)
    with _grad_mode.no_grad():
        _, mean, _, rstd = _normalized(input, tuple(range(input.ndim - k, input.ndim)), eps)
    return out, mean, rstd


def native_group_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, N: int, C: int, HxW: int,  # noqa: N803
                      group: int, eps: float) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """Same as torch.native_group_norm: ``(group_norm(...), mean, rstd)`` with the statistics of shape
    ``(N, group)``; ``N``, ``C`` and ``HxW`` must describe the input. As torch's, all three results are
    differentiable (gradients through the statistics reach the input)."""
    _float_arg(input, "native_group_norm")
    if input.ndim < 2 or tuple(input._shape[:2]) != (N, C) or input._numel != N * C * HxW:
        raise ShapeError(f"native_group_norm(): expected an input of N={N}, C={C} and HxW={HxW} elements per "
                         f"channel, got shape {list(input._shape)}")  # fmt: skip
    if group <= 0 or C % group:
        raise ShapeError(f"native_group_norm(): C={C} must be divisible by group={group}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and _tensor_arg(t, "native_group_norm", name)._shape != (C,):
            raise ShapeError(f"native_group_norm(): {name} should have shape [{C}], got {list(t._shape)}")
    y, mean, _, rstd = _normalized(input.reshape(N, group, C // group * HxW), (2,), eps)
    y = y.reshape(input._shape)
    bshape = (1, C) + (1,) * (input.ndim - 2)
    if weight is not None:
        y = ew.mul(y, weight.view(bshape))
    if bias is not None:
        y = ew.add(y, bias.view(bshape))
    return y, mean.reshape(N, group), rstd.reshape(N, group)


def native_batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                      running_var: Tensor | None, training: bool, momentum: float,
                      eps: float) -> tuple[Tensor, Tensor, Tensor]:  # fmt: skip
    """Same as torch.native_batch_norm: ``(batch_norm(...), save_mean, save_invstd)``. Training: the batch's
    per-channel mean and ``1 / sqrt(biased var + eps)`` (the running statistics are updated as ``batch_norm``
    does); evaluation: two empty tensors, as torch's CPU kernel. Only the first result is differentiable."""
    out = batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)
    with _grad_mode.no_grad():
        if not training:
            return out, empty_tensor((0,), input.dtype), empty_tensor((0,), input.dtype)
        _, mean, _, invstd = _normalized(input, (0,) + tuple(range(2, input.ndim)), eps)
    return out, mean.reshape(-1), invstd.reshape(-1)
