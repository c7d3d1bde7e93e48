"""The Module base class, containers and layers."""

from pyframe.nn.modules import (
    activation,
    activation_more,
    attention,
    container,
    conv,
    conv_extra,
    distance,
    dropout,
    flatten,
    layers_more,
    linear,
    loss,
    loss_more,
    module,
    normalization,
    padding,
    pooling,
    rnn,
    sparse,
    transformer,
)
from pyframe.nn.modules.activation import *  # noqa: F403
from pyframe.nn.modules.activation_more import *  # noqa: F403
from pyframe.nn.modules.attention import *  # noqa: F403
from pyframe.nn.modules.container import *  # noqa: F403
from pyframe.nn.modules.conv import *  # noqa: F403
from pyframe.nn.modules.conv_extra import *  # noqa: F403
from pyframe.nn.modules.distance import *  # noqa: F403
from pyframe.nn.modules.dropout import *  # noqa: F403
from pyframe.nn.modules.flatten import *  # noqa: F403
from pyframe.nn.modules.layers_more import *  # noqa: F403
from pyframe.nn.modules.linear import *  # noqa: F403
from pyframe.nn.modules.loss import *  # noqa: F403
from pyframe.nn.modules.loss_more import *  # noqa: F403
from pyframe.nn.modules.module import *  # noqa: F403
from pyframe.nn.modules.normalization import *  # noqa: F403
from pyframe.nn.modules.padding import *  # noqa: F403
from pyframe.nn.modules.pooling import *  # noqa: F403
from pyframe.nn.modules.rnn import *  # noqa: F403
from pyframe.nn.modules.sparse import *  # noqa: F403
from pyframe.nn.modules.transformer import *  # noqa: F403

__all__ = [
    *module.__all__, *container.__all__, *linear.__all__, *conv.__all__, *pooling.__all__, *normalization.__all__,
    *sparse.__all__, *dropout.__all__, *flatten.__all__, *activation.__all__, *loss.__all__,
    *attention.__all__, *transformer.__all__, *rnn.__all__, *conv_extra.__all__,
    *activation_more.__all__, *distance.__all__, *loss_more.__all__,
    *layers_more.__all__, *padding.__all__,
]  # fmt: skip
