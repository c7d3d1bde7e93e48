"""``NegativeBinomial`` at torch's module path (``pyframe.distributions.negative_binomial``); defined in
:mod:`pyframe.distributions.discrete`."""

from pyframe.distributions.discrete import NegativeBinomial

__all__ = ["NegativeBinomial"]
