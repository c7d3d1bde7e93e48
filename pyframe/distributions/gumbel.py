"""``Gumbel`` at torch's module path (``pyframe.distributions.gumbel``); defined in
:mod:`pyframe.distributions.transformed_families`."""

from pyframe.distributions.transformed_families import Gumbel

__all__ = ["Gumbel"]
