"""Functional forms of the layers, activations and losses. Same as torch.nn.functional.

Every tensor computation runs in the C core through pyframe's ops. Layers with a costly
or numerically delicate gradient (linear, conv2d, the pools, batch_norm, layer_norm, the
binary cross entropies) record one node with a dedicated backward written in the same ops;
the rest are compositions and get their gradient from the ops they are made of.

The functions live in one module per family (``conv``, ``pooling``, ``normalization``,
``activation``, ``loss``, ...); this package re-exports them under torch's names.

Differences from PyTorch are listed in each docstring. Common to all: CPU only, float32
and float64 for the im2col-based ops (conv, pools, unfold, fold).
"""

import sys

from pyframe.nn.functional.activation import *  # noqa: F403
from pyframe.nn.functional.attention import *  # noqa: F403
from pyframe.nn.functional.conv import *  # noqa: F403
from pyframe.nn.functional.distance import *  # noqa: F403
from pyframe.nn.functional.dropout import *  # noqa: F403
from pyframe.nn.functional.linear import *  # noqa: F403
from pyframe.nn.functional.loss import *  # noqa: F403
from pyframe.nn.functional.normalization import *  # noqa: F403
from pyframe.nn.functional.padding import *  # noqa: F403
from pyframe.nn.functional.pooling import *  # noqa: F403
from pyframe.nn.functional.sparse import *  # noqa: F403
from pyframe.nn.functional.upsampling import *  # noqa: F403

_FAMILIES = (
    "activation",
    "attention",
    "conv",
    "distance",
    "dropout",
    "linear",
    "loss",
    "normalization",
    "padding",
    "pooling",
    "sparse",
    "upsampling",
)
__all__ = [name for family in _FAMILIES for name in sys.modules[f"pyframe.nn.functional.{family}"].__all__]
