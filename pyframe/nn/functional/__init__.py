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

from pyframe.nn.functional import activation as _activation
from pyframe.nn.functional import attention as _attention
from pyframe.nn.functional import conv as _conv
from pyframe.nn.functional import distance as _distance
from pyframe.nn.functional import dropout as _dropout
from pyframe.nn.functional import linear as _linear
from pyframe.nn.functional import linear_cross_entropy as _linear_cross_entropy
from pyframe.nn.functional import loss as _loss
from pyframe.nn.functional import normalization as _normalization
from pyframe.nn.functional import padding as _padding
from pyframe.nn.functional import pooling as _pooling
from pyframe.nn.functional import sample as _sample
from pyframe.nn.functional import sparse as _sparse
from pyframe.nn.functional import upsampling as _upsampling
from pyframe.nn.functional.activation import *  # noqa: F403
from pyframe.nn.functional.attention import *  # noqa: F403
from pyframe.nn.functional.conv import *  # noqa: F403
from pyframe.nn.functional.distance import *  # noqa: F403
from pyframe.nn.functional.dropout import *  # noqa: F403
from pyframe.nn.functional.linear import *  # noqa: F403
from pyframe.nn.functional.linear_cross_entropy import *  # noqa: F403
from pyframe.nn.functional.loss import *  # noqa: F403
from pyframe.nn.functional.normalization import *  # noqa: F403
from pyframe.nn.functional.padding import *  # noqa: F403
from pyframe.nn.functional.pooling import *  # noqa: F403
from pyframe.nn.functional.sample import *  # noqa: F403
from pyframe.nn.functional.sparse import *  # noqa: F403
from pyframe.nn.functional.upsampling import *  # noqa: F403

__all__ = [
    *_activation.__all__,
    *_attention.__all__,
    *_conv.__all__,
    *_distance.__all__,
    *_dropout.__all__,
    *_linear.__all__,
    *_linear_cross_entropy.__all__,
    *_loss.__all__,
    *_normalization.__all__,
    *_padding.__all__,
    *_pooling.__all__,
    *_sample.__all__,
    *_sparse.__all__,
    *_upsampling.__all__,
]

_threshold = _activation._threshold  # torch's own name of F.threshold (its __name__), where op_db looks it up
