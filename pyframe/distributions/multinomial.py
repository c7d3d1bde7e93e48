"""``Multinomial`` at torch's module path (``pyframe.distributions.multinomial``); defined in
:mod:`pyframe.distributions.discrete`."""

from pyframe.distributions.discrete import Multinomial

__all__ = ["Multinomial"]
