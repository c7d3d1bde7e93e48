"""Custom differentiable ops: subclass ``Function`` with static ``forward`` and ``backward``.
Same as torch.autograd.Function."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pyframe import _grad_mode
from pyframe.autograd.forward_ad import tangent_of
from pyframe.autograd.graph import needs_grad, record
from pyframe.tensor import Tensor

__all__ = ["Function", "FunctionCtx", "InplaceFunction", "once_differentiable"]


class FunctionCtx:
    """What ``forward`` hands to ``backward``: saved tensors and any attributes set on it."""

    def __init__(self, needs_input_grad: tuple):
        self.needs_input_grad = needs_input_grad
        self._saved: tuple = ()
        self._saved_forward: tuple | None = None
        self._in_jvp = False
        self._non_differentiable: set = set()
        self.materialize_grads = True

    def save_for_backward(self, *tensors: Tensor | None) -> None:
        """Same as torch's ctx.save_for_backward: keeps tensors (or None) for ``backward``, read back as
        ``ctx.saved_tensors``.
        """
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save tensors or None, got {type(t).__name__}")
        self._saved = tensors

    def save_for_forward(self, *tensors: Tensor | None) -> None:
        """Same as torch's ctx.save_for_forward: keeps tensors (or None) for ``jvp``, read back there as
        ``ctx.saved_tensors``.
        """
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_forward can only save tensors or None, got {type(t).__name__}")
        self._saved_forward = tensors

    @property
    def saved_tensors(self) -> tuple:
        """Same as torch's ctx.saved_tensors: the tuple given to ``save_for_backward`` (in ``jvp``, the one given
        to ``save_for_forward`` if any)."""
        if self._in_jvp and self._saved_forward is not None:
            return self._saved_forward
        return self._saved

    def mark_non_differentiable(self, *tensors: Tensor) -> None:
        """Same as torch's ctx.mark_non_differentiable: outputs that get no gradient (indices, masks)."""
        self._non_differentiable.update(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """Same as torch's ctx.set_materialize_grads: with True (the default), gradients that did not reach an output
        are passed to ``backward`` as zeros; with False, as None.
        """
        self.materialize_grads = value


class Function:
    """Define ``forward(ctx, *args)`` (runs without recording) and ``backward(ctx, *grads)``
    returning one gradient (or None) per ``forward`` argument; call ``MyFn.apply(*args)``."""

    @staticmethod
    def forward(ctx: FunctionCtx, *args: Any) -> Any:
        """Same as torch.autograd.Function.forward: the computation, run under ``no_grad``; subclasses define it as a
        staticmethod taking ``ctx`` first.

        Save what ``backward`` needs with ``ctx.save_for_backward`` (or as attributes of ``ctx``).
        """
        raise NotImplementedError("subclasses of Function must implement forward")

    @staticmethod
    def backward(ctx: FunctionCtx, *grad_outputs: Tensor) -> Any:
        """Same as torch.autograd.Function.backward: the gradients of the inputs, one per ``forward`` argument (None for
        one that needs none), from one gradient per output; a staticmethod taking ``ctx`` first.
        """
        raise NotImplementedError("subclasses of Function must implement backward")

    @staticmethod
    def jvp(ctx: FunctionCtx, *grad_inputs: Tensor) -> Any:
        """Same as torch.autograd.Function.jvp: forward-mode AD, the tangents of the outputs (one per output) from
        one tangent per ``forward`` argument; a staticmethod taking ``ctx`` first. Needed only to use the Function
        inside ``forward_ad.dual_level``.
        """
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it with forward mode AD."
        )

    @staticmethod
    def setup_context(ctx: FunctionCtx, inputs: tuple, output: Any) -> None:
        """Same as torch.autograd.Function.setup_context: with it defined, ``forward`` takes the inputs only (no
        ``ctx``) and this saves what ``backward`` needs from ``inputs`` and ``output``.
        """
        raise NotImplementedError("setup_context is not defined")

    @classmethod
    def apply(cls, *args: Any) -> Any:
        """Same as torch.autograd.Function.apply: runs ``forward`` and, when an input requires grad, records a node
        whose
        backward is the class's ``backward``. Call this, never ``forward`` directly.
        """
        ctx = FunctionCtx(tuple(isinstance(a, Tensor) and a.requires_grad for a in args))
        separate = cls.setup_context is not Function.setup_context
        with _grad_mode.no_grad():
            out = cls.forward(*args) if separate else cls.forward(ctx, *args)
            if separate:
                cls.setup_context(ctx, args, out)
        jvp = None
        if any(tangent_of(a) is not None for a in args):
            if cls.jvp is Function.jvp:
                Function.jvp(ctx)  # raises torch's error

            def jvp(*tangents):
                ctx._in_jvp = True
                try:
                    with _grad_mode.no_grad():
                        return cls.jvp(ctx, *tangents)
                finally:
                    ctx._in_jvp = False

        if not needs_grad(*args):
            return out
        outs = out if isinstance(out, tuple) else (out,)
        for o in outs:
            if o is not None and not isinstance(o, Tensor):
                raise TypeError(f"{cls.__name__}.forward must return tensors, got {type(o).__name__}")
        # an output that is an input must not take over the input's history
        outs = tuple(o.detach() if any(o is a for a in args) else o for o in outs)
        differentiable = tuple(None if o is None or id(o) in ctx._non_differentiable else o for o in outs)
        n_args = len(args)

        def backward(*grads):
            grads += (None,) * (len(outs) - len(grads))  # one per output, also for outputs no gradient reached
            if ctx.materialize_grads:
                grads = tuple(
                    g if g is not None or o is None else _zeros_like(o) for g, o in zip(grads, outs, strict=False)
                )
            result = cls.backward(ctx, *grads)
            if not isinstance(result, tuple):
                result = (result,)
            if len(result) < n_args or any(r is not None for r in result[n_args:]):
                raise RuntimeError(
                    f"{cls.__name__}.backward returned {len(result)} gradients, expected {n_args} "
                    "(one per forward argument, None for non-tensors)"
                )
            for i, (g, a) in enumerate(zip(result, args, strict=False)):
                if g is not None and isinstance(a, Tensor) and g._shape != a._shape:
                    raise RuntimeError(
                        f"{cls.__name__}.backward returned a gradient of shape {list(g._shape)} for input {i} "
                        f"of shape {list(a._shape)}"
                    )
            return result[:n_args]

        saved = tuple(t for t in ctx._saved if t is not None)
        record(f"{cls.__name__}Backward", backward, args, differentiable, saved, jvp=jvp)
        return outs if isinstance(out, tuple) else outs[0]


class InplaceFunction(Function):
    """Same as torch.autograd.function.InplaceFunction: a ``Function`` whose instances carry an ``inplace``
    flag for its ``forward`` to read."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace


def once_differentiable(fn: Callable) -> Callable:
    """Same as torch.autograd.function.once_differentiable: decorates a ``Function.backward`` that can be
    differentiated only once. It runs under ``no_grad``; when grad mode is on (``create_graph=True``) and a
    gradient it received requires grad, its results get a node that raises if a second backward reaches it."""

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with _grad_mode.no_grad():
            outputs = fn(ctx, *args)
        if not (_grad_mode.enabled and needs_grad(*args)):
            return outputs
        seq = outputs if isinstance(outputs, tuple) else (outputs,)
        inputs = [a for a in args if isinstance(a, Tensor) and a.requires_grad]

        def refuse(*grads):
            raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")

        wrapped = []
        for o in seq:
            if isinstance(o, Tensor) and o.dtype.is_floating_point:
                o = o.detach()
                record("DelayedError", refuse, inputs, o)
            wrapped.append(o)
        return tuple(wrapped) if isinstance(outputs, tuple) else wrapped[0]

    return wrapper


def _zeros_like(t: Tensor) -> Tensor:
    return t.new_zeros(t._shape)  # a method: the ops build on autograd, so not imported here
