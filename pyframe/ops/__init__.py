"""Tensor math. Every function computes in the C core; ``pyframe`` re-exports them all."""

from pyframe.ops import elementwise, reduce, shape
from pyframe.ops.elementwise import *  # noqa: F403
from pyframe.ops.elementwise import binary_ops, copy_, fill_, inplace_ops, unary_ops, zero_
from pyframe.ops.index import gather, getitem, index_add_, index_select, nonzero, scatter_add, scatter_add_, setitem
from pyframe.ops.linalg import bmm, dot, matmul, mm
from pyframe.ops.reduce import *  # noqa: F403
from pyframe.ops.shape import *  # noqa: F403

__all__ = [
    *elementwise.__all__, *reduce.__all__, *shape.__all__,
    "gather", "index_select", "nonzero", "scatter_add", "matmul", "mm", "bmm", "dot",
]  # fmt: skip
_internal = (binary_ops, copy_, fill_, inplace_ops, unary_ops, zero_, getitem, setitem, index_add_, scatter_add_)
