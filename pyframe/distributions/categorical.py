"""``Categorical`` at torch's module path (``pyframe.distributions.categorical``); defined in
:mod:`pyframe.distributions.discrete`."""

from pyframe.distributions.discrete import Categorical

__all__ = ["Categorical"]
