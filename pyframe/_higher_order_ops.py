"""torch's control-flow operators (``torch.cond``, ``torch._higher_order_ops.while_loop``, ``scan``, ``map``,
``associative_scan``), run eagerly: pyframe has no graph to lower them into, so each calls its functions as the
Python loop it stands for, and gradients flow through the tensors those calls make. Inputs and outputs may be
nested tuples, lists and dicts of tensors (pytrees), as torch's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyframe.ops.join import cat, stack
from pyframe.tensor import Tensor
from pyframe.utils._pytree import tree_flatten, tree_unflatten

__all__ = ["cond", "while_loop", "scan", "map", "associative_scan"]


def _truth(pred: Any, fn: str) -> bool:
    if isinstance(pred, Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"{fn}: the predicate must be a tensor of one element, got shape {list(pred.shape)}")
        return bool(pred.item())
    if isinstance(pred, (bool, int, float)):
        return bool(pred)
    raise RuntimeError(f"{fn}: the predicate must be a bool, a number or a one-element tensor, got "
                       f"{type(pred).__name__}")  # fmt: skip


def cond(pred: Any, true_fn: Callable, false_fn: Callable, operands: tuple | list = ()) -> Any:
    """Same as torch.cond: ``true_fn(*operands)`` if ``pred`` (a bool or one-element tensor) holds, else
    ``false_fn(*operands)``."""
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"cond: operands must be a tuple or list, got {type(operands).__name__}")
    return (true_fn if _truth(pred, "cond") else false_fn)(*operands)


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple) -> tuple:
    """Same as torch._higher_order_ops.while_loop: while ``cond_fn(*carried)`` holds, ``carried =
    body_fn(*carried)``; the final ``carried`` (a tuple, as ``carried_inputs``)."""
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError(f"while_loop: carried_inputs must be a tuple or list, got {type(carried_inputs).__name__}")
    carried = tuple(carried_inputs)
    while _truth(cond_fn(*carried), "while_loop"):
        out = body_fn(*carried)
        out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(out) != len(carried):
            raise RuntimeError(f"while_loop: body_fn returned {len(out)} values for {len(carried)} carried inputs")
        carried = out
    return carried


def _slices(xs: Any, dim: int, fn: str) -> tuple[list, Any, int]:
    leaves, spec = tree_flatten(xs)
    if not leaves or not all(isinstance(t, Tensor) for t in leaves):
        raise RuntimeError(f"{fn}: xs must be a tensor or a pytree of tensors")
    n = leaves[0].shape[dim]
    if any(t.shape[dim] != n for t in leaves):
        raise RuntimeError(f"{fn}: every tensor of xs needs the same size along dim {dim}, got "
                           f"{[t.shape[dim] for t in leaves]}")  # fmt: skip
    return leaves, spec, n


def _meta(leaves: list) -> list:
    return [(list(t.shape), str(t.dtype)) if isinstance(t, Tensor) else type(t).__name__ for t in leaves]


def scan(combine_fn: Callable, init: Any, xs: Any, *, dim: int = 0, reverse: bool = False) -> tuple[Any, Any]:
    """Same as torch._higher_order_ops.scan: ``carry, y = combine_fn(carry, x)`` for each slice ``x`` of ``xs``
    along ``dim`` (from the end with ``reverse``); the last carry, and the ``y`` stacked along ``dim`` in the
    slices' own order. The carry keeps ``init``'s shapes and dtypes, as torch requires."""
    leaves, spec, n = _slices(xs, dim, "scan")
    if n == 0:
        raise RuntimeError(f"scan: xs has no slices along dim {dim}")
    carry, ys = init, [None] * n
    init_leaves = tree_flatten(init)[0]
    for i in reversed(range(n)) if reverse else range(n):
        out = combine_fn(carry, tree_unflatten([t.select(dim, i) for t in leaves], spec))
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise RuntimeError("scan: combine_fn must return a pair (next carry, output)")
        carry, ys[i] = out
        got = tree_flatten(carry)[0]
        if len(got) != len(init_leaves) or any(
            not isinstance(a, Tensor) or a.shape != b.shape or a.dtype != b.dtype
            for a, b in zip(got, init_leaves, strict=False)
        ):
            raise RuntimeError(f"scan: the carry must keep init's shapes and dtypes (as torch's), init has "
                               f"{_meta(init_leaves)}, combine_fn returned {_meta(got)}")  # fmt: skip
    y_leaves = [tree_flatten(y)[0] for y in ys]
    y_spec = tree_flatten(ys[0])[1]
    return carry, tree_unflatten([stack([y[k] for y in y_leaves], dim) for k in range(len(y_leaves[0]))], y_spec)


def map(f: Callable, xs: Any, *args: Any) -> Any:  # noqa: A001 - torch's name
    """Same as torch._higher_order_ops.map: ``f(x, *args)`` for each slice ``x`` of ``xs`` along its first dim,
    the results stacked along a new first dim."""
    leaves, spec, n = _slices(xs, 0, "map")
    outs = [tree_flatten(f(tree_unflatten([t[i] for t in leaves], spec), *args)) for i in range(n)]
    if not outs:
        raise RuntimeError("map: xs has no slices along dim 0")
    return tree_unflatten([stack([o[0][k] for o in outs]) for k in range(len(outs[0][0]))], outs[0][1])


def associative_scan(
    combine_fn: Callable, xs: Any, dim: int, reverse: bool = False, combine_mode: str = "pointwise"
) -> Any:
    """Same as torch._higher_order_ops.associative_scan: the inclusive scan of ``xs`` along ``dim`` under
    ``combine_fn`` (``out[i] = combine_fn(out[i - 1], xs[i])``; from the end with ``reverse``), computed in order
    (``combine_mode`` is accepted: torch's ``"pointwise"`` kernel needs a GPU)."""
    if combine_mode not in ("pointwise", "generic"):
        raise ValueError(f"associative_scan: combine_mode must be 'pointwise' or 'generic', got {combine_mode!r}")
    leaves, spec, n = _slices(xs, dim, "associative_scan")
    order = list(reversed(range(n))) if reverse else list(range(n))
    outs: list = [None] * n
    acc = None
    for i in order:
        x = tree_unflatten([t.narrow(dim, i, 1) for t in leaves], spec)
        acc = x if acc is None else combine_fn(acc, x)
        outs[i] = tree_flatten(acc)[0]
    return tree_unflatten([cat([o[k] for o in outs], dim) for k in range(len(leaves))], spec)
