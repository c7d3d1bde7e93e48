"""``pyframe.compile``; with ``backend=callable``, the graph handed to a user's backend as torch.compile hands it.

pyframe has no graph compiler of its own: with a backend name (``"inductor"``, ``"eager"``, ...) ``compile``
returns the model itself. A callable backend is a user's compiler (``def my_backend(gm, example_inputs)``,
often one that prints the graph and returns ``gm.forward``): on a call it gets the ``fx.GraphModule`` of the
model's forward, captured on that call's real inputs (Python control flow follows their values, as dynamo
traces it), and what it returns runs that call and the later ones. A capture holds for the Python values, the
tensors' shapes and dtypes and the module's training flag it was made with (torch's guards); a call that
differs captures again and calls the backend again, up to ``pyframe._dynamo.config.cache_size_limit``
graphs, after which the model runs eagerly. Code that cannot be captured as one graph runs eagerly (the
backend is not called), or raises with ``fullgraph=True``: torch would split it into several graphs.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from pyframe._dynamo_config import config
from pyframe._grad_mode import no_grad
from pyframe.nn.modules.module import Module
from pyframe.random import get_rng_state, set_rng_state
from pyframe.tensor import Tensor

__all__ = ["compile", "OptimizedModule"]


def _guard(args: tuple, training: bool | None) -> tuple | None:
    """What a capture depends on besides the graph: each argument's dtype and shape (tensors) or value; None when
    a value cannot be compared (then every call runs eagerly)."""
    key: list = [training]
    for a in args:
        if isinstance(a, Tensor):
            key.append(("t", a.dtype, tuple(a.shape), a.requires_grad))
        else:
            try:
                hash(a)
            except TypeError:
                return None
            key.append(("v", type(a), a))
    return tuple(key)


_SHAPE_METHODS = frozenset({"size", "dim", "numel", "nelement", "ndimension"})


def _shape_only(node: Any) -> bool:
    """Whether a value the capture turned into Python (``bool``, ``int``, ``len``) depends on shapes and Python
    values alone, which the guard covers; a tensor's data (``if x.sum() > 0``) is what torch breaks the graph on."""
    val = node.meta.get("val")
    if node.op == "call_method" and node.target in _SHAPE_METHODS:
        return True
    if node.op == "call_function" and node.target is getattr and node.args[1] in ("shape", "ndim"):
        return True
    if isinstance(val, Tensor):
        return False
    if node.op == "placeholder":
        return True  # a Python argument: the guard holds its value
    return all(_shape_only(a) for a in node.all_input_nodes)


def _positional(fn: Callable, signature: inspect.Signature, args: tuple, kwargs: dict) -> tuple:
    """The call's arguments in the order of ``fn``'s forward (or of ``fn``), defaults filled in: the graph's inputs.
    A call the signature does not take raises TypeError."""
    is_module = isinstance(fn, Module)
    bound = signature.bind(*((None,) if is_module else ()), *args, **kwargs)
    bound.apply_defaults()
    return tuple(bound.arguments.values())[1 if is_module else 0 :]


def _signature(fn: Callable) -> inspect.Signature:
    return inspect.signature(type(fn).forward if isinstance(fn, Module) else fn)


class _Captured:
    """The backend's compiled callables for ``fn`` (a Module or a function), one per guard."""

    def __init__(self, fn: Callable, backend: Callable, fullgraph: bool) -> None:
        self.fn, self.backend, self.fullgraph = fn, backend, fullgraph
        self.signature = _signature(fn)
        self.compiled: dict[tuple, Callable] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            flat = _positional(self.fn, self.signature, args, kwargs)
        except TypeError:
            return self.fn(*args, **kwargs)  # the model's own error message
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in self.signature.parameters.values()):
            return self.fn(*args, **kwargs)  # the graph's inputs are positional: such a signature runs eagerly
        key = _guard(flat, self.fn.training if isinstance(self.fn, Module) else None)
        if key is None:
            return self.fn(*args, **kwargs)
        run = self.compiled.get(key)
        if run is None:
            if len(self.compiled) >= config.cache_size_limit:
                return self.fn(*args, **kwargs)
            run = self.compiled[key] = self._capture(flat)
        return run(*flat)

    def _capture(self, flat: tuple) -> Callable:
        try:
            gm, breaks = _capture(self.fn, flat)
            if breaks:
                raise TypeError(breaks[0])
        except Exception as e:
            if self.fullgraph:
                raise RuntimeError(
                    f"compile(fullgraph=True): {getattr(self.fn, '__qualname__', type(self.fn).__name__)} could not be "
                    f"captured as one graph ({type(e).__name__}: {e}); torch would split it into several graphs"
                ) from e
            return lambda *a: self.fn(*a)
        compiled = self.backend(gm, [a for a in flat if isinstance(a, Tensor)])
        if not callable(compiled):
            raise TypeError(f"compile(): the backend returned {type(compiled).__name__}, expected a callable")
        return compiled


def _capture(fn: Callable, flat: tuple) -> tuple[Any, list[str]]:
    """``fn``'s graph captured on ``flat``, and where it branched on a tensor's value (torch's graph breaks). The
    capture runs the model once: its buffer updates (batch norm's running stats) and random draws are undone, so
    the call itself runs once, drawing what eager would."""
    from pyframe.fx.tracer import Tracer, capture

    tracer = Tracer()
    buffers = [(b, b.clone()) for b in fn.buffers()] if isinstance(fn, Module) else []
    rng = get_rng_state()
    try:
        with no_grad():
            gm = capture(fn, flat, tracer=tracer)
    finally:
        with no_grad():
            for b, saved in buffers:
                b.copy_(saved)
        set_rng_state(rng)
    breaks = [
        f"control flow on a tensor's value ({node.name}, {what})"
        for node, what in tracer.specialized
        if not (what == "len()" and isinstance(node.meta.get("val"), Tensor)) and not _shape_only(node)
    ]
    return gm, breaks


class ExplainOutput:
    """What ``torch._dynamo.explain(fn)(*args)`` returns: the graphs, their count and the breaks between them.
    pyframe does not split a graph at a break (such code runs eagerly), so with breaks ``graphs`` is empty."""

    def __init__(self, gm: Any, breaks: list[str]) -> None:
        self.graphs = [] if breaks else [gm]
        self.graph_count = len(breaks) + 1
        self.graph_break_count = len(breaks)
        self.break_reasons = [SimpleNamespace(reason=r, user_stack=[]) for r in breaks]
        ops = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
        self.op_count = len(ops)
        self.ops_per_graph = [[n.target for n in ops]] if not breaks else []
        self.out_guards: list = []
        self.compile_times = ""

    def __str__(self) -> str:
        lines = [f"Graph Count: {self.graph_count}", f"Graph Break Count: {self.graph_break_count}",
                 f"Op Count: {self.op_count}", "Break Reasons:"]  # fmt: skip
        for i, r in enumerate(self.break_reasons, 1):
            lines += [f"  Break Reason {i}:", f"    Reason: {r.reason}"]
        return "\n".join(lines) + "\n"


def explain(fn: Callable, *extra_args: Any, **extra_kwargs: Any) -> Callable[..., ExplainOutput]:
    """Same call as torch._dynamo.explain: ``explain(fn)(*args, **kwargs)`` captures ``fn`` on the arguments and
    reports its graph and where torch would break it."""

    def run(*args: Any, **kwargs: Any) -> ExplainOutput:
        return ExplainOutput(*_capture(fn, _positional(fn, _signature(fn), args, kwargs)))

    return run(*extra_args, **extra_kwargs) if extra_args or extra_kwargs else run


def _eager_backend(model: Callable) -> Callable:
    """The backend behind a backend name with ``fullgraph=True``: the capture has checked the graph; the model
    itself runs the calls."""
    return lambda gm, example_inputs: model


class OptimizedModule(Module):
    """What ``compile(module, backend=callable)`` returns, as torch's: the model is ``_orig_mod`` (so state_dict
    keys start with ``_orig_mod.``), attributes it lacks are the model's, and calls run the backend's graphs."""

    def __init__(self, mod: Module, backend: Callable, fullgraph: bool) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_captured", _Captured(mod, backend, fullgraph))
        self.training = mod.training

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._captured(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(super().__getattr__("_orig_mod"), name)


def compile(  # noqa: A001 - torch's name
    model: Any = None, *, fullgraph: bool = False, dynamic: bool | None = None, backend: Any = "inductor",
    mode: str | None = None, options: dict | None = None, disable: bool = False,
) -> Any:  # fmt: skip
    """Same call as torch.compile. pyframe has no graph compiler: with a backend name (the default
    ``"inductor"``, ``"eager"``, ...) or ``disable=True``, ``model`` (a Module or a function) is returned
    unchanged and runs eagerly with the same results; with ``fullgraph=True`` as well, each new kind of call is
    first captured to check it is one graph (torch's error otherwise), then runs eagerly. A callable
    ``backend(gm, example_inputs)`` is called with the ``fx.GraphModule`` of each call's forward, captured on
    its real inputs, and what it returns runs the call (a Module comes back as an ``OptimizedModule`` holding
    it as ``_orig_mod``). Without ``model`` it is a decorator with these options."""
    if model is None:
        return lambda fn: compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                  options=options, disable=disable)  # fmt: skip
    if not callable(model):
        raise TypeError(f"compile(): expected a Module or a function, got {type(model).__name__}")
    if disable or (isinstance(backend, str) and not fullgraph):
        return model
    if isinstance(backend, str):  # fullgraph=True: each new capture is checked to be one graph, then runs eagerly
        backend = _eager_backend(model)
    if not callable(backend):
        raise TypeError(f"compile(): backend must be a name or a callable, got {type(backend).__name__}")
    if isinstance(model, Module):
        return OptimizedModule(model, backend, fullgraph)
    captured = _Captured(model, backend, fullgraph)

    @functools.wraps(model)
    def compiled(*args: Any, **kwargs: Any) -> Any:
        return captured(*args, **kwargs)

    return compiled
