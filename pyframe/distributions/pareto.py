"""``Pareto`` at torch's module path (``pyframe.distributions.pareto``); defined in
:mod:`pyframe.distributions.transformed_families`."""

from pyframe.distributions.transformed_families import Pareto

__all__ = ["Pareto"]
