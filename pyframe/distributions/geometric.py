"""``Geometric`` at torch's module path (``pyframe.distributions.geometric``); defined in
:mod:`pyframe.distributions.discrete`."""

from pyframe.distributions.discrete import Geometric

__all__ = ["Geometric"]
