"""pyframe.utils._pytree: flatten, unflatten and map over nested containers, leaves in torch's order."""

from collections import OrderedDict, defaultdict, deque, namedtuple

import pytest

import pyframe
from pyframe.utils import _pytree as pytree

Point = namedtuple("Point", "x y")


def _tree():
    return {"a": [1, (2, 3)], "b": Point(4, None), "c": OrderedDict(z=5, y=6), "d": defaultdict(list, k=[7]),
            "e": deque([8], maxlen=3)}  # fmt: skip


def test_flatten_unflatten_round_trip_keeps_types():
    leaves, spec = pytree.tree_flatten(_tree())
    assert leaves == [1, 2, 3, 4, None, 5, 6, 7, 8] and spec.num_leaves == 9
    back = pytree.tree_unflatten(leaves, spec)
    assert back == _tree() and isinstance(back["b"], Point) and isinstance(back["c"], OrderedDict)
    assert back["d"].default_factory is list and back["e"].maxlen == 3
    with pytest.raises(ValueError, match="length 8"):
        pytree.tree_unflatten(leaves[:-1], spec)


def test_tree_map_over_tensors_and_several_trees():
    batch = {"x": pyframe.ones(2), "y": [pyframe.zeros(1), "label"]}
    doubled = pytree.tree_map_only(pyframe.Tensor, lambda t: t * 2, batch)
    assert doubled["x"].tolist() == [2.0, 2.0] and doubled["y"][1] == "label"
    assert pytree.tree_map(lambda a, b: a + b, (1, [2]), (10, [20])) == (11, [22])
    with pytest.raises(ValueError, match="structure"):
        pytree.tree_map(lambda a, b: a, (1, 2), [1, 2])
    assert pytree.tree_all(lambda v: v is None or v > 0, _tree()) and pytree.tree_any_only(str, str.isalpha, batch)
    assert pytree.tree_leaves([1, [2, 3]], is_leaf=lambda v: v == [2, 3]) == [1, [2, 3]]


def test_registered_class():
    class Pair:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pytree.register_pytree_node(Pair, lambda p: ([p.a, p.b], None), lambda c, _: Pair(*c))
    try:
        out = pytree.tree_map(lambda v: v + 1, [Pair(1, 2)])
        assert (out[0].a, out[0].b) == (2, 3)
        with pytest.raises(ValueError, match="already registered"):
            pytree.register_pytree_node(Pair, lambda p: ([], None), lambda c, _: None)
    finally:
        del pytree.SUPPORTED_NODES[Pair]


def test_leaf_order_matches_torch():
    torch_pytree = pytest.importorskip("torch.utils._pytree")
    tree = _tree()
    assert pytree.tree_leaves(tree) == torch_pytree.tree_leaves(tree)
    assert pytree.tree_structure(tree).num_leaves == torch_pytree.tree_structure(tree).num_leaves
