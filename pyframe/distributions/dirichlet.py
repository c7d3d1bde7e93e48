"""``Dirichlet`` at torch's module path (``pyframe.distributions.dirichlet``); defined in
:mod:`pyframe.distributions.gamma_family`."""

from pyframe.distributions.gamma_family import Dirichlet

__all__ = ["Dirichlet"]
