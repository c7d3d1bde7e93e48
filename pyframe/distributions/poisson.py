"""``Poisson`` at torch's module path (``pyframe.distributions.poisson``); defined in
:mod:`pyframe.distributions.discrete`."""

from pyframe.distributions.discrete import Poisson

__all__ = ["Poisson"]
