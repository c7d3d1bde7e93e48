"""``InverseGamma`` at torch's module path (``pyframe.distributions.inverse_gamma``); defined in
:mod:`pyframe.distributions.transformed_families`."""

from pyframe.distributions.transformed_families import InverseGamma

__all__ = ["InverseGamma"]
