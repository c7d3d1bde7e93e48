"""Probability distributions. Same as torch.distributions: ``Normal``, ``Uniform``,
``MultivariateNormal``, ``Bernoulli``, ``Categorical``, ``Independent`` on the ``Distribution`` base, and
``kl_divergence`` between two of a kind."""

from pyframe.distributions.continuous import MultivariateNormal, Normal, Uniform
from pyframe.distributions.discrete import Bernoulli, Categorical
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.independent import Independent
from pyframe.distributions.kl import kl_divergence, register_kl

__all__ = [
    "Distribution", "Normal", "Uniform", "MultivariateNormal", "Bernoulli", "Categorical", "Independent",
    "kl_divergence", "register_kl",
]  # fmt: skip
