"""``GraphModule``: a Module whose ``forward`` is the Python code generated from its ``graph``. Same as
torch.fx.GraphModule (``code``, ``recompile``, ``print_readable``, ``graph``, ``add_submodule``,
``delete_submodule``, ``delete_all_unused_submodules``)."""

from __future__ import annotations

import copy
import linecache
from typing import Any

from pyframe.fx.graph import Graph
from pyframe.nn.modules.module import Module
from pyframe.nn.parameter import Parameter
from pyframe.tensor import Tensor

__all__ = ["GraphModule"]

_counter = [0]


def _copy_attr(src: Module, dst: Module, target: str) -> None:
    """``dst.<target>`` = ``src.<target>``, creating empty Modules for the missing parents."""
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(src, item)
        t = getattr(dst, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(dst, item, t)
        src, dst = f, t
    orig = getattr(src, field)
    if isinstance(orig, Tensor) and not isinstance(orig, Parameter):  # buffers and constants, as torch.fx
        dst.register_buffer(field, orig)
    else:
        setattr(dst, field, orig)


class GraphModule(Module):
    """Same as torch.fx.GraphModule. ``root`` is a Module (its submodules, parameters and buffers that the
    graph names are copied over by path) or a dict from those paths to the objects."""

    def __new__(cls, *args, **kwargs):
        # each instance gets a class of its own, so that recompile() can give it its own forward
        if cls.__dict__.get("_fx_instance_class"):
            return super().__new__(cls)
        sub = type(cls.__name__, (cls,), {"_fx_instance_class": True})
        return super().__new__(sub)

    def __init__(self, root: Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = type(self).__qualname__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"node {node.name} refers to {node.target!r}, which the dict lacks")
                    _set_path(self, node.target, root[node.target])
        else:
            raise RuntimeError(f"unsupported type {type(root).__name__} for a GraphModule's root")
        self.graph = graph

    # ---- the graph and its code ----------------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        """Same as torch.fx.GraphModule.graph: the graph; assigning one regenerates ``code`` and ``forward``."""
        return self.__dict__["_graph"]

    @graph.setter
    def graph(self, g: Graph) -> None:
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """Same as torch.fx.GraphModule.code: the Python source of the generated ``forward``."""
        return self.__dict__["_code"]

    def recompile(self):
        """Regenerate ``forward`` from ``graph`` (call after editing the graph)."""
        python_code = self.graph.python_code(root_module="self")
        src = python_code.src
        _counter[0] += 1
        filename = f"<eval_with_key>.{_counter[0]}"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        namespace = dict(python_code.globals)
        exec(compile(src, filename, "exec"), namespace)  # noqa: S102 - the code generated from the graph
        self.__dict__["_code"] = src
        type(self).forward = namespace["forward"]
        return python_code

    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:  # fmt: skip
        """The module as a class with its generated ``forward``; printed unless ``print_output`` is False."""
        body = "".join(f"    {line}\n" if line else "\n" for line in self.code.splitlines())
        out = f"class {type(self).__name__}(pyframe.nn.Module):\n{body}"
        if print_output:
            print(out)
        return out

    # ---- submodules ------------------------------------------------------------------------------------
    def add_submodule(self, target: str, m: Module) -> bool:
        """Same as torch.fx.GraphModule.add_submodule: installs ``m`` at the dotted path ``target``, creating empty
        modules for missing parents; False if a parent on the path is not a module.
        """
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            sub = getattr(mod, item, None)
            if sub is None:
                sub = Module()
                mod.add_module(item, sub)
            if not isinstance(sub, Module):
                return False
            mod = sub
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Same as torch.fx.GraphModule.delete_submodule: removes the submodule at ``target``; False if there is
        none.
        """
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
        if field not in mod._modules:
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Same as torch.fx.GraphModule.delete_all_unused_submodules: removes the submodules no ``call_module`` or
        ``get_attr`` node uses.
        """
        used: set[str] = set()
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                parts = node.target.split(".")
                used.update(".".join(parts[: i + 1]) for i in range(len(parts)))
                if node.op == "call_module":
                    sub = self.get_submodule(node.target)
                    used.update(f"{node.target}.{n}" for n, _ in sub.named_modules() if n)
        for name, _ in reversed(list(self.named_modules())):
            if name and name not in used:
                self.delete_submodule(name)

    def __deepcopy__(self, memo: dict) -> GraphModule:
        res = GraphModule.__new__(GraphModule)
        memo[id(self)] = res
        fake = Module()
        fake.__dict__.update(copy.deepcopy({k: v for k, v in self.__dict__.items() if k != "_graph"}, memo))
        graph = Graph()
        val_map: dict = {}
        out = graph.graph_copy(self.graph, val_map)
        graph.output(out)
        res.__init__(fake, graph, type(self).__name__)
        return res

    def __copy__(self) -> GraphModule:
        return GraphModule(self, self.graph, type(self).__name__)

    def __reduce__(self):
        raise TypeError("pickling a GraphModule is not supported; save its state_dict and re-trace")

    def _get_name(self) -> str:
        return type(self).__name__

    def __str__(self) -> str:
        return f"{super().__str__()}\n\n\n\n{self.code}"


def _set_path(root: Module, target: str, value: Any) -> None:
    *prefix, field = target.split(".")
    mod = root
    for item in prefix:
        if not hasattr(mod, item):
            mod.add_module(item, Module())
        mod = getattr(mod, item)
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        mod.register_buffer(field, value)
    else:
        setattr(mod, field, value)
