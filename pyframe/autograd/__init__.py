"""Reverse-mode autograd: ``Tensor.backward``, ``grad``, ``Function`` and ``gradcheck``."""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Callable, Sequence

from pyframe import _grad_mode
from pyframe._grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from pyframe.autograd import anomaly_mode, forward_ad, grad_mode, variable
from pyframe.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly
from pyframe.autograd.function import Function, FunctionCtx, once_differentiable
from pyframe.autograd.graph import AccumulateGrad, Node, _grad_accumulator, run_backward
from pyframe.autograd.variable import Variable
from pyframe.tensor import Tensor

__all__ = [
    "Function", "FunctionCtx", "Node", "backward", "grad", "gradcheck", "gradgradcheck", "GradcheckError", "no_grad",
    "enable_grad", "set_grad_enabled", "is_grad_enabled", "Variable", "detect_anomaly", "set_detect_anomaly",
    "inference_mode",
]  # fmt: skip


def _as_list(x) -> list:
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _root_grads(outputs: list, grad_outputs) -> list:
    grads = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"got {len(grads)} gradients for {len(outputs)} outputs")
    out = []
    for t, g in zip(outputs, grads, strict=True):
        if g is None:
            if t._numel != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs; got an output of shape {list(t._shape)}"
                )
            g = t.new_ones(t._shape)  # a method: the ops build on autograd.graph, so not imported here
        elif not isinstance(g, Tensor):
            raise TypeError(f"gradients must be tensors, got {type(g).__name__}")
        elif g._shape != t._shape:
            raise RuntimeError(f"gradient of shape {list(g._shape)} does not match the output's {list(t._shape)}")
        elif not g.dtype.is_floating_point:
            raise TypeError(
                f"gradients must be floating point tensors, got {g.dtype.name} for an output of dtype {t.dtype.name}"
            )
        elif g.dtype is not t.dtype:
            g = g.to(t.dtype)  # as torch: the seed takes the output's dtype, so the leaves get theirs
        out.append(g)
    return out


def _sparse_roots(outputs: list, grads: list) -> tuple[list, list]:
    """Sparse outputs replaced by their values, which carry autograd, and their gradients by the values'."""
    if all(type(t) is Tensor for t in outputs):
        return outputs, grads
    pairs = [(t._vals, t._values_cotangent(g)) if hasattr(t, "_vals") else (t, g)
             for t, g in zip(outputs, grads, strict=True)]  # fmt: skip
    return [t for t, _ in pairs], [g for _, g in pairs]


class _Calls(threading.local):
    """The backward calls running in this thread, innermost last: True for ``backward`` (gradients accumulate
    into ``.grad``), False for ``grad``. The reentrant checkpoint can only run inside the former."""

    def __init__(self) -> None:
        self.stack: list[bool] = []


_calls = _Calls()


def _checkpoint_valid() -> bool:
    """Whether the innermost running backward accumulates into leaves (torch's _is_checkpoint_valid)."""
    return not _calls.stack or _calls.stack[-1]


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None, create_graph: bool = False) -> None:
    """Same as torch.autograd.backward: accumulate gradients of ``tensors`` into leaves' ``.grad``."""
    outputs = _as_list(tensors)
    outputs, grads = _sparse_roots(outputs, _root_grads(outputs, grad_tensors))
    _calls.stack.append(True)
    try:
        run_backward(outputs, grads, create_graph if retain_graph is None else retain_graph, create_graph)
    finally:
        _calls.stack.pop()


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph: bool | None = None,
    create_graph: bool = False,
    only_inputs: bool = True,
    allow_unused: bool | None = None,
    is_grads_batched: bool = False,
    materialize_grads: bool = False,
) -> tuple:
    """Same as torch.autograd.grad: gradients of ``outputs`` with respect to ``inputs``,
    returned instead of accumulated. ``only_inputs`` is torch's deprecated flag (ignored, as torch);
    ``materialize_grads`` gives zeros instead of None for unused inputs; ``is_grads_batched`` is not
    supported."""
    if is_grads_batched:
        raise NotImplementedError("autograd.grad(): is_grads_batched=True (vmap over grad_outputs) is not supported")
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got "
                         "allow_unused=False.")  # fmt: skip
    outs, ins = _as_list(outputs), _as_list(inputs)
    outs, roots = _sparse_roots(outs, _root_grads(outs, grad_outputs))
    sparse_in = [hasattr(t, "_vals") for t in ins]  # a sparse input's gradient is its values'
    _calls.stack.append(False)
    try:
        res = run_backward(outs, roots, create_graph if retain_graph is None else retain_graph, create_graph,
                           inputs=[t._vals if s else t for t, s in zip(ins, sparse_in, strict=True)])  # fmt: skip
    finally:
        _calls.stack.pop()
    if any(sparse_in):
        res = [t._with_values(g) if s and g is not None else g for t, s, g in zip(ins, sparse_in, res, strict=True)]
    for i, g in enumerate(res):
        if g is None and not allow_unused:
            raise RuntimeError(
                f"One of the differentiated Tensors (input {i}) appears to not have been used in the graph. "
                "Set allow_unused=True if this is the desired behavior."
            )
    if materialize_grads:
        res = [t.new_zeros(t._shape) if g is None else g for t, g in zip(ins, res, strict=True)]
    return tuple(res)


# ---- Tensor methods --------------------------------------------------------------------


def tensor_backward(self: Tensor, gradient=None, retain_graph: bool | None = None, create_graph: bool = False,
                    inputs=None) -> None:  # fmt: skip
    """Same as torch.Tensor.backward."""
    if inputs is not None:
        for t, g in zip(
            _as_list(inputs), grad(self, inputs, gradient, retain_graph, create_graph, allow_unused=True), strict=True
        ):
            if g is None:
                continue
            if t.grad is None:  # a copy the tensor owns: g may be shared with another input, or an expanded view
                t.grad = g.clone() if create_graph else g.detach().clone()
            elif create_graph:
                t.grad = t.grad + g
            else:
                with no_grad():
                    t.grad.add_(g)
        return
    backward(self, gradient, retain_graph, create_graph)


def register_hook(self: Tensor, hook: Callable):
    """Same as torch.Tensor.register_hook: ``hook(grad)`` may return a replacement gradient."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    node = self.grad_fn if self.grad_fn is not None else _grad_accumulator(self)
    nr = self._output_nr

    def pre_hook(grads):
        g = grads[nr] if nr < len(grads) else None  # outputs after the last one with a gradient
        if g is None:
            return None
        new = hook(g)
        if new is None:
            return None
        if not isinstance(new, Tensor) or new._shape != g._shape:
            raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} must return None or a tensor of shape "
                               f"{list(g._shape)}")  # fmt: skip
        if new.dtype is not g.dtype:  # torch's: a hook may not change the gradient's dtype (no silent cast)
            raise RuntimeError(f"hook {getattr(hook, '__name__', hook)!r} has changed the type of value (was "
                               f"{g.dtype.name} got {new.dtype.name})")  # fmt: skip
        grads = list(grads)
        grads[nr] = new
        return grads

    handle = node.register_prehook(pre_hook)
    for key in [k for k, h in node.pre_hooks.items() if getattr(h, "_retains_grad", False)]:
        node.pre_hooks[key] = node.pre_hooks.pop(key)  # retain_grad's hook stays last: .grad is the hooked gradient
    return handle


def register_post_accumulate_grad_hook(self: Tensor, hook: Callable):
    """Same as torch.Tensor.register_post_accumulate_grad_hook: ``hook(tensor)`` runs after
    backward has accumulated into ``tensor.grad``; its return value is ignored."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    ref = weakref.ref(self)

    def post(grad_inputs, grad_outputs):
        t = ref()
        if t is not None:
            hook(t)

    return _grad_accumulator(self).register_hook(post)


def retain_grad(self: Tensor) -> None:
    """Same as torch.Tensor.retain_grad: keep ``.grad`` on a non-leaf tensor."""
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None or self._retains_grad:
        return
    self._retains_grad = True
    ref = weakref.ref(self)
    nr = self._output_nr

    def keep(grads):
        t = ref()
        if t is not None and nr < len(grads) and grads[nr] is not None:
            g = grads[nr].detach()
            t.grad = g.clone() if t.grad is None else t.grad + g

    keep._retains_grad = True  # register_hook keeps it after every tensor hook, as torch
    self.grad_fn.register_prehook(keep)


# ---- gradcheck -------------------------------------------------------------------------


def gradcheck(
    fn: Callable,
    inputs: Sequence[Tensor] | Tensor,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    *,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Same as torch.autograd.gradcheck: compares the analytic Jacobian (one backward per
    output element) with central finite differences. Inputs should be float64.

    pyframe always runs the full (slow-mode) comparison: ``fast_mode`` and the batched ``check_*`` options are
    accepted and leave it as it is; ``check_backward_ad=False`` skips the reverse-mode comparison and
    ``check_forward_ad=True`` adds the forward-mode one (one dual-tensor pass per input element).
    The finite differences write single elements of the inputs through a NumPy view of their memory (a testing
    utility's access, not an op's compute path)."""
    if not check_backward_ad and not check_forward_ad:
        return True
    inputs = tuple(_as_list(inputs))
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    for i in diff:
        if inputs[i].dtype.name != "float64":
            warnings.warn(f"gradcheck input {i} is {inputs[i].dtype.name}, not float64: expect false failures",
                          stacklevel=2)  # fmt: skip

    def outputs_of():
        return _differentiable(fn(*inputs))

    outs = outputs_of()
    for k, out in enumerate(outs):
        n_out = out._numel
        for i in diff:
            x = inputs[i]
            xa = x.detach().numpy()  # shares memory: perturb in place
            flat = xa.reshape(-1) if xa.flags.c_contiguous else None
            if flat is None:
                raise ValueError(f"gradcheck needs contiguous inputs; input {i} is not")
            numeric = [[0.0] * x._numel for _ in range(n_out)]
            with no_grad():
                for j in range(x._numel):
                    orig = flat[j]
                    flat[j] = orig + eps
                    plus = outputs_of()[k].detach().numpy().reshape(-1).copy()
                    flat[j] = orig - eps
                    minus = outputs_of()[k].detach().numpy().reshape(-1).copy()
                    flat[j] = orig
                    for r in range(n_out):
                        numeric[r][j] = (plus[r] - minus[r]) / (2 * eps)
            x._bump()
            if check_forward_ad and not _forward_matches(fn, inputs, k, i, numeric, atol, rtol, raise_exception):
                return False
            for r in range(n_out if check_backward_ad else 0):
                seed = out.new_zeros(out._shape)
                seed.detach().numpy().reshape(-1)[r] = 1.0
                with enable_grad():
                    out_r = outputs_of()[k]
                    (g,) = grad(out_r, [x], seed, allow_unused=True)
                analytic = [0.0] * x._numel if g is None else g.detach().numpy().reshape(-1).tolist()
                for j in range(x._numel):
                    a, n = analytic[j], numeric[r][j]
                    if abs(a - n) > atol + rtol * abs(n):
                        msg = (f"Jacobian mismatch for output {k} element {r} with respect to input {i} element {j}: "
                               f"numerical {n}, analytical {a}")  # fmt: skip
                        if raise_exception:
                            raise GradcheckError(msg)
                        return False
    return True


def _forward_matches(fn, inputs, k, i, numeric, atol, rtol, raise_exception) -> bool:
    """gradcheck's forward-mode comparison: column j of output k's Jacobian by input i, from a dual tensor with
    the unit tangent e_j, against the finite differences."""
    from pyframe.autograd import forward_ad

    x = inputs[i]
    for j in range(x._numel):
        e = x.detach().new_zeros(x._shape)
        e.view(-1)[j] = 1.0
        with forward_ad.dual_level():
            args = list(inputs)
            args[i] = forward_ad.make_dual(x, e)
            out = _differentiable(fn(*args))[k]
            t = forward_ad.unpack_dual(out).tangent
        column = [0.0] * out._numel if t is None else t.detach().reshape(-1).tolist()
        for r, a in enumerate(column):
            n = numeric[r][j]
            if abs(a - n) > atol + rtol * abs(n):
                msg = (f"Jacobian computed with forward mode mismatch for output {k} element {r} with respect to "
                       f"input {i} element {j}: numerical {n}, analytical {a}")  # fmt: skip
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def _differentiable(out) -> list:
    return [o for o in _as_list(out) if isinstance(o, Tensor) and o.dtype.is_floating_point]


def gradgradcheck(
    func: Callable,
    inputs: Sequence[Tensor] | Tensor,
    grad_outputs: Sequence[Tensor] | Tensor | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Same as torch.autograd.gradgradcheck: ``gradcheck`` of the first derivatives, i.e. of the function
    ``(inputs, grad_outputs) -> autograd.grad(func(inputs), inputs, grad_outputs, create_graph=True)``. Without
    ``grad_outputs``, random ones (uniform in [-1, 1), requiring grad) of the outputs' shapes and dtypes."""
    del gen_non_contig_grad_outputs, check_fwd_over_rev
    if not check_rev_over_rev:
        return True
    inputs = tuple(_as_list(inputs))
    if grad_outputs is None:
        outs = _differentiable(func(*inputs))
        grad_outputs = tuple(o.detach().new_empty(o.shape).uniform_(-1, 1).requires_grad_() for o in outs)
    grad_outputs = tuple(_as_list(grad_outputs))
    n_out = len(grad_outputs)
    diff_inputs = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]

    def first_derivatives(*args):
        ins, gouts = args[:-n_out] if n_out else args, args[-n_out:] if n_out else ()
        with enable_grad():  # also while gradcheck takes its finite differences under no_grad
            outputs = _differentiable(func(*ins))
            wrt = [ins[i] for i in diff_inputs]
            grads = grad(outputs, wrt, list(gouts), create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        first_derivatives, inputs + grad_outputs, eps, atol, rtol, raise_exception, nondet_tol=nondet_tol,
        check_undefined_grad=check_undefined_grad, check_grad_dtypes=check_grad_dtypes,
        check_batched_grad=check_batched_grad, fast_mode=fast_mode, masked=masked,
    )  # fmt: skip


class GradcheckError(RuntimeError):
    """Analytic and numeric gradients differ."""


_ = (AccumulateGrad, Node, _grad_mode, set_grad_enabled, is_grad_enabled, anomaly_mode, grad_mode, variable, forward_ad,
     once_differentiable)  # fmt: skip
