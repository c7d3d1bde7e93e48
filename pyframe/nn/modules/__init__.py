"""The Module base class, containers and layers: one module per family, named as in nn/functional."""

from pyframe.nn.modules import activation as _activation
from pyframe.nn.modules import attention as _attention
from pyframe.nn.modules import container as _container
from pyframe.nn.modules import conv as _conv
from pyframe.nn.modules import distance as _distance
from pyframe.nn.modules import dropout as _dropout
from pyframe.nn.modules import flatten as _flatten
from pyframe.nn.modules import lazy as _lazy  # noqa: F401 - torch.nn.modules.lazy
from pyframe.nn.modules import linear as _linear
from pyframe.nn.modules import linear_cross_entropy as _linear_cross_entropy
from pyframe.nn.modules import loss as _loss
from pyframe.nn.modules import module as _module
from pyframe.nn.modules import normalization as _normalization
from pyframe.nn.modules import padding as _padding
from pyframe.nn.modules import pooling as _pooling
from pyframe.nn.modules import rnn as _rnn
from pyframe.nn.modules import sparse as _sparse
from pyframe.nn.modules import torch_paths as _torch_paths  # noqa: F401 - registers torch's submodule paths
from pyframe.nn.modules import transformer as _transformer
from pyframe.nn.modules import upsampling as _upsampling
from pyframe.nn.modules.activation import *  # noqa: F403
from pyframe.nn.modules.attention import *  # noqa: F403
from pyframe.nn.modules.container import *  # noqa: F403
from pyframe.nn.modules.conv import *  # noqa: F403
from pyframe.nn.modules.distance import *  # noqa: F403
from pyframe.nn.modules.dropout import *  # noqa: F403
from pyframe.nn.modules.flatten import *  # noqa: F403
from pyframe.nn.modules.linear import *  # noqa: F403
from pyframe.nn.modules.linear_cross_entropy import *  # noqa: F403
from pyframe.nn.modules.loss import *  # noqa: F403
from pyframe.nn.modules.module import *  # noqa: F403
from pyframe.nn.modules.normalization import *  # noqa: F403
from pyframe.nn.modules.padding import *  # noqa: F403
from pyframe.nn.modules.pooling import *  # noqa: F403
from pyframe.nn.modules.rnn import *  # noqa: F403
from pyframe.nn.modules.sparse import *  # noqa: F403
from pyframe.nn.modules.transformer import *  # noqa: F403
from pyframe.nn.modules.upsampling import *  # noqa: F403

__all__ = [
    *_activation.__all__,
    *_attention.__all__,
    *_container.__all__,
    *_conv.__all__,
    *_distance.__all__,
    *_dropout.__all__,
    *_flatten.__all__,
    *_linear.__all__,
    *_linear_cross_entropy.__all__,
    *_loss.__all__,
    *_module.__all__,
    *_normalization.__all__,
    *_padding.__all__,
    *_pooling.__all__,
    *_rnn.__all__,
    *_sparse.__all__,
    *_transformer.__all__,
    *_upsampling.__all__,
]
