"""``Cauchy`` at torch's module path (``pyframe.distributions.cauchy``); defined in
:mod:`pyframe.distributions.location_scale`."""

from pyframe.distributions.location_scale import Cauchy

__all__ = ["Cauchy"]
