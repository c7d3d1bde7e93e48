"""Tensor math, one module per family. Every function computes in the C core; ``pyframe`` re-exports them all."""

from pyframe.ops import bitwise as _bitwise
from pyframe.ops import compare as _compare
from pyframe.ops import creation as _creation
from pyframe.ops import elementwise as _elementwise
from pyframe.ops import histogram as _histogram
from pyframe.ops import index as _index
from pyframe.ops import inplace_view as _inplace_view
from pyframe.ops import interop as _interop
from pyframe.ops import join as _join
from pyframe.ops import pointwise as _pointwise
from pyframe.ops import products as _products
from pyframe.ops import random as _random
from pyframe.ops import rearrange as _rearrange
from pyframe.ops import reduce as _reduce
from pyframe.ops import scan as _scan
from pyframe.ops import scattering as _scattering
from pyframe.ops import sorting as _sorting
from pyframe.ops import sparse as _sparse
from pyframe.ops import sparse_csr as _sparse_csr
from pyframe.ops import special as _special
from pyframe.ops import stats as _stats
from pyframe.ops import view as _view
from pyframe.ops import windows as _windows
from pyframe.ops.bitwise import *  # noqa: F403
from pyframe.ops.compare import *  # noqa: F403
from pyframe.ops.creation import *  # noqa: F403
from pyframe.ops.elementwise import *  # noqa: F403
from pyframe.ops.elementwise import binary_ops, copy_, fill_, inplace_ops, unary_ops, zero_
from pyframe.ops.histogram import *  # noqa: F403
from pyframe.ops.index import *  # noqa: F403
from pyframe.ops.index import getitem, index_add_, scatter_add_, setitem
from pyframe.ops.inplace_view import *  # noqa: F403
from pyframe.ops.interop import *  # noqa: F403
from pyframe.ops.join import *  # noqa: F403
from pyframe.ops.pointwise import *  # noqa: F403
from pyframe.ops.products import *  # noqa: F403
from pyframe.ops.random import *  # noqa: F403
from pyframe.ops.rearrange import *  # noqa: F403
from pyframe.ops.reduce import *  # noqa: F403
from pyframe.ops.scan import *  # noqa: F403
from pyframe.ops.scattering import *  # noqa: F403
from pyframe.ops.sorting import *  # noqa: F403
from pyframe.ops.sparse import *  # noqa: F403
from pyframe.ops.sparse_csr import *  # noqa: F403
from pyframe.ops.special import *  # noqa: F403
from pyframe.ops.stats import *  # noqa: F403
from pyframe.ops.view import *  # noqa: F403
from pyframe.ops.windows import *  # noqa: F403

__all__ = [
    *_bitwise.__all__,
    *_compare.__all__,
    *_creation.__all__,
    *_elementwise.__all__,
    *_histogram.__all__,
    *_index.__all__,
    *_interop.__all__,
    *_inplace_view.__all__,
    *_join.__all__,
    *_pointwise.__all__,
    *_products.__all__,
    *_random.__all__,
    *_rearrange.__all__,
    *_reduce.__all__,
    *_scan.__all__,
    *_scattering.__all__,
    *_sorting.__all__,
    *_sparse.__all__,
    *_sparse_csr.__all__,
    *_special.__all__,
    *_stats.__all__,
    *_view.__all__,
    *_windows.__all__,
]

_internal = (binary_ops, copy_, fill_, inplace_ops, unary_ops, zero_, getitem, setitem, index_add_, scatter_add_)
