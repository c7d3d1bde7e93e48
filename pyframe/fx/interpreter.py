"""``Interpreter`` runs a GraphModule's graph node by node; ``Transformer`` does the same on Proxies and
builds a new GraphModule. Same as torch.fx's: override ``call_function``, ``call_method``, ``call_module``,
``get_attr``, ``placeholder``, ``output`` or ``run_node`` to change what a kind of node does."""

from __future__ import annotations

import inspect
from typing import Any

from pyframe.fx.graph import Graph
from pyframe.fx.graph_module import GraphModule
from pyframe.fx.node import Argument, Node, map_aggregate, map_arg
from pyframe.fx.proxy import Proxy
from pyframe.fx.tracer import Tracer
from pyframe.nn.modules.module import Module

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Same as torch.fx.Interpreter. ``run(*args)`` returns what the graph's output node returns; values are
    dropped after their last use unless ``garbage_collect_values`` is False."""

    def __init__(self, module: Module, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, Any] = {}
        self.garbage_collect_values = garbage_collect_values
        self.user_to_last_uses: dict[Node, list[Node]] = {}
        if garbage_collect_values:
            last_use: dict[Node, Node] = {}
            for node in reversed(self.graph.nodes):
                for n in node.all_input_nodes:
                    if n not in last_use:
                        last_use[n] = node
                        self.user_to_last_uses.setdefault(node, []).append(n)

    def run(self, *args, initial_env: dict[Node, Any] | None = None, enable_io_processing: bool = True) -> Any:
        """Same as torch.fx.Interpreter.run: executes the graph node by node on ``args`` and returns the output.

        Args:
            *args: one value per placeholder, in order.
            initial_env: values for nodes, which are then not executed.
            enable_io_processing: accepted for torch's signature.
        """
        self.env = dict(initial_env or {})
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                e.add_note(f"While executing {node.format_node()}")
                raise
            if self.garbage_collect_values:
                for to_delete in self.user_to_last_uses.get(node, []):
                    self.env.pop(to_delete, None)
            if node.op == "output":
                return self.env[node]
        return None

    def run_node(self, n: Node) -> Any:
        """Same as torch.fx.Interpreter.run_node: the value of node ``n``, from the method named after its ``op``."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per kind of node ---------------------------------------------------------------
    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        """Same as torch.fx.Interpreter.placeholder: the next argument of ``run`` (the rest as a list for ``*args``;
        the default when arguments run out).
        """
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"expected an argument for parameter {target}, but none was passed") from None

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        """Same as torch.fx.Interpreter.get_attr: the module attribute ``target`` names."""
        return self.fetch_attr(target)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        """Same as torch.fx.Interpreter.call_function: ``target(*args, **kwargs)``."""
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        """Same as torch.fx.Interpreter.call_method: ``args[0].target(*args[1:], **kwargs)``."""
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        """Same as torch.fx.Interpreter.call_module: the submodule ``target`` called with ``args`` and ``kwargs``."""
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> Any:
        """Same as torch.fx.Interpreter.output: the value the graph returns (``args[0]``)."""
        return args[0]

    # ---- helpers -------------------------------------------------------------------------------------
    def fetch_attr(self, target: str) -> Any:
        """Same as torch.fx.Interpreter.fetch_attr: the attribute of the module at the dotted path ``target``
        (RuntimeError naming the missing step).
        """
        obj = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(obj, atom):
                raise RuntimeError(f"node referenced nonexistent target {'.'.join(target.split('.')[: i + 1])}")
            obj = getattr(obj, atom)
        return obj

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        """Same as torch.fx.Interpreter.fetch_args_kwargs_from_env: ``n``'s args and kwargs with every node replaced by
        its computed value.
        """
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Argument, n: Node) -> Argument:
        """Same as torch.fx.Interpreter.map_nodes_to_values: ``args`` with every node replaced by its computed value
        (RuntimeError for a node not computed yet).
        """

        def load(a: Node) -> Any:
            if a not in self.env:
                raise RuntimeError(f"node {n.name} referenced nonexistent value {a.name}")
            return self.env[a]

        return map_arg(args, load)


class _TransformerTracer(Tracer):
    def __init__(self, graph: Graph, root: Module) -> None:
        super().__init__()
        self.graph = graph
        self.root = root
        self._module_paths = {id(m): n for n, m in root.named_modules(remove_duplicate=False)}

    def is_leaf_module(self, m: Module, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """Same as torch.fx.Transformer: runs the graph on Proxies, so each overridden method returns what the new
    graph should compute (``super().call_function(other_target, args, kwargs)``, or pyframe calls on the
    Proxies); ``transform()`` returns the new GraphModule."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module, garbage_collect_values=False)
        self.new_graph = Graph()
        self.tracer = _TransformerTracer(self.new_graph, module)

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.tracer.create_proxy("call_method", target, args, kwargs)

    def transform(self) -> GraphModule:
        """Same as torch.fx.Transformer.transform: runs the transformation and returns the new GraphModule."""
        with self.tracer:
            result = super().run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a))
        return GraphModule(self.module, self.new_graph, type(self.module).__name__)
