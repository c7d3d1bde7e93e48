"""LinearCrossEntropyLoss: a Linear layer and the cross-entropy loss of its logits in one criterion. Same as
torch.nn's."""

from __future__ import annotations

import math

from pyframe.nn import functional as F
from pyframe.nn.functional.linear_cross_entropy import LinearCrossEntropyOptions
from pyframe.nn.modules.linear import Linear
from pyframe.nn.modules.loss import _WeightedLoss
from pyframe.tensor import Tensor

__all__ = ["LinearCrossEntropyLoss", "LinearCrossEntropyOptions"]


class LinearCrossEntropyLoss(_WeightedLoss):
    """Same as torch.nn.LinearCrossEntropyLoss: ``F.linear_cross_entropy`` with a learnable ``linear`` layer of
    ``in_features`` inputs and ``num_classes * prod(out_features)`` outputs (stored flat, reshaped to
    ``(num_classes, *out_features, in_features)`` in forward), an optional class ``weight`` and torch's options
    (``ignore_index``, ``label_smoothing``, ``options`` for the chunked form)."""

    def __init__(self, in_features: int, num_classes: int, *, out_features: tuple = (), bias: bool = False,
                 device=None, dtype=None, reduction: str = "mean", weight: Tensor | None = None,
                 ignore_index: int | None = None, label_smoothing: float = 0.0,
                 options: LinearCrossEntropyOptions | None = None) -> None:  # fmt: skip
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise RuntimeError(f"expected weight shape to be {(num_classes,)}, got {tuple(weight.shape)}")
        if not 0.0 <= label_smoothing <= 1.0:
            raise RuntimeError(f"expected label_smoothing to be in range [0, 1], got {label_smoothing}")
        super().__init__(weight=weight, reduction=reduction)
        self.num_classes = num_classes
        self.out_features = tuple(out_features)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing
        self.linear = Linear(in_features, math.prod(self.out_features, start=num_classes), bias=bias, device=device,
                             dtype=dtype)  # fmt: skip
        self.options = options

    def forward(self, input: Tensor, target: Tensor) -> Tensor:  # noqa: A002 - torch's name
        w = self.linear.weight.reshape(self.num_classes, *self.out_features, self.linear.in_features)
        b = self.linear.bias.reshape(self.num_classes, *self.out_features) if self.linear.bias is not None else None
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
                                      options=self.options)  # fmt: skip

    def extra_repr(self) -> str:
        return (
            f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
            f"out_features={self.out_features}, bias={self.linear.bias is not None}, reduction={self.reduction}, "
            f"ignore_index={self.ignore_index}, label_smoothing={self.label_smoothing}, options={self.options}"
        )
