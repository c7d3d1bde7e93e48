"""``OneHotCategorical``, ``OneHotCategoricalStraightThrough``
at torch's module path (``pyframe.distributions.one_hot_categorical``); defined in
:mod:`pyframe.distributions.discrete`."""

from pyframe.distributions.discrete import OneHotCategorical, OneHotCategoricalStraightThrough

__all__ = ["OneHotCategorical", "OneHotCategoricalStraightThrough"]
