"""``Chi2`` at torch's module path (``pyframe.distributions.chi2``); defined in
:mod:`pyframe.distributions.gamma_family`."""

from pyframe.distributions.gamma_family import Chi2

__all__ = ["Chi2"]
