"""``Laplace`` at torch's module path (``pyframe.distributions.laplace``); defined in
:mod:`pyframe.distributions.location_scale`."""

from pyframe.distributions.location_scale import Laplace

__all__ = ["Laplace"]
