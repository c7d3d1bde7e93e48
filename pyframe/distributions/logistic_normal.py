"""``LogisticNormal`` at torch's module path (``pyframe.distributions.logistic_normal``); defined in
:mod:`pyframe.distributions.transformed_families`."""

from pyframe.distributions.transformed_families import LogisticNormal

__all__ = ["LogisticNormal"]
