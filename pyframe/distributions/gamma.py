"""``Gamma`` at torch's module path (``pyframe.distributions.gamma``); defined in
:mod:`pyframe.distributions.gamma_family`."""

from pyframe.distributions.gamma_family import Gamma

__all__ = ["Gamma"]
