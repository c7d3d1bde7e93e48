"""``GeneralizedPareto`` at torch's module path (``pyframe.distributions.generalized_pareto``); defined in
:mod:`pyframe.distributions.location_scale`."""

from pyframe.distributions.location_scale import GeneralizedPareto

__all__ = ["GeneralizedPareto"]
