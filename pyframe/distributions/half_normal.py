"""``HalfNormal`` at torch's module path (``pyframe.distributions.half_normal``); defined in
:mod:`pyframe.distributions.transformed_families`."""

from pyframe.distributions.transformed_families import HalfNormal

__all__ = ["HalfNormal"]
