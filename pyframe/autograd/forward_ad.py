"""Same as torch.autograd.forward_ad: dual tensors (a primal with a tangent) whose tangents are carried eagerly
through each op, giving Jacobian-vector products in one forward pass.

pyframe computes each op's tangent from that op's own backward function: the backward is linear in the output
gradient ``u``, so the gradient of ``<backward(u), tangent_in>`` with respect to ``u`` is ``J @ tangent_in``
(the double-vjp trick, one op at a time). A custom ``Function`` that defines ``jvp`` uses it instead.

**pyframe**: a dual tensor takes part in autograd's graph (ops record on it, also when its primal does not
require grad), and tangents are carried only while grad mode is on; ops run under ``no_grad`` drop them.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import NamedTuple

import pyframe.autograd.graph as _graph
from pyframe import _grad_mode
from pyframe.tensor import Tensor

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"]

# the open level: {id(tensor): (weakref to it, tangent)}, or None outside ``dual_level``
_tangents: dict | None = None
_level = [-1]
_busy = [False]  # computing a tangent: the ops inside must not carry tangents themselves


class UnpackedDualTensor(NamedTuple):
    """Same as torch.autograd.forward_ad.UnpackedDualTensor: ``(primal, tangent)``; tangent None if there is none."""

    primal: Tensor
    tangent: Tensor | None


def enter_dual_level() -> int:
    """Same as torch.autograd.forward_ad.enter_dual_level: opens a dual level and returns its index; prefer
    ``dual_level``. Only one level may be open at a time, as torch."""
    global _tangents
    if _tangents is not None:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _tangents = {}
    _level[0] += 1
    _graph.forward_hook = _propagate
    return _level[0]


def exit_dual_level(*, level: int | None = None) -> None:
    """Same as torch.autograd.forward_ad.exit_dual_level: closes the open level; every tangent made in it is
    dropped (``unpack_dual`` then gives ``tangent=None``)."""
    global _tangents
    if _tangents is None or (level is not None and level != _level[0]):
        raise RuntimeError(f"Trying to exit a forward AD level that was not the last one created (level {level})")
    _tangents = None
    _graph.forward_hook = None


class dual_level:  # noqa: N801 - torch's name
    """Same as torch.autograd.forward_ad.dual_level: the context in which dual tensors are made and used; their
    tangents are dropped when it exits.

    Example::

        >>> with dual_level():
        ...     y = make_dual(x, v).sin()
        ...     jvp = unpack_dual(y).tangent  # cos(x) * v
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def _check_level(level: int | None, what: str) -> None:
    if _tangents is None:
        raise RuntimeError(f"{what}: no dual level is open; call it inside `with forward_ad.dual_level():`")
    if level is not None and level != _level[0]:
        raise RuntimeError(f"{what}: level {level} is not the open dual level {_level[0]}")


def tangent_of(t) -> Tensor | None:
    """The tangent ``t`` carries at the open level, or None."""
    if _tangents is None or not isinstance(t, Tensor):
        return None
    entry = _tangents.get(id(t))
    return entry[1] if entry is not None and entry[0]() is t else None


def _set(t: Tensor, tangent: Tensor) -> None:
    key = id(t)
    tangents = _tangents
    tangents[key] = (weakref.ref(t, lambda _r: tangents.pop(key, None)), tangent)


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """Same as torch.autograd.forward_ad.make_dual: a view of ``tensor`` carrying ``tangent`` (the direction of
    the Jacobian-vector product) at the open dual level.

    Args:
        tensor: the primal, floating point.
        tangent: a tensor of the primal's shape; used as is when it has the primal's dtype and strides, else
            copied into a tensor that has them.
        level: the level to use (default: the open one).
    """
    _check_level(level, "make_dual")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(f"make_dual expects two tensors, got {type(tensor).__name__} and {type(tangent).__name__}")
    if not tensor.dtype.is_floating_point:
        raise ValueError(f"make_dual: expected the primal to be floating point, but got {tensor.dtype}")
    if tangent.shape != tensor.shape:
        raise ValueError(
            "Trying to set a forward gradient that has a different size than that of the original Tensor, this is "
            f"not supported. Tensor is of size {list(tensor.shape)} while the given forward gradient is of size "
            f"{list(tangent.shape)}."
        )
    if tangent.dtype != tensor.dtype or tangent.stride() != tensor.stride():
        tangent = tangent.detach().to(tensor.dtype).contiguous().clone()
    with _grad_mode.enable_grad():
        dual = tensor.view_as(tensor) if tensor.requires_grad else tensor.detach().requires_grad_()
    _set(dual, tangent)
    return dual


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """Same as torch.autograd.forward_ad.unpack_dual: ``(primal, tangent)`` of ``tensor`` at the open level;
    ``tangent`` is None for a tensor that carries none (also once its level has exited)."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"unpack_dual expects a tensor, got {type(tensor).__name__}")
    tangent = tangent_of(tensor)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(tensor.view_as(tensor), tangent)


def _propagate(node, inputs, outputs, jvp: Callable | None) -> None:
    """Give ``outputs`` of the op ``node`` just recorded their tangents, from the tangents of ``inputs``."""
    if _busy[0]:
        return
    tans = [tangent_of(t) for t in inputs]
    if all(t is None for t in tans):
        return
    outs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    diff = [o if o is not None and o.dtype.is_floating_point else None for o in outs]
    _busy[0] = True
    try:
        with _grad_mode.enable_grad():
            if jvp is not None:
                got = jvp(*[t if t is not None or not isinstance(x, Tensor) else x.new_zeros(x.shape)
                            for t, x in zip(tans, inputs, strict=True)])  # fmt: skip
                got = list(got) if isinstance(got, (tuple, list)) else [got]
                if len(got) != len(outs):
                    raise RuntimeError(f"{node.name}: jvp returned {len(got)} tangents for {len(outs)} outputs")
                for o, g in zip(diff, got, strict=True):
                    if o is not None and g is not None:
                        _set(o, g.detach())
                return
            us = [o.new_zeros(o.shape).requires_grad_() if o is not None else None for o in diff]
            grads = node.fn(*us)
            grads = grads if isinstance(grads, tuple) else (grads,)
            terms = []
            for g, t in zip(grads, tans, strict=False):
                if g is None or t is None:
                    continue
                if not g.requires_grad:
                    raise RuntimeError(
                        f"forward-mode AD: {node.name} has no forward derivative (its backward is not differentiable)"
                    )
                terms.append((g * t).sum())
            live = [u for u in us if u is not None]
            res = [None] * len(live)
            if terms:
                total = terms[0]
                for term in terms[1:]:
                    total = total + term
                res = _graph.run_backward([total], [total.new_ones(total.shape)], False, False, inputs=live)
        it = iter(res)
        for o, u in zip(diff, us, strict=True):
            if u is not None:
                r = next(it)
                _set(o, r.detach() if r is not None else o.new_zeros(o.shape).detach())
    finally:
        _busy[0] = False
