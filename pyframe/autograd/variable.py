"""Same as torch.autograd.variable: the legacy ``Variable`` (a tensor since torch 0.4) at torch's module path."""

from __future__ import annotations

from pyframe.tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, Tensor)  # as torch: every tensor is a Variable


class Variable(metaclass=_VariableMeta):
    """Same as torch.autograd.Variable (a tensor since torch 0.4): ``Variable(t)`` is ``t`` itself,
    ``Variable(t, requires_grad=True)`` a leaf sharing its memory that requires grad, and
    ``isinstance(t, Variable)`` is True for every tensor. ``volatile`` is accepted and ignored, as torch."""

    def __new__(cls, data: Tensor, requires_grad: bool = False, volatile: bool = False) -> Tensor:  # type: ignore[misc]
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        return data.detach().requires_grad_() if requires_grad else data
