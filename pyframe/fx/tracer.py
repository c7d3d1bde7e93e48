"""``Tracer`` and ``symbolic_trace``: run a module's ``forward`` on Proxies and keep the graph it records.
Same as torch.fx's (``is_leaf_module``, ``call_module``, ``create_arg``, ``concrete_args``, ``wrap``), plus
``capture``: the same trace on real example inputs, every node carrying the value it computed, for
consumers that must follow value-dependent control flow (the ONNX exporter)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

from pyframe.fx import proxy as _patching
from pyframe.fx.graph import Graph
from pyframe.fx.node import Node, map_aggregate
from pyframe.fx.proxy import _NO_VALUE, _NOT_STATIC, GraphAppendingTracer, Proxy, TraceError, _Patcher
from pyframe.nn.modules.container import ModuleDict, ModuleList, Sequential
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.tensor import Tensor

__all__ = ["Tracer", "symbolic_trace", "wrap", "capture", "PH"]

PH = object()  # a concrete_args value meaning "this argument stays a placeholder"

_BASE_TYPES = (str, int, float, bool, complex, type(None), type(Ellipsis), type, range)

# a concrete trace keeps these as Python values: an exported graph is specialised to them (shapes stay nodes)
_STATIC_ATTRS = frozenset(("dtype", "ndim", "device", "requires_grad", "is_cuda", "is_cpu", "layout", "is_leaf",
                           "is_sparse", "is_quantized", "is_nested", "is_meta"))  # fmt: skip
_STATIC_METHODS = frozenset(("dim", "ndimension", "is_floating_point", "is_contiguous", "get_device", "is_complex",
                             "element_size", "type"))  # fmt: skip


def wrap(fn_or_name: str | Callable) -> str | Callable:
    """Same as torch.fx.wrap: called at module level, makes the named global function of the calling module a
    single ``call_function`` node when traced, instead of being traced through."""
    frame = inspect.currentframe().f_back
    name = fn_or_name if isinstance(fn_or_name, str) else fn_or_name.__name__
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    _patching._user_wrapped.append((frame.f_globals, name))
    return fn_or_name


class Tracer(GraphAppendingTracer):
    """Same as torch.fx.Tracer. Override ``is_leaf_module`` to choose which modules stay one ``call_module`` node
    (by default pyframe.nn's own layers, not the containers)."""

    def __init__(self, autowrap_modules: tuple = (math,), autowrap_functions: tuple = (),
                 param_shapes_constant: bool = False) -> None:  # fmt: skip
        super().__init__(Graph())
        self.autowrap_math = math in autowrap_modules
        self.autowrap_functions = tuple(autowrap_functions)
        self.param_shapes_constant = param_shapes_constant
        self.root = Module()
        self.concrete = False
        self._evaluating = 0
        self._scope: list[str] = []
        self._attr_nodes: dict[str, Node] = {}
        self._constants: list[tuple[str, Tensor]] = []
        self._module_paths: dict[int, str] = {}
        self._tensor_paths: dict[int, str] = {}
        # in a concrete trace, the nodes whose value became a Python value (control flow, int(), ...)
        self.specialized: list[tuple[Node, str]] = []

    # ---- what becomes a node --------------------------------------------------------------------------
    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        """Same as torch.fx.Tracer.is_leaf_module: whether ``m`` stays one ``call_module`` node instead of being traced
        through. Default: the layers of pyframe.nn, but not the containers (Sequential, ModuleList, ModuleDict).
        """
        return type(m).__module__.startswith("pyframe.nn") and not isinstance(m, (Sequential, ModuleList, ModuleDict))

    def path_of_module(self, mod: Module) -> str:
        """Same as torch.fx.Tracer.path_of_module: the qualified name of ``mod`` in the traced module (NameError if it
        is not a submodule of it).
        """
        try:
            return self._module_paths[id(mod)]
        except KeyError:
            raise NameError(f"module {type(mod).__name__} is not a submodule of the traced module") from None

    def call_module(self, m: Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """Same as torch.fx.Tracer.call_module: a ``call_module`` node for a leaf module, else ``forward`` traced
        through (its nodes record the module's path in ``meta["module_path"]``).
        """
        name = self.path_of_module(m)
        if not self.is_leaf_module(m, name):
            self._scope.append(name)
            try:
                return forward(*args, **kwargs)
            finally:
                self._scope.pop()
        return self.create_proxy("call_module", name, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """Same as torch.fx.Tracer.getattr: a parameter of the traced module becomes a ``get_attr`` node (one per
        parameter); other attributes are returned as they are.
        """
        if isinstance(attr_val, Parameter):
            path = self._tensor_paths.get(id(attr_val))
            if path is not None:
                if path not in parameter_proxy_cache:
                    parameter_proxy_cache[path] = self.create_proxy("get_attr", path, (), {})
                return parameter_proxy_cache[path]
        return attr_val

    def create_arg(self, a: Any) -> Any:
        """Same as torch.fx.Tracer.create_arg: an argument as a node argument: Proxies become their nodes, tensors
        ``get_attr`` nodes (a tensor made during the trace is kept on the root as ``_tensor_constantN``, as torch.fx);
        a module is refused (TraceError).
        """

        def arg(x):
            if isinstance(x, Proxy):
                return x.node
            if isinstance(x, Tensor):
                return self._tensor_node(x)
            if isinstance(x, Module):
                raise TraceError(f"a module ({type(x).__name__}) cannot be an argument of a traced operation")
            return x

        return map_aggregate(a, arg)

    def _tensor_node(self, t: Tensor) -> Node:
        path = self._tensor_paths.get(id(t))
        if path is None:  # a tensor made during the trace: kept on the root as a constant, as torch.fx does
            i = 0
            while hasattr(self.root, f"_tensor_constant{i}"):
                i += 1
            path = f"_tensor_constant{i}"
            self.root.__dict__[path] = t
            self._tensor_paths[id(t)] = path
            self._constants.append((path, t))  # keep it alive: paths are by id
        node = self._attr_nodes.get(path)
        if node is None:
            node = self._attr_nodes[path] = self.create_node("get_attr", path, (), {})
            if self.concrete:
                node.meta["val"] = t
        return node

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None) -> Node:
        """Same as torch.fx.Tracer.create_node: inserts a node in the graph, recording the enclosing module's path in
        ``meta["module_path"]``.
        """
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        if self._scope and kind not in ("placeholder", "output"):
            node.meta["module_path"] = self._scope[-1]
        if kind == "call_module":
            node.meta["module_path"] = target
        return node

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None) -> Proxy:
        """Same as torch.fx.Tracer.create_proxy: a new node wrapped in a Proxy; in a concrete trace (``capture``) the
        node's ``meta["val"]`` is the value it computed.
        """
        node = self.create_node(kind, target, self.create_arg(tuple(args)), self.create_arg(dict(kwargs)), name,
                                type_expr)  # fmt: skip
        if self.concrete and kind != "output":
            node.meta["val"] = self._evaluate(node, args, kwargs)
        return self.proxy(node)

    # ---- the trace ---------------------------------------------------------------------------------------
    def trace(self, root: Module | Callable, concrete_args: dict[str, Any] | None = None) -> Graph:
        """The graph of ``root``'s forward (or of the function ``root``). ``concrete_args`` fixes arguments
        to values (the graph specialises to them; their placeholders keep the value as a default)."""
        return self._trace(root, concrete_args or {}, None)

    def _trace(self, root, concrete_args: dict, example: tuple | None) -> Graph:
        self.graph = Graph(tracer_cls=type(self))
        if isinstance(root, Module):
            self.root = root
            fn = type(root).forward
            self_arg: tuple = (root,)
        else:
            self.root = Module()
            fn = root
            self_arg = ()
        self.concrete = example is not None
        self._scope: list[str] = []
        self._attr_nodes: dict[str, Node] = {}
        self._constants: list[tuple[str, Tensor]] = []
        self._module_paths = {id(m): n for n, m in self.root.named_modules(remove_duplicate=False)}
        self._tensor_paths: dict[int, str] = {}
        for m_name, m in self.root.named_modules(remove_duplicate=False):
            prefix = f"{m_name}." if m_name else ""
            for store in (m._parameters, m._buffers, m.__dict__):
                for k, v in store.items():
                    if isinstance(v, Tensor):
                        self._tensor_paths.setdefault(id(v), prefix + k)
        # the swaps go in first: a Proxy made while none are active counts as a hand-built one (fx.proxy)
        patcher = _patching.activate(self, root, autowrap_math=self.autowrap_math and not self.concrete,
                                     extra_globals=(getattr(fn, "__globals__", {}),))  # fmt: skip
        try:
            args = self._placeholders(fn, concrete_args, example, skip_self=bool(self_arg))
            result = fn(*self_arg, *args)
        finally:
            patcher.restore()
        self.create_node("output", "output", (self.create_arg(result),), {})
        if isinstance(root, Module):
            self.graph.owning_module = root
        return self.graph

    def _placeholders(self, fn: Callable, concrete_args: dict, example: tuple | None, skip_self: bool) -> list:
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())[1 if skip_self else 0 :]
        unknown = set(concrete_args) - {p.name for p in params}
        if unknown:
            raise TypeError(f"concrete_args names {sorted(unknown)}, which {fn.__qualname__} does not take")
        varargs = any(p.kind == p.VAR_POSITIONAL for p in params)
        if example is not None and len(example) > len(params) and not varargs:
            raise TypeError(f"{fn.__qualname__} takes {len(params)} arguments, {len(example)} were given")
        out = []
        for i, p in enumerate(params):
            if p.kind == p.VAR_POSITIONAL and example is not None:  # one placeholder per example argument
                out += [self._example_placeholder(f"{p.name}_{j}", v) for j, v in enumerate(example[i:])]
                break
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                break
            if example is not None:
                value = example[i] if i < len(example) else p.default
                if value is inspect.Parameter.empty:
                    raise TypeError(f"{fn.__qualname__}: missing argument {p.name!r}")
                out.append(self._example_placeholder(p.name, value))
                continue
            # the input keeps its own default (as torch's), so the generated signature stays valid Python
            # (a concrete Tensor, or a value fixed before a parameter without default, is no default to write)
            default = () if p.default is inspect.Parameter.empty else (p.default,)
            if p.name in concrete_args and concrete_args[p.name] is not PH:
                self.create_node("placeholder", p.name, default, {})
                out.append(concrete_args[p.name])  # the trace is specialised to it: the input is unused
                continue
            out.append(self.proxy(self.create_node("placeholder", p.name, default, {})))
        return out

    def _example_placeholder(self, name: str, value: Any) -> Any:
        if isinstance(value, Tensor) or (
            isinstance(value, (tuple, list)) and any(isinstance(v, Tensor) for v in value)
        ):
            node = self.create_node("placeholder", name, (), {})
            node.meta["val"] = value
            return self.proxy(node)
        self.create_node("placeholder", name, (value,), {})  # a Python value steers the trace: kept as the default
        return value

    def _install(self, patcher: _Patcher, table: dict) -> None:
        """The swaps only a root trace makes: module calls, parameter reads, functions the model holds."""
        tracer = self
        orig_call, orig_getattr = Module.__call__, Module.__getattr__
        self._orig_call = orig_call
        cache: dict = {}

        def module_call(mod, *args, **kwargs):
            if tracer._evaluating or _patching.has_proxy(args, kwargs) is None and not tracer._scope_wants(mod):
                return orig_call(mod, *args, **kwargs)
            return tracer.call_module(mod, lambda *a, **k: orig_call(mod, *a, **k), args, kwargs)

        def module_getattr(mod, attr):
            val = orig_getattr(mod, attr)
            if tracer._evaluating:
                return val
            return tracer.getattr(attr, val, cache)

        patcher.set(Module, "__call__", module_call)
        patcher.set(Module, "__getattr__", module_getattr)
        _patching.swap_in_module_instances(patcher, list(self.root.modules()), table)
        for fn in self.autowrap_functions:
            g = getattr(fn, "__globals__", None)
            if g is not None and g.get(fn.__name__) is fn:
                patcher.set(g, fn.__name__, _patching._wrap(fn), is_dict=True)

    def _scope_wants(self, mod: Module) -> bool:
        """A module called without Proxy arguments still becomes a node when it is a leaf with parameters the
        trace must read (torch records every leaf call)."""
        return id(mod) in self._module_paths and self.is_leaf_module(mod, self._module_paths[id(mod)])

    # ---- concrete values ---------------------------------------------------------------------------------
    def _evaluate(self, node: Node, args: tuple, kwargs: dict) -> Any:
        def val(x):
            if isinstance(x, Proxy):
                return x.node.meta["val"]
            return x

        a, k = map_aggregate(args, val), map_aggregate(kwargs, val)
        self._evaluating += 1
        try:
            if node.op == "call_function":
                return node.target(*a, **k)
            if node.op == "call_method":
                return getattr(a[0], node.target)(*a[1:], **k)
            if node.op == "call_module":
                return self._orig_call(self.root.get_submodule(node.target), *a, **k)
            if node.op == "get_attr":
                obj = self.root
                for atom in node.target.split("."):
                    obj = getattr(obj, atom)
                return obj
        finally:
            self._evaluating -= 1
        return None

    def concrete_value(self, p: Proxy) -> Any:
        """**pyframe**: the value ``p`` computed in a concrete trace (``capture``); a marker for no value otherwise."""
        return p.node.meta.get("val", _NO_VALUE) if self.concrete else _NO_VALUE

    def static_attr(self, p: Proxy, k: str) -> Any:
        """**pyframe**: in a concrete trace, the attribute ``k`` (``dtype``, ``ndim``, ``device``, ...) read from the
        computed value, so the graph is specialised to it; a marker for "not static" otherwise.
        """
        if self.concrete and k in _STATIC_ATTRS:
            return getattr(p.node.meta["val"], k)
        return _NOT_STATIC

    def static_method(self, p: Proxy, k: str, args, kwargs) -> Any:
        """**pyframe**: in a concrete trace, a shape-free method (``dim``, ``is_floating_point``, ...) evaluated on the
        computed value; a marker for "not static" otherwise.
        """
        static = k in _STATIC_METHODS and (k != "type" or not args)
        if self.concrete and static and _patching.has_proxy(args, kwargs) is None:
            return getattr(p.node.meta["val"], k)(*args, **kwargs)
        return _NOT_STATIC

    def to_bool(self, p: Proxy) -> bool:
        """``bool(proxy)``: in a concrete trace, the computed value's truth (recorded in ``specialized``); otherwise a
        TraceError, as torch.fx.
        """
        if self.concrete:
            self.specialized.append((p.node, "bool()"))
            return bool(p.node.meta["val"])
        return super().to_bool(p)

    def to_concrete(self, p: Proxy, what: str, fn) -> Any:
        """A Python value from a Proxy (``int(p)``, ``len(p)``, ...): in a concrete trace computed from the value
        (recorded in ``specialized``); otherwise a TraceError.
        """
        if self.concrete:
            self.specialized.append((p.node, what))
            return fn(p.node.meta["val"])
        return super().to_concrete(p, what, fn)


def symbolic_trace(root: Module | Callable, concrete_args: dict[str, Any] | None = None):
    """Same as torch.fx.symbolic_trace: a GraphModule whose code is ``root``'s forward as traced."""
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, Module) else root.__name__
    return _graph_module(tracer, graph, name)


def _graph_module(tracer: Tracer, graph: Graph, name: str):
    """The GraphModule, holding the tensors made during the trace; the traced module is left as it was."""
    from pyframe.fx.graph_module import GraphModule

    gm = GraphModule(tracer.root, graph, name)
    for path, _ in tracer._constants:
        tracer.root.__dict__.pop(path, None)
    return gm


def capture(root: Module | Callable, args: tuple, tracer: Tracer | None = None):
    """``root`` run once on ``args`` (real tensors) while its graph is recorded. Python control flow follows the
    real values (the graph is the path they took); shapes read with ``.shape``/``.size()`` stay nodes, so a
    consumer can keep them symbolic; every node's ``meta["val"]`` holds what it computed."""
    tracer = tracer or Tracer()
    graph = tracer._trace(root, {}, tuple(args))
    name = type(root).__name__ if isinstance(root, Module) else getattr(root, "__name__", "fn")
    return _graph_module(tracer, graph, name)
