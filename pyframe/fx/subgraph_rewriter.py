"""``replace_pattern``: find every occurrence of one traced function's graph inside a GraphModule and put
another's in its place. Same as torch.fx.subgraph_rewriter.replace_pattern."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from pyframe.fx.graph import Graph
from pyframe.fx.graph_module import GraphModule
from pyframe.fx.node import Node, map_arg
from pyframe.fx.tracer import symbolic_trace

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    anchor: Node  # the node the pattern's output matched
    nodes_map: dict[Node, Node]  # pattern node -> matched node


def _graph_of(x: Callable | GraphModule | Graph) -> Graph:
    if isinstance(x, Graph):
        return x
    if isinstance(x, GraphModule):
        return x.graph
    return symbolic_trace(x).graph


class _Matcher:
    def __init__(self, pattern: Graph) -> None:
        self.pattern = pattern
        self.placeholders = [n for n in pattern.nodes if n.op == "placeholder"]
        out = next(n for n in pattern.nodes if n.op == "output")
        if not isinstance(out.args[0], Node):
            raise ValueError("replace_pattern supports patterns with a single output")
        self.anchor = out.args[0]

    def match(self, node: Node) -> dict[Node, Node] | None:
        nodes_map: dict[Node, Node] = {}
        return nodes_map if self._match_node(self.anchor, node, nodes_map) else None

    def _match_node(self, pn: Node, gn: Node, m: dict[Node, Node]) -> bool:
        if pn in m:
            return m[pn] is gn
        if pn.op == "placeholder":
            if gn in m.values():
                return False
            m[pn] = gn
            return True
        if pn.op != gn.op or not _same_target(pn, gn) or len(pn.args) != len(gn.args) or \
                set(pn.kwargs) != set(gn.kwargs):  # fmt: skip
            return False
        m[pn] = gn
        ok = all(self._match_arg(a, b, m) for a, b in zip(pn.args, gn.args, strict=True)) and \
            all(self._match_arg(pn.kwargs[k], gn.kwargs[k], m) for k in pn.kwargs)  # fmt: skip
        if not ok:
            del m[pn]
        return ok

    def _match_arg(self, a: Any, b: Any, m: dict[Node, Node]) -> bool:
        if isinstance(a, Node):
            return isinstance(b, Node) and self._match_node(a, b, m)
        if isinstance(a, (tuple, list)):
            return type(a) is type(b) and len(a) == len(b) and \
                all(self._match_arg(x, y, m) for x, y in zip(a, b, strict=True))  # fmt: skip
        return not isinstance(b, Node) and type(a) is type(b) and a == b


def _same_target(pn: Node, gn: Node) -> bool:
    if pn.op == "call_function":
        return getattr(pn.target, "__fx_original__", pn.target) is getattr(gn.target, "__fx_original__", gn.target)
    return pn.target == gn.target


def replace_pattern(
    gm: GraphModule, pattern: Callable | GraphModule, replacement: Callable | GraphModule
) -> list[Match]:
    """Replace each non-overlapping match of ``pattern`` in ``gm`` by ``replacement`` (traced with
    ``symbolic_trace`` when functions), recompile ``gm`` and return the matches. A match's inner nodes must
    not be read outside it (the pattern's output alone may be)."""
    matcher = _Matcher(_graph_of(pattern))
    replacement_graph = _graph_of(replacement)
    graph = gm.graph
    matches: list[Match] = []
    taken: set[Node] = set()
    for node in graph.nodes:
        m = matcher.match(node)
        if m is None:
            continue
        inner = {gn for pn, gn in m.items() if pn.op != "placeholder"}
        if inner & taken:
            continue
        if any(u not in inner for gn in inner if gn is not node for u in gn.users):
            continue
        taken |= inner
        matches.append(Match(node, m))
    for match in matches:
        inputs = [match.nodes_map[p] for p in matcher.placeholders]
        rep_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
        if len(rep_placeholders) != len(inputs):
            raise ValueError(f"the replacement takes {len(rep_placeholders)} inputs, the pattern {len(inputs)}")
        val_map = dict(zip(rep_placeholders, inputs, strict=True))
        # before the first reader of the match's result, as torch places it
        order = {n: i for i, n in enumerate(graph.nodes)}
        first_user = min(match.anchor.users, key=order.__getitem__, default=match.anchor)
        with graph.inserting_before(first_user):
            out = graph.graph_copy(replacement_graph, val_map)
        for rn in replacement_graph.nodes:
            if rn.op in ("get_attr", "call_module") and rn in val_map and isinstance(replacement, GraphModule):
                _copy_into(gm, replacement, rn.target)
        if not isinstance(out, Node):
            raise ValueError("replace_pattern supports replacements with a single output")
        match.anchor.replace_all_uses_with(out)
        inner = [gn for pn, gn in match.nodes_map.items() if pn.op != "placeholder"]
        for gn in _in_reverse_order(graph, inner):
            graph.erase_node(gn)
    gm.recompile()
    return matches


def _in_reverse_order(graph: Graph, nodes: list[Node]) -> list[Node]:
    wanted = set(nodes)
    return [n for n in reversed(graph.nodes) if n in wanted]


def _copy_into(gm: GraphModule, src: GraphModule, target: str) -> None:
    from pyframe.fx.graph_module import _copy_attr

    if not hasattr(gm, target.split(".")[0]):
        _copy_attr(src, gm, target)


map_arg = map_arg  # re-exported for pattern authors, as torch's module does
