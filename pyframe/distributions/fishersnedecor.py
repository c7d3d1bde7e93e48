"""``FisherSnedecor`` at torch's module path (``pyframe.distributions.fishersnedecor``); defined in
:mod:`pyframe.distributions.gamma_family`."""

from pyframe.distributions.gamma_family import FisherSnedecor

__all__ = ["FisherSnedecor"]
