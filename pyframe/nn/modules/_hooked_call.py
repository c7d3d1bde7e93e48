"""Full backward hooks of one Module call: the module boundary as two pass-through nodes of
pyframe's own autograd (see ``Module._call_impl``)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from pyframe import _grad_mode
from pyframe.autograd.graph import record
from pyframe.tensor import Tensor


class BackwardHookState:
    """One module call's backward hooks: an identity node on the inputs that require grad and one
    on the outputs. The output node runs first in backward: it applies the pre-hooks to
    grad_output and keeps it; the input node then calls the full hooks with grad_input. Hooks are
    the ones registered at forward time (as torch)."""

    __slots__ = ("module", "hooks", "pre_hooks", "grad_outputs", "n_inputs", "input_idx")

    def __init__(self, module: Any, hooks: list, pre_hooks: list):
        self.module = module
        self.hooks = hooks
        self.pre_hooks = pre_hooks
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_idx = None

    def wrap_inputs(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        idx = _grad_indices(args)
        if not idx:
            return args
        self.input_idx = idx
        aliases = _alias_through(idx, args, self._input_backward)
        out = list(args)
        for i, a in zip(idx, aliases, strict=True):
            out[i] = a
        return tuple(out)

    def _input_backward(self, idx: list, grads: tuple) -> tuple:
        if self.grad_outputs is None:  # gradient reached the inputs without passing the outputs
            return grads
        grad_input = _pack(idx, grads, self.n_inputs)
        for hook in self.hooks:
            out = hook(self.module, grad_input, self.grad_outputs)
            if out is None:
                continue
            out = _check_len(out, len(grad_input), "Backward hook", "grad_input")
            grad_input = out
        self.grad_outputs = None
        return tuple(grad_input[i] for i in idx)

    def wrap_outputs(self, result: Any) -> Any:
        if isinstance(result, Tensor):
            items, rebuild = (result,), lambda xs: xs[0]
        elif isinstance(result, (tuple, list)):
            items = tuple(result)
            cls = type(result)
            rebuild = cls if cls in (tuple, list) else (lambda xs: cls(*xs))
        elif isinstance(result, dict):
            keys = list(result)
            items = tuple(result.values())
            rebuild = lambda xs: type(result)(zip(keys, xs, strict=True))  # noqa: E731
        else:
            warnings.warn(
                f"For backward hooks to be called, module output should be a Tensor or a tuple, list or dict of "
                f"Tensors but received {type(result)}",
                stacklevel=3,
            )
            return result
        idx = _grad_indices(items)
        if not idx:
            return result
        n = len(items)

        def backward(idx: list, grads: tuple) -> tuple:
            grad_output = _pack(idx, grads, n)
            for hook in self.pre_hooks:
                out = hook(self.module, grad_output)
                if out is None:
                    continue
                grad_output = _check_len(out, n, "Backward pre hook", "grad_output")
            self.grad_outputs = grad_output
            if self.input_idx is None:  # no input needs a gradient: the full hooks fire from here
                grad_input = (None,) * self.n_inputs
                for hook in self.hooks:
                    out = hook(self.module, grad_input, grad_output)
                    if out is not None and not (isinstance(out, (tuple, list)) and all(g is None for g in out)):
                        raise RuntimeError(
                            "Backward hook for Modules where no input requires gradient should always return None "
                            "or None for all gradients."
                        )
                self.grad_outputs = None
            return tuple(grad_output[i] for i in idx)

        aliases = _alias_through(idx, items, backward)
        out = list(items)
        for i, a in zip(idx, aliases, strict=True):
            out[i] = a
        return rebuild(out)


def _grad_indices(items) -> list:
    if not _grad_mode.enabled:
        return []
    return [i for i, t in enumerate(items) if isinstance(t, Tensor) and t.requires_grad]


def _alias_through(idx: list, items, backward: Callable) -> list:
    """Aliases (same memory, no copy) of ``items[idx]``, recorded as the outputs of one
    pass-through node whose backward is ``backward(idx, grads)``."""
    ins = [items[i] for i in idx]
    outs = [_alias(t) for t in ins]
    n = len(outs)

    def fn(*grads):
        if len(grads) < n:  # the engine passes only up to the last output that received a gradient
            grads = grads + (None,) * (n - len(grads))
        return backward(idx, grads)

    record("BackwardHookFunctionBackward", fn, ins, outs)
    return outs


def _alias(t: Tensor) -> Tensor:
    """``t``'s memory under a new tensor. An in-place op on it is legal exactly when it is on
    ``t``: a fresh op output stays free to modify, a view stays a view of its base, and a leaf
    that requires grad stays protected (the alias counts as its view)."""
    a = t._view(t._shape, t._strides)
    a._base = t._base if t._base is not None else (t if t.grad_fn is None else None)
    return a


def _pack(idx: list, values: tuple, n: int) -> tuple:
    res = [None] * n
    for i, v in zip(idx, values, strict=False):
        res[i] = v
    return tuple(res)


def _check_len(out: Any, expected: int, what: str, name: str) -> tuple:
    if not isinstance(out, (tuple, list)):
        raise RuntimeError(f"{what} must return None or a tuple of {name}, got {type(out).__name__}")
    if len(out) != expected:
        raise RuntimeError(f"{what} returned an invalid number of {name}, got {len(out)}, but expected {expected}")
    return tuple(out)
