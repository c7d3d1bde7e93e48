"""``Kumaraswamy`` at torch's module path (``pyframe.distributions.kumaraswamy``); defined in
:mod:`pyframe.distributions.transformed_families`."""

from pyframe.distributions.transformed_families import Kumaraswamy

__all__ = ["Kumaraswamy"]
