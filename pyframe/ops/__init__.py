"""Tensor math. Every function computes in the C core; ``pyframe`` re-exports them all."""

from pyframe.ops import (
    compare,
    elementwise,
    inplace,
    layout,
    pointwise,
    products,
    rearrange,
    reduce,
    sampling,
    shape,
    sorting,
    stats,
)  # fmt: skip
from pyframe.ops.compare import *  # noqa: F403
from pyframe.ops.einsum import einsum
from pyframe.ops.elementwise import *  # noqa: F403
from pyframe.ops.elementwise import binary_ops, copy_, fill_, inplace_ops, unary_ops, zero_
from pyframe.ops.index import gather, getitem, index_add_, index_select, nonzero, scatter_add, scatter_add_, setitem
from pyframe.ops.inplace import *  # noqa: F403
from pyframe.ops.layout import *  # noqa: F403
from pyframe.ops.linalg import bmm, dot, matmul, mm
from pyframe.ops.pointwise import *  # noqa: F403
from pyframe.ops.products import *  # noqa: F403
from pyframe.ops.rearrange import *  # noqa: F403
from pyframe.ops.reduce import *  # noqa: F403
from pyframe.ops.sampling import *  # noqa: F403
from pyframe.ops.shape import *  # noqa: F403
from pyframe.ops.sorting import *  # noqa: F403
from pyframe.ops.stats import *  # noqa: F403

__all__ = [
    *elementwise.__all__, *reduce.__all__, *shape.__all__, *compare.__all__, "einsum", *inplace.__all__,
    *rearrange.__all__, *sampling.__all__, *sorting.__all__, *pointwise.__all__, *products.__all__,
    *layout.__all__, *stats.__all__,
    "gather", "index_select", "nonzero", "scatter_add", "matmul", "mm", "bmm", "dot",
]  # fmt: skip
_internal = (binary_ops, copy_, fill_, inplace_ops, unary_ops, zero_, getitem, setitem, index_add_, scatter_add_)
