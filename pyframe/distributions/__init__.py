"""Probability distributions. Same as torch.distributions: ``Normal``, ``Uniform``,
``MultivariateNormal``, ``Bernoulli``, ``Categorical`` on the ``Distribution`` base."""

from pyframe.distributions.continuous import MultivariateNormal, Normal, Uniform
from pyframe.distributions.discrete import Bernoulli, Categorical
from pyframe.distributions.distribution import Distribution

__all__ = ["Distribution", "Normal", "Uniform", "MultivariateNormal", "Bernoulli", "Categorical"]
