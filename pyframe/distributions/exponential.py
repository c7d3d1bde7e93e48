"""``Exponential`` at torch's module path (``pyframe.distributions.exponential``); defined in
:mod:`pyframe.distributions.gamma_family`."""

from pyframe.distributions.gamma_family import Exponential

__all__ = ["Exponential"]
