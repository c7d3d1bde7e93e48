"""``Uniform`` at torch's module path (``pyframe.distributions.uniform``); defined in
:mod:`pyframe.distributions.location_scale`."""

from pyframe.distributions.location_scale import Uniform

__all__ = ["Uniform"]
