"""``HalfCauchy`` at torch's module path (``pyframe.distributions.half_cauchy``); defined in
:mod:`pyframe.distributions.transformed_families`."""

from pyframe.distributions.transformed_families import HalfCauchy

__all__ = ["HalfCauchy"]
