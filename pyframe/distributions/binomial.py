"""``Binomial`` at torch's module path (``pyframe.distributions.binomial``); defined in
:mod:`pyframe.distributions.discrete`."""

from pyframe.distributions.discrete import Binomial

__all__ = ["Binomial"]
