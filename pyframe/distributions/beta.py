"""``Beta`` at torch's module path (``pyframe.distributions.beta``); defined in
:mod:`pyframe.distributions.gamma_family`."""

from pyframe.distributions.gamma_family import Beta

__all__ = ["Beta"]
