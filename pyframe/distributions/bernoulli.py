"""``Bernoulli`` at torch's module path (``pyframe.distributions.bernoulli``); defined in
:mod:`pyframe.distributions.discrete`."""

from pyframe.distributions.discrete import Bernoulli

__all__ = ["Bernoulli"]
