"""Activation checkpointing: same as torch.utils.checkpoint.

``checkpoint(fn, *args, use_reentrant=False)`` runs ``fn`` and keeps none of the tensors its ops save for
backward: the graph ``fn`` recorded is cut off behind its outputs, whose one node holds ``fn``, its arguments
and the random generator's state. Backward runs ``fn`` again on the same arguments (same random numbers, same
autocast state), takes the gradients through that fresh graph and passes them on to the arguments and to the
parameters ``fn`` used, so they equal those of the plain run. ``use_reentrant=True`` is torch's older form:
``fn`` runs under ``no_grad``, only tensor arguments get edges, and backward accumulates the parameters'
gradients into ``.grad`` directly (so ``autograd.grad`` through it is refused, as torch's).

pyframe's variant of ``use_reentrant=False`` finds the parameters from the graph ``fn`` records: a tensor that
requires grad and is computed outside ``fn`` but used inside should be passed as an argument (it is then an
edge of the checkpoint; used from a closure, backward differentiates through its history from inside).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from typing import Any

from pyframe import _grad_mode
from pyframe import autograd as _autograd
from pyframe.amp import autocast_mode as _amp
from pyframe.autograd.graph import AccumulateGrad, record
from pyframe.ops import random as _random
from pyframe.tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "noop_context_fn",
           "detach_variable", "check_backward_validity"]  # fmt: skip


class CheckpointError(RuntimeError):
    """Same as torch.utils.checkpoint.CheckpointError: the recomputed forward did not match the first one."""


def noop_context_fn() -> tuple:
    """Same as torch.utils.checkpoint.noop_context_fn: two contexts that do nothing (``context_fn``'s default)."""
    import contextlib

    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs: tuple) -> tuple:
    """Same as torch.utils.checkpoint.detach_variable: each tensor detached, keeping its ``requires_grad``.

    Raises:
        RuntimeError: ``inputs`` is not a tuple.
    """
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    return tuple(_detached(x) for x in inputs)


def check_backward_validity(inputs: Iterable[Any]) -> None:
    """Same as torch.utils.checkpoint.check_backward_validity: warns when no tensor input requires grad."""
    if not any(isinstance(x, Tensor) and x.requires_grad for x in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def _detached(x: Any) -> Any:
    if not isinstance(x, Tensor):
        return x
    d = x.detach()
    return d.requires_grad_(x.requires_grad) if x.dtype.is_floating_point else d


def _tensors_of(out: Any) -> list:
    """The tensors of an output: itself, or those of a (nested) list, tuple or dict, in order."""
    if isinstance(out, Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for v in out for t in _tensors_of(v)]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _tensors_of(v)]
    return []


def _replace(out: Any, swap: dict) -> Any:
    if isinstance(out, Tensor):
        return swap.get(id(out), out)
    if isinstance(out, (list, tuple)):
        items = [_replace(v, swap) for v in out]
        return type(out)(*items) if hasattr(out, "_fields") else type(out)(items)
    if isinstance(out, dict):
        return type(out)((k, _replace(v, swap)) for k, v in out.items())
    return out


class _Replay:
    """What recomputation needs: the generator state and the autocast state at the first forward."""

    def __init__(self, preserve_rng_state: bool):
        self.rng = _random.get_rng_state() if preserve_rng_state else None
        self.autocast = (
            _amp.is_autocast_enabled("cpu"),
            _amp.get_autocast_dtype("cpu"),
            _amp.is_autocast_cache_enabled(),
        )

    def run(self, fn: Callable, args: tuple, kwargs: dict) -> Any:
        enabled, dtype, cache = self.autocast
        state = _random.get_rng_state()
        try:
            if self.rng is not None:
                _random.set_rng_state(self.rng)
            with _grad_mode.enable_grad(), _amp.autocast("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache):
                return fn(*args, **kwargs)
        finally:
            if self.rng is not None:
                _random.set_rng_state(state)


def _boundary(outputs: list, detached_args: list) -> tuple[list, list]:
    """Walk ``fn``'s recorded graph down from its outputs: the arguments (by position) and the other leaves
    (parameters) it reached."""
    arg_pos = {id(a): i for i, a in enumerate(detached_args) if isinstance(a, Tensor)}
    used_args, params, seen_params = set(), [], set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    seen = {id(n) for n in stack}
    while stack:
        node = stack.pop()
        for e in node.next:
            if e is None or id(e[0]) in seen:
                continue
            child = e[0]
            seen.add(id(child))
            if isinstance(child, AccumulateGrad):
                leaf = child.leaf()
                if leaf is None:
                    continue
                if id(leaf) in arg_pos:
                    used_args.add(arg_pos[id(leaf)])
                elif id(leaf) not in seen_params:
                    seen_params.add(id(leaf))
                    params.append(leaf)
            else:
                stack.append(child)
    return sorted(used_args), params


def _check_same(first: list, again: list) -> None:
    if len(first) != len(again):
        raise CheckpointError(
            f"torch.utils.checkpoint: the recomputed forward returned {len(again)} tensors, the first forward "
            f"{len(first)}; the function must be deterministic in what it returns"
        )
    for i, (a, b) in enumerate(zip(first, again, strict=True)):
        if a[0] != tuple(b.shape) or a[1] != b.dtype:
            raise CheckpointError(
                f"torch.utils.checkpoint: recomputed output {i} has shape {list(b.shape)} and dtype {b.dtype}, "
                f"the first forward gave shape {list(a[0])} and dtype {a[1]}; the function must compute the same "
                "tensors when it runs again"
            )


def _checkpoint_graph(function: Callable, preserve: bool, determinism_check: str, args: tuple, kwargs: dict) -> Any:
    if not _grad_mode.enabled:  # nothing is recorded, so nothing is kept
        return function(*args, **kwargs)
    replay = _Replay(preserve)
    detached = [_detached(a) for a in args]
    out = function(*detached, **kwargs)
    back_to_args = {id(d): a for d, a in zip(detached, args, strict=True) if isinstance(d, Tensor) and d is not a}
    tensors, seen = [], set()
    for t in _tensors_of(out):
        if id(t) not in seen and id(t) not in back_to_args and t.grad_fn is not None and t.dtype.is_floating_point \
                and not isinstance(t.grad_fn, AccumulateGrad):  # fmt: skip
            seen.add(id(t))
            tensors.append(t)
    out = _replace(out, back_to_args)  # an argument returned as it is stays the caller's tensor
    if not tensors:
        return out
    used_args, params = _boundary(tensors, detached)
    used_args = [i for i in used_args if args[i].requires_grad]
    meta = [(tuple(t.shape), t.dtype) for t in tensors]
    n_out = len(tensors)

    def backward(*grads):
        grads = grads + (None,) * (n_out - len(grads))
        again = [_detached(a) for a in args]
        out2 = replay.run(function, tuple(again), kwargs)
        fresh = [t for t in _tensors_of(out2) if t.grad_fn is not None and t.dtype.is_floating_point
                 and not isinstance(t.grad_fn, AccumulateGrad)]  # fmt: skip
        if determinism_check != "none":
            _check_same(meta, fresh)
        pairs = [(o, g) for o, g in zip(fresh, grads, strict=False) if g is not None and o.requires_grad]
        wrt = [again[i] for i in used_args] + params
        if not pairs or not wrt:
            return (None,) * len(wrt)
        return _autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs], allow_unused=True,
                              create_graph=_grad_mode.enabled)  # fmt: skip

    record("CheckpointBackward", backward, [args[i] for i in used_args] + params, tensors)
    return out


class CheckpointFunction(_autograd.Function):
    """Same as torch.utils.checkpoint.CheckpointFunction: the reentrant checkpoint (``use_reentrant=True``)."""

    @staticmethod
    def forward(ctx, run_function: Callable, preserve_rng_state: bool, *args: Any) -> Any:
        """Runs ``run_function(*args)`` without recording, keeping what the recomputation needs."""
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.replay = _Replay(preserve_rng_state)
        ctx.inputs = args
        return run_function(*args)

    @staticmethod
    def backward(ctx, *grads: Any) -> tuple:
        """Recomputes the forward with grad, backpropagates ``grads`` through it (parameters' gradients go to
        their ``.grad``) and returns the arguments' gradients."""
        if not _autograd._checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or passing an `inputs` "
                "parameter to .backward(). To resolve this error, you can either set use_reentrant=False, or call "
                ".backward() without passing the `inputs` argument."
            )
        inputs = [_detached(a) for a in ctx.inputs]
        out = ctx.replay.run(ctx.run_function, tuple(inputs), {})
        outs = out if isinstance(out, tuple) else (out,)
        pairs = [(o, g) for o, g in zip(outs, grads, strict=False)
                 if isinstance(o, Tensor) and o.requires_grad and g is not None]  # fmt: skip
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _autograd.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *(a.grad if isinstance(a, Tensor) else None for a in inputs))


def checkpoint(
    function: Callable,
    *args: Any,
    use_reentrant: bool | None = None,
    context_fn: Callable = noop_context_fn,
    determinism_check: str = "default",
    debug: bool = False,
    **kwargs: Any,
) -> Any:
    """Same as torch.utils.checkpoint.checkpoint: ``function(*args, **kwargs)`` without keeping its activations;
    backward recomputes them.

    ``use_reentrant`` should be given (without it torch's warning is raised and the reentrant variant used, as
    torch 2.13); ``preserve_rng_state=False`` (a keyword) lets the recomputation draw new random numbers;
    ``determinism_check="none"`` skips the check that the recomputed outputs have the first ones' shapes and
    dtypes. ``context_fn`` and ``debug`` are accepted with ``use_reentrant=False`` only, and not used.

    Raises:
        ValueError: keyword arguments for ``function`` (or ``context_fn``/``debug``) with ``use_reentrant=True``.
        CheckpointError: the recomputation gave outputs of other shapes or dtypes.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. Starting in PyTorch "
            "2.9, calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass use_reentrant=True. "
            "Refer to docs for more details on the differences between the two variants.", stacklevel=2,
        )  # fmt: skip
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if use_reentrant:
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    return _checkpoint_graph(function, preserve, determinism_check, args, kwargs)


def checkpoint_sequential(functions: Any, segments: int, input: Tensor, use_reentrant: bool | None = None,  # noqa: A002
                          **kwargs: Any) -> Tensor:  # fmt: skip
    """Same as torch.utils.checkpoint.checkpoint_sequential: ``functions`` (a ``Sequential`` or a list of
    callables) split into ``segments`` runs of equal length, each but the last checkpointed.

    Raises:
        ValueError: keyword arguments other than ``preserve_rng_state``.
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default behavior, you can pass use_reentrant=True. "
            "Refer to docs for more details on the differences between the two variants.", stacklevel=2,
        )  # fmt: skip
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from pyframe.nn.modules.container import Sequential

    if isinstance(functions, Sequential):
        functions = list(functions.children())

    def run(start: int, end: int) -> Callable:
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x

        return forward

    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
