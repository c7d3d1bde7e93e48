"""torch.utils._pytree: nested containers (tuples, lists, dicts, namedtuples, OrderedDicts, defaultdicts, deques,
and classes registered with ``register_pytree_node``) flattened into a list of leaves and a ``TreeSpec`` that
rebuilds them. Libraries and training code use it to map a function over every tensor of a batch or a state.
Leaves come in torch's order: a container's children in order (a dict's in insertion order); ``None`` is a leaf, as
in torch's Python implementation."""

from __future__ import annotations

from collections import OrderedDict, defaultdict, deque
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

__all__ = [
    "TreeSpec", "LeafSpec", "register_pytree_node", "tree_flatten", "tree_unflatten", "tree_leaves",
    "tree_structure", "tree_map", "tree_map_", "tree_map_only", "tree_all", "tree_any", "tree_all_only",
    "tree_any_only", "treespec_pprint",
]  # fmt: skip


class _Node(NamedTuple):
    flatten: Callable[[Any], tuple[list, Any]]
    unflatten: Callable[[Iterable, Any], Any]


SUPPORTED_NODES: dict[type, _Node] = {}


def register_pytree_node(
    cls: type, flatten_fn: Callable[[Any], tuple[list, Any]], unflatten_fn: Callable[[Iterable, Any], Any], *,
    serialized_type_name: str | None = None, to_dumpable_context=None, from_dumpable_context=None,
    flatten_with_keys_fn=None,
) -> None:  # fmt: skip
    """Same as torch.utils._pytree.register_pytree_node: ``flatten_fn(obj) -> (children, context)`` and
    ``unflatten_fn(children, context) -> obj`` make ``cls`` a container; registering a class twice is an error."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = _Node(flatten_fn, unflatten_fn)


def _dict_flatten(d: dict) -> tuple[list, Any]:
    return list(d.values()), list(d.keys())


def _defaultdict_flatten(d: defaultdict) -> tuple[list, Any]:
    return list(d.values()), (d.default_factory, list(d.keys()))


register_pytree_node(tuple, lambda t: (list(t), None), lambda c, _: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda c, _: list(c))
register_pytree_node(dict, _dict_flatten, lambda c, keys: dict(zip(keys, c, strict=True)))
register_pytree_node(OrderedDict, _dict_flatten, lambda c, keys: OrderedDict(zip(keys, c, strict=True)))
register_pytree_node(defaultdict, _defaultdict_flatten,
                     lambda c, ctx: defaultdict(ctx[0], zip(ctx[1], c, strict=True)))  # fmt: skip
register_pytree_node(deque, lambda d: (list(d), d.maxlen), lambda c, maxlen: deque(c, maxlen=maxlen))

_NAMEDTUPLE = object()  # the node kind of every namedtuple class (its context is the class)


def _node_of(tree: Any):
    """The node kind of ``tree`` (a registered type, or _NAMEDTUPLE), or None for a leaf."""
    cls = type(tree)
    if cls in SUPPORTED_NODES:
        return cls
    if isinstance(tree, tuple) and hasattr(cls, "_fields"):
        return _NAMEDTUPLE
    return None


class TreeSpec:
    """Same as torch.utils._pytree.TreeSpec: a container's kind, its context (a dict's keys, a namedtuple's class)
    and its children's specs; a leaf is ``LeafSpec()``."""

    def __init__(self, type: Any, context: Any, children_specs: list[TreeSpec]) -> None:  # noqa: A002
        self.type, self.context, self.children_specs = type, context, children_specs
        self.num_children = len(children_specs)
        self.num_leaves = sum(c.num_leaves for c in children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in children_specs)

    def is_leaf(self) -> bool:
        return False

    def unflatten(self, leaves: Iterable) -> Any:
        return tree_unflatten(leaves, self)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TreeSpec) or self.is_leaf() != other.is_leaf():
            return NotImplemented if not isinstance(other, TreeSpec) else False
        return (self.type, self.context, self.children_specs) == (other.type, other.context, other.children_specs)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        name = "namedtuple" if self.type is _NAMEDTUPLE else getattr(self.type, "__name__", str(self.type))
        children = ", ".join(repr(c) for c in self.children_specs)
        return f"TreeSpec({name}, {self.context!r}, [{children}])"


class LeafSpec(TreeSpec):
    """Same as torch.utils._pytree.LeafSpec: the spec of one leaf."""

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_leaves, self.num_nodes = 1, 1

    def is_leaf(self) -> bool:
        return True

    def __repr__(self) -> str:
        return "*"


def _flatten(tree: Any, is_leaf: Callable[[Any], bool] | None, leaves: list) -> TreeSpec:
    kind = None if is_leaf is not None and is_leaf(tree) else _node_of(tree)
    if kind is None:
        leaves.append(tree)
        return LeafSpec()
    if kind is _NAMEDTUPLE:
        children, context = list(tree), type(tree)
    else:
        children, context = SUPPORTED_NODES[kind].flatten(tree)
    return TreeSpec(kind, context, [_flatten(c, is_leaf, leaves) for c in children])


def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, TreeSpec]:
    """Same as torch.utils._pytree.tree_flatten: (the leaves in order, the spec that rebuilds the tree)."""
    leaves: list = []
    return leaves, _flatten(tree, is_leaf, leaves)


def _build(spec: TreeSpec, it) -> Any:
    if spec.is_leaf():
        return next(it)
    children = [_build(c, it) for c in spec.children_specs]
    if spec.type is _NAMEDTUPLE:
        return spec.context(*children)
    return SUPPORTED_NODES[spec.type].unflatten(children, spec.context)


def tree_unflatten(leaves: Iterable, treespec: TreeSpec) -> Any:
    """Same as torch.utils._pytree.tree_unflatten: the tree ``treespec`` describes, with ``leaves`` in order."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of TreeSpec but got "
                        f"item of type {type(treespec)}.")  # fmt: skip
    leaves = list(leaves)
    if len(leaves) != treespec.num_leaves:
        raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a "
                         f"pytree that holds {treespec.num_leaves} items ({treespec}).")  # fmt: skip
    return _build(treespec, iter(leaves))


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """Same as torch.utils._pytree.tree_leaves."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> TreeSpec:
    """Same as torch.utils._pytree.tree_structure."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable[..., Any], tree: Any, *rests: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Same as torch.utils._pytree.tree_map: ``func`` of each leaf (and the matching leaves of ``rests``, trees of
    the same structure), in a tree of the same structure."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = []
    for r in rests:
        r_leaves, r_spec = tree_flatten(r, is_leaf)
        if r_spec != spec:
            raise ValueError(f"tree_map: the trees differ in structure: {spec} and {r_spec}")
        others.append(r_leaves)
    return tree_unflatten([func(*xs) for xs in zip(leaves, *others, strict=True)], spec)


def tree_map_(func: Callable[..., Any], tree: Any, *rests: Any, is_leaf: Callable[[Any], bool] | None = None) -> Any:
    """Same as torch.utils._pytree.tree_map_: ``func`` called on each leaf for its effect; returns ``tree``."""
    tree_map(func, tree, *rests, is_leaf=is_leaf)
    return tree


def _only(types, func: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda x: func(x) if isinstance(x, types) else x


def tree_map_only(type_or_types, func: Callable[[Any], Any], tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None) -> Any:  # fmt: skip
    """Same as torch.utils._pytree.tree_map_only: ``func`` of the leaves of the given type(s); others kept."""
    return tree_map(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Same as torch.utils._pytree.tree_all."""
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: Any, is_leaf: Callable[[Any], bool] | None = None) -> bool:
    """Same as torch.utils._pytree.tree_any."""
    return any(map(pred, tree_leaves(tree, is_leaf)))


def tree_all_only(type_or_types, pred: Callable[[Any], bool], tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None) -> bool:  # fmt: skip
    """Same as torch.utils._pytree.tree_all_only: ``pred`` over the leaves of the given type(s)."""
    return all(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, pred: Callable[[Any], bool], tree: Any,
                  is_leaf: Callable[[Any], bool] | None = None) -> bool:  # fmt: skip
    """Same as torch.utils._pytree.tree_any_only."""
    return any(pred(x) for x in tree_leaves(tree, is_leaf) if isinstance(x, type_or_types))


def treespec_pprint(treespec: TreeSpec) -> str:
    """Same as torch.utils._pytree.treespec_pprint: the spec's structure with ``*`` for each leaf."""
    return repr(treespec)
