"""``Normal`` at torch's module path (``pyframe.distributions.normal``); defined in
:mod:`pyframe.distributions.location_scale`."""

from pyframe.distributions.location_scale import Normal

__all__ = ["Normal"]
