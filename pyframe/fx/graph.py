"""``Graph``: the nodes of a traced program in order, and the Python code it stands for. Same as torch.fx.Graph
for what model-transforming code uses: ``create_node`` and its six shorthands, ``inserting_before``/``_after``,
``erase_node``, ``node_copy``, ``graph_copy``, ``lint``, ``eliminate_dead_code`` and ``python_code``."""

from __future__ import annotations

import builtins
import inspect
import keyword
import math
import operator
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pyframe.fx.node import Argument, Node, _fmt, map_arg

__all__ = ["Graph", "PythonCode"]

# operator functions written as Python operators in generated code (torch.fx prints them the same way)
BINARY = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
    operator.mod: "%", operator.pow: "**", operator.matmul: "@", operator.and_: "&", operator.or_: "|",
    operator.xor: "^", operator.lshift: "<<", operator.rshift: ">>", operator.eq: "==", operator.ne: "!=",
    operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
}  # fmt: skip
UNARY = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}
_ILLEGAL = set(keyword.kwlist) | set(dir(builtins)) | {"self", "pyframe", "operator", "math"}


def _unwrapped(fn: Any) -> Any:
    """What a module attribute stands for while a trace has swapped in its recording wrapper (fx.proxy)."""
    return getattr(fn, "__fx_original__", fn)


def _snake(name: str) -> str:
    name = re.sub(r"[^0-9a-zA-Z_]+", "_", name)
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()
    return f"_{name}" if not name or name[0].isdigit() else name


class _Namespace:
    """Unique identifiers: ``add``, ``add_1``, ``add_2`` ...; never a keyword or builtin name (``getattr_1``)."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.base_count: dict[str, int] = {}

    def create(self, candidate: str) -> str:
        candidate = _snake(candidate)
        m = re.match(r"(.*)_(\d+)$", candidate)
        base, num = (m.group(1), int(m.group(2))) if m else (candidate, None)
        if num is None and candidate not in self.used and candidate not in _ILLEGAL:
            self.used.add(candidate)
            return candidate
        n = num if num is not None else self.base_count.get(base, 0) + 1
        while f"{base}_{n}" in self.used or f"{base}_{n}" in _ILLEGAL:
            n += 1
        self.base_count[base] = n
        name = f"{base}_{n}"
        self.used.add(name)
        return name


class PythonCode:
    """Generated source and the globals it runs in."""

    def __init__(self, src: str, globals_: dict[str, Any]) -> None:
        self.src = src
        self.globals = globals_


class _NodeList:
    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self.graph, self.reverse = graph, reverse

    def __len__(self) -> int:
        return self.graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self.graph._root
        n = root._prev if self.reverse else root._next
        while n is not root:
            nxt = n._prev if self.reverse else n._next
            if not n._erased:
                yield n
            n = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self.graph, not self.reverse))

    def __repr__(self) -> str:
        return repr(list(self))


class Graph:
    """Same as torch.fx.Graph: a doubly linked list of ``Node``s, with an insertion point (the end by default)."""

    def __init__(self, owning_module=None, tracer_cls=None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._insert = self._root.prepend
        self._len = 0
        self._ns = _Namespace()
        self.owning_module = owning_module
        self._tracer_cls = tracer_cls

    @property
    def nodes(self) -> _NodeList:
        """Same as torch.fx.Graph.nodes: the nodes in execution order (a live list view: iterate it, ``len`` it)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Any = None) -> list[Node]:
        """Same as torch.fx.Graph.find_nodes: the nodes of kind ``op`` (and, if given, of that ``target``), in order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ---- building ----------------------------------------------------------------------------------
    def create_node(self, op: str, target: Any, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any = None) -> Node:  # fmt: skip
        """A new node at the insertion point. Same as torch.fx.Graph.create_node."""
        args, kwargs = tuple(args or ()), dict(kwargs or {})
        target = _unwrapped(target)  # read during a trace, a pyframe function is its recording wrapper
        for a in map_arg_nodes((args, kwargs)):
            if a.graph is not self:
                raise ValueError(f"argument {a.name} of a new {op} node belongs to another graph")
        node = Node(self, self._ns.create(name or self._target_to_name(op, target)), op, target, args, kwargs,
                    type_expr)  # fmt: skip
        self._insert(node)
        self._len += 1
        return node

    @staticmethod
    def _target_to_name(op: str, target: Any) -> str:
        if op == "output":
            return "output"
        if isinstance(target, str):
            return target.replace(".", "_")
        return getattr(target, "__name__", "fn").lstrip("_") or "fn"

    def placeholder(self, name: str, type_expr: Any = None, default_value: Any = inspect.Signature.empty) -> Node:
        """Same as torch.fx.Graph.placeholder: inserts an input node named ``name`` (with ``default_value`` if
        given).
        """
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Same as torch.fx.Graph.get_attr: inserts a node that reads the module attribute ``qualified_name``."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:  # fmt: skip
        """Same as torch.fx.Graph.call_module: inserts a node that calls the submodule ``module_name``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:  # fmt: skip
        """Same as torch.fx.Graph.call_method: inserts a node that calls the method ``method_name`` on ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None, kwargs: dict | None = None,
                      type_expr: Any = None) -> Node:  # fmt: skip
        """Same as torch.fx.Graph.call_function: inserts a node that calls ``the_function``."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result: Argument, type_expr: Any = None) -> Node:
        """Same as torch.fx.Graph.output: inserts the output node, which returns ``result``."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    @contextmanager
    def inserting_before(self, n: Node | None = None):
        """New nodes go before ``n`` (the start of the graph when None) inside the ``with``."""
        saved = self._insert
        self._insert = (n or self._root._next).prepend
        try:
            yield
        finally:
            self._insert = saved

    @contextmanager
    def inserting_after(self, n: Node | None = None):
        """New nodes go after ``n`` (the end of the graph when None), in the order they are made."""
        saved = self._insert
        anchor = [n or self._root._prev]

        def insert(x: Node) -> None:
            anchor[0].append(x)
            anchor[0] = x

        self._insert = insert
        try:
            yield
        finally:
            self._insert = saved

    def erase_node(self, to_erase: Node) -> None:
        """Remove a node no other node reads. Same as torch.fx.Graph.erase_node."""
        if to_erase.users:
            raise RuntimeError(f"tried to erase node {to_erase.name} but it still has {len(to_erase.users)} "
                               f"user(s) in the graph: {list(to_erase.users)}")  # fmt: skip
        if to_erase.graph is not self or to_erase._erased:
            raise RuntimeError(f"node {to_erase.name} is not in this graph")
        to_erase._remove_from_list()
        to_erase._erased = True
        to_erase._set_inputs((), {})
        self._len -= 1

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Argument] = lambda x: x) -> Node:
        """A copy of ``node`` (from any graph) at the insertion point, its node arguments mapped through
        ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        new = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        new.meta = dict(node.meta)
        return new

    def graph_copy(self, g: Graph, val_map: dict[Node, Node], return_output_node: bool = False):
        """Copy every node of ``g`` but its output into this graph (``val_map`` maps g's nodes to the copies,
        and may be pre-filled); returns the value the output node returned, mapped."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return (rv, node) if return_output_node else rv
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    # ---- checks and passes ---------------------------------------------------------------------------
    def lint(self) -> None:
        """Check the graph is well formed: nodes belong to it, names are unique, every argument is defined
        before its use, at most one output and it is last, and targets exist on the owning module."""
        seen: set[Node] = set()
        names: set[str] = set()
        outputs = 0
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"node {node.name} does not belong to this graph")
            if node.name in names:
                raise RuntimeError(f"node name {node.name!r} is used twice")
            names.add(node.name)
            if outputs:
                raise RuntimeError(f"node {node.name} comes after the graph's output")
            for a in node.all_input_nodes:
                if a.graph is not self or a._erased:
                    raise RuntimeError(f"argument {a.name} of node {node.name} is not in this graph")
                if a not in seen:
                    raise RuntimeError(f"argument {a.name} of node {node.name} is used before it is defined")
            outputs += node.op == "output"
            seen.add(node)
            if self.owning_module is not None and node.op in ("get_attr", "call_module"):
                _check_target(self.owning_module, node)

    def eliminate_dead_code(self) -> bool:
        """Erase nodes nothing reads (keeping inputs, the output and impure nodes); True when any went."""
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not node.is_impure():
                self.erase_node(node)
                changed = True
        return changed

    # ---- printing and code ----------------------------------------------------------------------------
    def __str__(self) -> str:
        params = ", ".join(n.name for n in self.nodes if n.op == "placeholder")
        return "\n".join([f"graph({params}):", *(f"    {n.format_node()}" for n in self.nodes)])

    def print_tabular(self) -> None:
        """The nodes as a table: opcode, name, target, args, kwargs."""
        rows = [("opcode", "name", "target", "args", "kwargs")]
        from pyframe.fx.node import _target_name

        rows += [(n.op, n.name, _target_name(n.target), _fmt(n.args), _fmt(n.kwargs)) for n in self.nodes]
        widths = [max(len(r[i]) for r in rows) for i in range(5)]
        for i, r in enumerate(rows):
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
            if i == 0:
                print("  ".join("-" * w for w in widths))

    def python_code(self, root_module: str = "self") -> PythonCode:
        """The ``forward`` this graph stands for, as torch.fx writes it, and the globals it needs."""
        return _CodeGen(root_module).emit(self)


def map_arg_nodes(a: Argument) -> list[Node]:
    out: list[Node] = []
    map_arg(a, out.append)
    return out


def _check_target(root, node: Node) -> None:
    obj = root
    for atom in node.target.split("."):
        if not hasattr(obj, atom):
            raise RuntimeError(f"node {node.name} refers to {node.target!r}, which the module does not have")
        obj = getattr(obj, atom)


def _attr_path(base: str, target: str) -> str:
    """``self.layers.0.fc`` as Python: ``getattr(self.layers, "0").fc``, as torch.fx writes it."""
    for atom in target.split("."):
        base = f"{base}.{atom}" if atom.isidentifier() else f'getattr({base}, "{atom}")'
    return base


class _CodeGen:
    def __init__(self, root: str) -> None:
        self.root = root
        self.globals: dict[str, Any] = {"operator": operator, "math": math, "inf": math.inf, "nan": math.nan}
        self.by_id: dict[int, str] = {}
        self.taken: set[str] = set()

    def global_name(self, obj: Any) -> str:
        """A name for ``obj`` in the generated module: its import path when it is reachable as
        ``pyframe.x``/``pyframe.nn.functional.x``/``math.x``, else a unique global bound to it."""
        if id(obj) in self.by_id:
            return self.by_id[id(obj)]
        import pyframe

        name = getattr(obj, "__name__", None)
        path = None
        if isinstance(name, str) and name.isidentifier():
            functional = getattr(getattr(pyframe, "nn", None), "functional", None)
            for prefix, mod in (("pyframe", pyframe), ("pyframe.nn.functional", functional), ("math", math),
                                ("operator", operator)):  # fmt: skip
                if mod is not None and _unwrapped(getattr(mod, name, None)) is obj:
                    path = f"{prefix}.{name}"
                    break
        if path is not None:
            self.globals["pyframe"] = pyframe
        else:
            base = _snake(name if isinstance(name, str) else type(obj).__name__)
            path, i = base, 0
            while path in self.globals or path in _ILLEGAL or path in self.taken:
                i += 1
                path = f"{base}_{i}"
            self.globals[path] = obj
        self.by_id[id(obj)] = path
        return path

    def fmt(self, a: Argument) -> str:
        if isinstance(a, Node):
            return a.name
        if isinstance(a, tuple):
            inner = ", ".join(self.fmt(x) for x in a)
            if hasattr(a, "_fields"):
                return f"{self.global_name(type(a))}({inner})"
            return f"({inner},)" if len(a) == 1 else f"({inner})"
        if isinstance(a, list):
            return "[" + ", ".join(self.fmt(x) for x in a) + "]"
        if isinstance(a, dict):
            return "{" + ", ".join(f"{k!r}: {self.fmt(v)}" for k, v in a.items()) + "}"
        if isinstance(a, slice):
            return f"slice({self.fmt(a.start)}, {self.fmt(a.stop)}, {self.fmt(a.step)})"
        if isinstance(a, float) and not math.isfinite(a):
            return "inf" if a > 0 else "-inf" if a < 0 else "nan"
        if a is None or a is Ellipsis or isinstance(a, (bool, int, float, str)):
            return "..." if a is Ellipsis else repr(a)
        return self.global_name(a)

    def call_args(self, args: tuple, kwargs: dict) -> str:
        return ", ".join([*(self.fmt(a) for a in args), *(f"{k} = {self.fmt(v)}" for k, v in kwargs.items())])

    def emit(self, graph: Graph) -> PythonCode:
        # a global named like a node would be shadowed by that local (`leaky_relu = leaky_relu(x)` fails)
        self.taken = {n.name for n in graph.nodes}
        self.taken |= {n.target.lstrip("*") for n in graph.nodes if n.op == "placeholder"}
        params: list[str] = []
        body: list[str] = []
        for n in graph.nodes:
            a = n.args
            if n.op == "placeholder":
                default = "" if not a else f" = {self.fmt(a[0])}"
                params.append(f"{n.target}{default}" if not n.target.startswith("*") else n.target)
                if n.name != n.target.lstrip("*"):
                    body.append(f"{n.name} = {n.target.lstrip('*')}")
                continue
            if n.op == "output":
                body.append(f"return {self.fmt(a[0])}")
                continue
            if n.op == "get_attr":
                rhs = _attr_path(self.root, n.target)
            elif n.op == "call_module":
                rhs = f"{_attr_path(self.root, n.target)}({self.call_args(a, n.kwargs)})"
            elif n.op == "call_method":
                rhs = f"{self.fmt(a[0])}.{n.target}({self.call_args(a[1:], n.kwargs)})"
            elif n.target in BINARY and len(a) == 2 and not n.kwargs:
                rhs = f"{self.fmt(a[0])} {BINARY[n.target]} {self.fmt(a[1])}"
            elif n.target in UNARY and len(a) == 1 and not n.kwargs:
                rhs = f"{UNARY[n.target]}{self.fmt(a[0])}"
            elif n.target is operator.getitem and len(a) == 2 and not n.kwargs:
                rhs = f"{self.fmt(a[0])}[{self.fmt(a[1])}]"
            elif n.target is builtins.getattr and len(a) == 2 and isinstance(a[1], str) and a[1].isidentifier():
                rhs = f"{self.fmt(a[0])}.{a[1]}"
            else:
                rhs = f"{self.global_name(n.target)}({self.call_args(a, n.kwargs)})"
            body.append(f"{n.name} = {rhs}")
        if not body or not body[-1].startswith("return"):
            body.append("return None")
        src = f"def forward({', '.join([self.root, *params])}):\n" + "".join(f"    {line}\n" for line in body)
        return PythonCode(src, self.globals)
