"""``Node``: one operation of a ``Graph``. Same as torch.fx.Node, reduced to what graph-transforming code uses:
``op``, ``target``, ``args``, ``kwargs``, ``users``, ``meta``, ``replace_all_uses_with`` and friends."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

__all__ = ["Node", "map_arg", "map_aggregate", "Argument", "Target", "BaseArgumentTypes"]

Argument = Any  # a Node, a base value, or a tuple/list/dict/slice of them
Target = Callable[..., Any] | str  # what a node calls: a function, or a method, module or attribute name
BaseArgumentTypes = (str, int, float, bool, complex, type(None), type(...))  # the plain values an argument may be

OPS = ("placeholder", "call_method", "call_module", "call_function", "get_attr", "output", "root")


def map_aggregate(a: Argument, fn: Callable[[Argument], Argument]) -> Argument:
    """``fn`` applied to every leaf of ``a`` (tuples, namedtuples, lists, dicts and slices are walked)."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Argument, fn: Callable[[Node], Argument]) -> Argument:
    """``fn`` applied to every Node in ``a``; other leaves are kept."""
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


class Node:
    """Same as torch.fx.Node. ``op`` is one of placeholder, get_attr, call_function, call_module, call_method,
    output; ``target`` the function, the method name or the module/attribute path; ``users`` the nodes that read
    this one (a dict used as an ordered set); ``meta`` free for passes (``tensor_meta``, ``val``, ...)."""

    def __init__(self, graph, name: str, op: str, target: Any, args: tuple, kwargs: dict, return_type=None) -> None:
        if op not in OPS:
            raise ValueError(f"unknown node op {op!r}; one of {', '.join(OPS[:-1])}")
        if op in ("call_method", "call_module", "get_attr", "placeholder") and not isinstance(target, str):
            raise ValueError(f"a {op} node's target must be a string, got {target!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"a call_function node's target must be callable, got {target!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self.users: dict[Node, None] = {}
        self.meta: dict[str, Any] = {}
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._prev = self._next = self
        self._erased = False
        self._set_inputs(tuple(args), dict(kwargs))

    # ---- the linked list ------------------------------------------------------------------------
    @property
    def next(self) -> Node:
        """Same as torch.fx.Node.next: the node after this one in the graph."""
        return self._next

    @property
    def prev(self) -> Node:
        """Same as torch.fx.Node.prev: the node before this one in the graph."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Move ``x`` (new or already in the graph) to just before this node."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x

    def append(self, x: Node) -> None:
        """Move ``x`` to just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ---- inputs -----------------------------------------------------------------------------------
    @property
    def args(self) -> tuple:
        """Same as torch.fx.Node.args: the positional arguments (nodes and constants); assigning updates the users."""
        return self._args

    @args.setter
    def args(self, a) -> None:
        self._set_inputs(tuple(a), self._kwargs)

    @property
    def kwargs(self) -> dict:
        """Same as torch.fx.Node.kwargs: the keyword arguments (nodes and constants); assigning updates the users."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k) -> None:
        self._set_inputs(self._args, dict(k))

    @property
    def all_input_nodes(self) -> list[Node]:
        """Same as torch.fx.Node.all_input_nodes: the nodes this node reads, each once, in order of appearance."""
        return list(self._input_nodes)

    def update_arg(self, idx: int, arg: Argument) -> None:
        """Same as torch.fx.Node.update_arg: replaces positional argument ``idx`` with ``arg``."""
        args = list(self._args)
        args[idx] = arg
        self.args = args

    def update_kwarg(self, key: str, arg: Argument) -> None:
        """Same as torch.fx.Node.update_kwarg: sets keyword argument ``key`` to ``arg``."""
        self.kwargs = {**self._kwargs, key: arg}

    def _set_inputs(self, args: tuple, kwargs: dict) -> None:
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        map_arg((args, kwargs), self._input_nodes.setdefault)
        for new in self._input_nodes:
            new.users.setdefault(self)
        self._args, self._kwargs = args, kwargs

    def replace_input_with(self, old: Node, new: Node) -> None:
        """Every use of ``old`` in this node's arguments becomes ``new``."""
        m = lambda n: new if n is old else n  # noqa: E731
        self._set_inputs(map_arg(self._args, m), map_arg(self._kwargs, m))

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:  # fmt: skip
        """Every node reading this one reads ``replace_with`` instead (those ``delete_user_cb`` accepts); returns
        the users changed. Same as torch.fx.Node.replace_all_uses_with."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        changed = [u for u in list(self.users) if delete_user_cb(u)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    # ---- descriptions ----------------------------------------------------------------------------------
    @property
    def stack_trace(self) -> str | None:
        """Same as torch.fx.Node.stack_trace: where the traced code created this node (``meta["stack_trace"]``), if
        recorded.
        """
        return self.meta.get("stack_trace")

    def is_impure(self) -> bool:
        """True for nodes dead-code elimination must keep: inputs, the output, in-place methods and functions
        (a trailing ``_``), and modules marked ``_is_impure``."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_method":
            return self.target.endswith("_") and not self.target.endswith("__") or self.target == "__setitem__"
        if self.op == "call_function":
            name = getattr(self.target, "__name__", "")
            return name.endswith("_") and not name.endswith("__") or name in ("setitem", "_assert")
        if self.op == "call_module" and self.graph.owning_module is not None:
            try:
                return bool(getattr(self.graph.owning_module.get_submodule(self.target), "_is_impure", False))
            except AttributeError:
                return False
        return False

    def format_node(self) -> str:
        """One line as torch.fx prints a graph: ``%add : [num_users=1] = call_function[target=add](args = ...)``."""
        if self.op == "placeholder":
            return f"%{self.name} : [num_users={len(self.users)}] = placeholder[target={self.target}]"
        if self.op == "output":
            return f"return {_fmt(self._args[0])}"
        head = f"%{self.name} : [num_users={len(self.users)}] = {self.op}[target={_target_name(self.target)}]"
        if self.op == "get_attr":
            return head
        return f"{head}(args = {_fmt(self._args)}, kwargs = {_fmt(self._kwargs)})"

    def __repr__(self) -> str:
        return self.name


def _target_name(target: Any) -> str:
    if isinstance(target, str):
        return target
    mod = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", repr(target))
    if mod in ("_operator", "operator", "builtins"):
        return name
    for public in ("pyframe", "pyframe.nn.functional"):  # the path users write, as torch.fx prints torch.relu
        ns = sys.modules.get(public)
        if ns is not None and getattr(ns, name, None) is target:
            return f"{public}.{name}"
    return f"{mod}.{name}" if mod else name


def _fmt(a: Argument) -> str:
    if isinstance(a, Node):
        return f"%{a.name}"
    if isinstance(a, tuple):
        return "(" + ", ".join(_fmt(x) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, list):
        return "[" + ", ".join(_fmt(x) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in a.items()) + "}"
    return repr(a)
