"""``Weibull`` at torch's module path (``pyframe.distributions.weibull``); defined in
:mod:`pyframe.distributions.transformed_families`."""

from pyframe.distributions.transformed_families import Weibull

__all__ = ["Weibull"]
