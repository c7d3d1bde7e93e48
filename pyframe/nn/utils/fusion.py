"""Folding an eval-mode batch norm into the convolution or linear layer before it, for inference. Same as
torch.nn.utils.fusion (``fuse_conv_bn_eval``, ``fuse_conv_bn_weights``, ``fuse_linear_bn_eval``,
``fuse_linear_bn_weights``): ``bn(conv(x)) == fused(x)`` up to rounding, with the batch norm's running statistics."""

from __future__ import annotations

import copy

from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.ops import creation
from pyframe.tensor import Tensor

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _check_eval(layer: Module, bn: Module) -> None:
    if layer.training or bn.training:
        raise ValueError("Fusion only for eval! Call .eval() on both modules first (a training-mode batch norm "
                         "normalizes by the batch's statistics, which a fused layer cannot)")  # fmt: skip
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError("Fusion needs the batch norm's running statistics (track_running_stats=True)")


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """Same as torch.nn.utils.fuse_conv_bn_eval: a copy of ``conv`` whose weight and bias apply ``bn`` too (both in
    eval mode); ``transpose`` for a transposed convolution, whose output channels are the weight's dim 1."""
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)  # fmt: skip
    return fused


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                         bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:  # fmt: skip
    """Same as torch.nn.utils.fuse_conv_bn_weights: the fused ``(weight, bias)`` as Parameters in the
    convolution's dtypes: ``w * gamma / sqrt(var + eps)`` per output channel and
    ``(b - mean) * gamma / sqrt(var + eps) + beta`` (a missing bias, gamma or beta is 0, 1, 0)."""
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = creation.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = creation.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = creation.zeros_like(bn_rm) if bn_b is None else bn_b
    rsqrt = (bn_rv + bn_eps).rsqrt()
    shape = ([1, -1] if transpose else [-1, 1]) + [1] * (conv_w.ndim - 2)
    fused_w = (conv_w * (bn_w * rsqrt).reshape(shape)).to(w_dtype)
    fused_b = ((conv_b - bn_rm) * rsqrt * bn_w + bn_b).to(b_dtype)
    return Parameter(fused_w.detach(), conv_w.requires_grad), Parameter(fused_b.detach(), conv_b.requires_grad)


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """Same as torch.nn.utils.fuse_linear_bn_eval: a copy of ``linear`` that applies ``bn`` too (both in eval
    mode); the batch norm's features must be the linear layer's outputs, or 1."""
    _check_eval(linear, bn)
    if not (linear.out_features == bn.num_features or bn.num_features == 1):
        raise ValueError(f"To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
                         f"{linear.out_features} and {bn.num_features}")  # fmt: skip
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)  # fmt: skip
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor, bn_eps: float,
                           bn_w: Tensor, bn_b: Tensor) -> tuple[Parameter, Parameter]:  # fmt: skip
    """Same as torch.nn.utils.fuse_linear_bn_weights: the fused ``(weight, bias)`` as Parameters in the linear
    layer's dtypes (a missing linear bias is 0)."""
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    linear_b = creation.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * scale.unsqueeze(-1).to(w_dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(b_dtype)
    return Parameter(fused_w.detach(), linear_w.requires_grad), Parameter(fused_b.detach(), linear_b.requires_grad)
