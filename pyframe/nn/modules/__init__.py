"""The Module base class, containers and layers: one module per family, named as in nn/functional."""

import sys

from pyframe.nn.modules.activation import *  # noqa: F403
from pyframe.nn.modules.attention import *  # noqa: F403
from pyframe.nn.modules.container import *  # noqa: F403
from pyframe.nn.modules.conv import *  # noqa: F403
from pyframe.nn.modules.distance import *  # noqa: F403
from pyframe.nn.modules.dropout import *  # noqa: F403
from pyframe.nn.modules.flatten import *  # noqa: F403
from pyframe.nn.modules.linear import *  # noqa: F403
from pyframe.nn.modules.loss import *  # noqa: F403
from pyframe.nn.modules.module import *  # noqa: F403
from pyframe.nn.modules.normalization import *  # noqa: F403
from pyframe.nn.modules.padding import *  # noqa: F403
from pyframe.nn.modules.pooling import *  # noqa: F403
from pyframe.nn.modules.rnn import *  # noqa: F403
from pyframe.nn.modules.sparse import *  # noqa: F403
from pyframe.nn.modules.transformer import *  # noqa: F403
from pyframe.nn.modules.upsampling import *  # noqa: F403

_FAMILIES = (
    "activation",
    "attention",
    "container",
    "conv",
    "distance",
    "dropout",
    "flatten",
    "linear",
    "loss",
    "module",
    "normalization",
    "padding",
    "pooling",
    "rnn",
    "sparse",
    "transformer",
    "upsampling",
)
__all__ = [name for family in _FAMILIES for name in sys.modules[f"pyframe.nn.modules.{family}"].__all__]
