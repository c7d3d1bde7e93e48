"""``LogNormal`` at torch's module path (``pyframe.distributions.log_normal``); defined in
:mod:`pyframe.distributions.transformed_families`."""

from pyframe.distributions.transformed_families import LogNormal

__all__ = ["LogNormal"]
