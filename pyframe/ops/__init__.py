"""Tensor math, one module per family. Every function computes in the C core; ``pyframe`` re-exports them all."""

import sys

from pyframe.ops.compare import *  # noqa: F403
from pyframe.ops.creation import *  # noqa: F403
from pyframe.ops.elementwise import *  # noqa: F403
from pyframe.ops.elementwise import binary_ops, copy_, fill_, inplace_ops, unary_ops, zero_
from pyframe.ops.index import *  # noqa: F403
from pyframe.ops.index import getitem, index_add_, scatter_add_, setitem
from pyframe.ops.join import *  # noqa: F403
from pyframe.ops.pointwise import *  # noqa: F403
from pyframe.ops.products import *  # noqa: F403
from pyframe.ops.random import *  # noqa: F403
from pyframe.ops.rearrange import *  # noqa: F403
from pyframe.ops.reduce import *  # noqa: F403
from pyframe.ops.scan import *  # noqa: F403
from pyframe.ops.sorting import *  # noqa: F403
from pyframe.ops.stats import *  # noqa: F403
from pyframe.ops.view import *  # noqa: F403

_FAMILIES = (  # fmt: skip
    "compare",
    "creation",
    "elementwise",
    "index",
    "join",
    "products",
    "pointwise",
    "random",
    "rearrange",
    "reduce",
    "scan",
    "sorting",
    "stats",
    "view",
)
__all__ = [name for family in _FAMILIES for name in sys.modules[f"pyframe.ops.{family}"].__all__]
_internal = (binary_ops, copy_, fill_, inplace_ops, unary_ops, zero_, getitem, setitem, index_add_, scatter_add_)
