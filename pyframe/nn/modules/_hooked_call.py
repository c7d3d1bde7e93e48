"""``Module.__call__`` when any hook exists: global then module forward pre-hooks, forward, forward hooks, and
the full backward hooks, which put the module boundary between two pass-through nodes of pyframe's own autograd."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from pyframe import _grad_mode, _hooks
from pyframe.autograd.graph import record
from pyframe.tensor import Tensor


def call_with_hooks(module: Any, args: tuple, kwargs: dict, glob: bool) -> Any:
    """``Module.__call__`` when any hook exists (``glob``: any global one). PyTorch's order: global then module
    forward pre-hooks, the input side of the backward hooks, forward, global then module forward hooks, the output
    side of the backward hooks. Each kind is read from a snapshot taken when its turn comes (as torch), so a hook
    may add or remove hooks. A global hook that raises gets a note naming it (``Registry.note``)."""
    result = None
    called = None  # keys of the always_call forward hooks that already ran
    try:
        bw_pre = _hooks.full_backward_pre.snapshot if glob else ()
        if module._backward_pre_hooks:
            bw_pre = [*bw_pre, *module._backward_pre_hooks.values()]
        bw = _hooks.full_backward.snapshot if glob else ()
        if module._backward_hooks:
            bw = [*bw, *module._backward_hooks.values()]
        pre = _hooks.forward_pre.snapshot if glob else ()
        n_glob = len(pre)
        if module._forward_pre_hooks:
            kw_pre = module._forward_pre_hooks_with_kwargs
            pre = [*pre, *((h, k in kw_pre) for k, h in module._forward_pre_hooks.items())]
        for i, (hook, with_kwargs) in enumerate(pre):
            try:
                out = hook(module, args, kwargs) if with_kwargs else hook(module, args)
            except Exception as e:
                if i < n_glob:
                    _hooks.forward_pre.note(e, i)
                raise
            if out is None:
                continue
            if with_kwargs:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError(f"forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {out}.")  # fmt: skip
                args, kwargs = out
            else:
                args = out if isinstance(out, tuple) else (out,)
        state = None
        if bw or bw_pre:
            state = BackwardHookState(module, bw, bw_pre)
            args = state.wrap_inputs(args)
        result = module.forward(*args, **kwargs)
        for key, hook, with_kwargs, always in _forward_hook_list(module, glob):
            if always:
                if called is None:
                    called = set()
                called.add(key)
            try:
                out = hook(module, args, kwargs, result) if with_kwargs else hook(module, args, result)
            except Exception as e:
                if type(key) is tuple:  # a global hook: ("global", index)
                    _hooks.forward.note(e, key[1])
                raise
            if out is not None:
                result = out
        if state is not None:
            result = state.wrap_outputs(result)
        return result
    except Exception:
        for key, hook, with_kwargs, always in _forward_hook_list(module, glob):
            if always and (called is None or key not in called):
                try:
                    out = hook(module, args, kwargs, result) if with_kwargs else hook(module, args, result)
                    if out is not None:
                        result = out
                except Exception as e:  # noqa: BLE001 - the forward's own error wins, as in torch
                    warnings.warn(
                        "module forward hook with ``always_call=True`` raised an exception that was silenced "
                        f"as another error was raised in forward: {e}",
                        stacklevel=2,
                    )
        raise


def _forward_hook_list(module: Any, glob: bool) -> list | tuple:
    """(id, hook, with_kwargs, always_call) for the global forward hooks, then the module's."""
    hooks = _hooks.forward.snapshot if glob else ()
    if module._forward_hooks:
        kw, always = module._forward_hooks_with_kwargs, module._forward_hooks_always_called
        hooks = [*hooks, *((k, h, k in kw, k in always) for k, h in module._forward_hooks.items())]
    return hooks


class BackwardHookState:
    """One module call's backward hooks: an identity node on the inputs that require grad and one
    on the outputs. The output node runs first in backward: it applies the pre-hooks to
    grad_output and keeps it; the input node then calls the full hooks with grad_input. Hooks are
    the ones registered at forward time (as torch)."""

    __slots__ = ("module", "hooks", "pre_hooks", "grad_outputs", "n_inputs", "input_idx")

    def __init__(self, module: Any, hooks: list, pre_hooks: list):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = self.input_idx = None
        self.n_inputs = 0

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
