"""Same as torch.autograd.functional: vjp, jvp, jacobian, hessian, vhp and hvp of a function of tensors, from
reverse-mode autograd (``autograd.grad``). Forward-mode products (``jvp``, ``hvp``) use the double-vjp trick:
the vjp with a cotangent ``u`` is linear in ``u``, and its gradient with respect to ``u`` against ``v`` is the
jvp, so ``create_graph`` gradients give them without a forward mode."""

from __future__ import annotations

from collections.abc import Callable

from pyframe import _grad_mode
from pyframe.autograd import grad as _grad
from pyframe.tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _tuple(x, what: str) -> tuple[tuple, bool]:
    is_tuple = isinstance(x, (tuple, list))
    items = tuple(x) if is_tuple else (x,)
    for t in items:
        if not isinstance(t, Tensor):
            raise TypeError(f"The {what} given to the function must be either a Tensor or a tuple of Tensors but "
                            f"the value at index 0 has type {type(t).__name__}.")  # fmt: skip
    return items, is_tuple


def _leaves(inputs: tuple, create_graph: bool) -> tuple:
    # a fresh leaf per input; with create_graph a differentiable alias, so outer graphs reach the caller's tensors
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_() for t in inputs)


def _grads(outputs: tuple, inputs: tuple, cotangents: tuple, create_graph: bool, strict: bool) -> tuple:
    outs = [o for o in outputs if o.requires_grad]
    cots = [c for o, c in zip(outputs, cotangents, strict=True) if o.requires_grad]
    if not outs:
        if strict:
            raise RuntimeError("The output of the user-provided function is independent of its inputs")
        return tuple(t.new_zeros(t.shape) for t in inputs)
    got = _grad(outs, inputs, cots, retain_graph=True, create_graph=create_graph, allow_unused=True)
    if strict and any(g is None for g in got):
        raise RuntimeError("The output of the user-provided function is independent of input "
                           f"{[g is None for g in got].index(True)}. This is not allowed in strict mode.")  # fmt: skip
    return tuple(t.new_zeros(t.shape) if g is None else g for t, g in zip(inputs, got, strict=True))


def _out(items: tuple, is_tuple: bool, create_graph: bool):
    items = items if create_graph else tuple(t.detach() for t in items)
    return items if is_tuple else items[0]


def _call(func: Callable, inputs: tuple, create_graph: bool) -> tuple[tuple, tuple, bool]:
    leaves = _leaves(inputs, create_graph)
    with _grad_mode.enable_grad():
        out = func(*leaves)
    outs, out_tuple = _tuple(out, "outputs of the user-provided function")
    return leaves, outs, out_tuple


def _ones_or(v, outs: tuple, what: str) -> tuple:
    if v is None:
        if any(o.numel() != 1 for o in outs):
            raise RuntimeError(f"The vector v can only be None if the {what} has a single element")
        return tuple(o.new_ones(o.shape) for o in outs)
    return _tuple(v, "v")[0]


def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Same as torch.autograd.functional.vjp: ``(func(inputs), v^T J)``."""
    ins, in_tuple = _tuple(inputs, "inputs")
    leaves, outs, out_tuple = _call(func, ins, True)
    cots = _ones_or(v, outs, "user-provided function")
    grads = _grads(outs, leaves, cots, create_graph, strict)
    return _out(outs, out_tuple, create_graph), _out(grads, in_tuple, create_graph)


def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Same as torch.autograd.functional.jvp: ``(func(inputs), J v)``, by the double-vjp trick."""
    ins, in_tuple = _tuple(inputs, "inputs")
    tangents = _ones_or(v, ins, "input")
    leaves, outs, out_tuple = _call(func, ins, True)
    with _grad_mode.enable_grad():
        us = tuple(o.new_zeros(o.shape).requires_grad_() for o in outs)
        g = _grads(outs, leaves, us, True, strict)
        pairs = [(gi, ti) for gi, ti in zip(g, tangents, strict=True) if gi.requires_grad]
        if not pairs:
            res = tuple(o.new_zeros(o.shape) for o in outs)
        else:
            res = _grads(tuple(p[0] for p in pairs), us, tuple(p[1] for p in pairs), create_graph, strict)
    return _out(outs, out_tuple, create_graph), _out(res, out_tuple, create_graph)


def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):  # fmt: skip
    """Same as torch.autograd.functional.jacobian: ``J[i][j]`` of output i by input j, each of shape
    ``output.shape + input.shape`` (one row at a time, by reverse mode, whatever ``strategy`` asks)."""
    from pyframe.ops import stack

    ins, in_tuple = _tuple(inputs, "inputs")
    leaves, outs, out_tuple = _call(func, ins, True)
    jac = []
    for o in outs:
        flat = o.reshape(-1)
        rows = [[] for _ in leaves]
        for k in range(flat.numel()):
            e = flat.new_zeros(flat.shape)
            e[k] = 1.0
            g = _grads((o,), leaves, (e.reshape(o.shape),), create_graph, strict)
            for j, gj in enumerate(g):
                rows[j].append(gj)
        per_input = tuple(
            (stack(r) if r else leaves[j].new_zeros((0, *leaves[j].shape))).reshape(*o.shape, *leaves[j].shape)
            for j, r in enumerate(rows)
        )
        jac.append(_out(per_input, in_tuple, create_graph))
    return tuple(jac) if out_tuple else jac[0]


def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):  # fmt: skip
    """Same as torch.autograd.functional.hessian: the jacobian of the gradient of a scalar function."""
    ins, in_tuple = _tuple(inputs, "inputs")

    def gradient(*xs):
        out = func(*xs)
        if not isinstance(out, Tensor) or out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with one element")
        g = _grads((out,), xs, (out.new_ones(out.shape),), True, strict)
        return g if in_tuple else g[0]

    return jacobian(gradient, inputs, create_graph=create_graph, strict=strict)


def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Same as torch.autograd.functional.vhp: ``(func(inputs), v^T H)`` of a scalar function."""
    ins, in_tuple = _tuple(inputs, "inputs")
    leaves, outs, _ = _call(func, ins, True)
    if len(outs) != 1 or outs[0].numel() != 1:
        raise RuntimeError("The function given to vhp should return a single Tensor with one element")
    vs = _ones_or(v, ins, "input")
    with _grad_mode.enable_grad():
        g = _grads(outs, leaves, (outs[0].new_ones(outs[0].shape),), True, strict)
        pairs = [(gi, vi) for gi, vi in zip(g, vs, strict=True) if gi.requires_grad]
        if pairs:
            res = _grads(tuple(p[0] for p in pairs), leaves, tuple(p[1] for p in pairs), create_graph, strict)
        else:
            res = tuple(t.new_zeros(t.shape) for t in leaves)
    return _out(outs, False, create_graph), _out(res, in_tuple, create_graph)


def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """Same as torch.autograd.functional.hvp: ``(func(inputs), H v)``; the Hessian is symmetric, so it is vhp's."""
    return vhp(func, inputs, v, create_graph, strict)
