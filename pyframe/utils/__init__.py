"""Utilities shared across pyframe: ``hooks`` (RemovableHandle) and ``data`` (as torch.utils.data, imported by
``import pyframe``), and ``swap_tensors``. No pyframe module is imported here, so the autograd engine can use
``hooks`` without the data loader."""

from __future__ import annotations

import copyreg
import weakref

from pyframe import _submodules

__all__ = ["swap_tensors"]

_POISONED = (
    "Trying to execute AccumulateGrad node that was poisoned by swap_tensors: this can happen when you run backward "
    "on a graph recorded before one of its leaves was swapped; swap tensors before running forward (or after both "
    "forward and backward)"
)


def _poison(grad_outputs):
    raise RuntimeError(_POISONED)


def swap_tensors(t1, t2) -> None:
    """Same as torch.utils.swap_tensors: swaps everything two tensors are (data, shape, dtype, ``requires_grad``,
    ``grad``, Python class and attributes), so that every reference to ``t1`` sees what ``t2`` was and the other way
    round (an optimizer holding a module's parameter keeps working when the parameter is swapped).

    Args:
        t1: a Tensor.
        t2: a Tensor.

    A tensor that some object refers to weakly (a hook registered with ``register_post_accumulate_grad_hook``,
    ``retain_grad``, a forward-AD dual) cannot be swapped (RuntimeError), nor can two tensors of classes with
    different slots. A graph recorded before the swap that reaches either tensor as a leaf raises if backward runs
    through it, as in torch.
    """
    from pyframe.tensor import Tensor

    for name, t in (("t1", t1), ("t2", t2)):
        if not isinstance(t, Tensor):
            raise TypeError(f"swap_tensors: {name} must be a Tensor, got {type(t).__name__}")
    if t1 is t2:
        return
    accs = []
    for name, t in (("t1", t1), ("t2", t2)):
        acc = t._grad_edge[0] if t._grad_edge is not None else None
        own = acc.leaf if acc is not None else None
        if any(r is not own for r in weakref.getweakrefs(t)):
            raise RuntimeError(f"Cannot swap {name} because it has weakref associated with it")
        accs.append(acc)
    t1_slots, t2_slots = set(copyreg._slotnames(type(t1))), set(copyreg._slotnames(type(t2)))
    if t1_slots != t2_slots:
        raise RuntimeError("Cannot swap t1 and t2 if they have different slots")
    has_dict = hasattr(t1, "__dict__"), hasattr(t2, "__dict__")
    if has_dict[0] != has_dict[1]:
        raise RuntimeError(
            f"Cannot swap t1 ({type(t1).__name__}) and t2 ({type(t2).__name__}): one has an instance __dict__ and "
            "the other does not"
        )
    t1.__class__, t2.__class__ = type(t2), type(t1)
    if has_dict[0]:
        t1.__dict__, t2.__dict__ = t2.__dict__, t1.__dict__
    for slot in t1_slots:
        v1, v2 = getattr(t1, slot, _MISSING), getattr(t2, slot, _MISSING)
        for t, v in ((t1, v2), (t2, v1)):
            if v is _MISSING:
                if hasattr(t, slot):
                    delattr(t, slot)
            else:
                setattr(t, slot, v)
    # an AccumulateGrad node follows its leaf object, which now holds the other tensor's data: graphs recorded
    # before the swap must not accumulate into it, and each tensor gets a new node at its next use
    for acc in accs:
        if acc is not None:
            acc.register_prehook(_poison)
    t1._grad_edge = t2._grad_edge = None


_MISSING = object()


# submodules not imported yet are attributes too (as torch's after `import torch`), imported on first use
__getattr__ = _submodules.lazy(__name__)
