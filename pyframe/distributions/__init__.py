"""Probability distributions. Same as torch.distributions: the families (one module each, at torch's paths:
``pyframe.distributions.normal.Normal``), ``constraints``, ``transforms`` and ``TransformedDistribution``,
``biject_to``/``transform_to``, and the KL registry (``kl_divergence``, ``register_kl``).

The families are grouped by how they are built (``discrete``: the probs/logits families; ``gamma_family``;
``location_scale``; ``transformed_families``; ``relaxed``), and each is importable from torch's module path too.
Samples come from pyframe's generator (``manual_seed``): the same distributions as torch's, other numbers.
Gamma, Poisson and binomial draws (and with them Beta, Dirichlet, Chi2, StudentT, Binomial, Poisson) run in the
C core; ``rsample`` is reparameterised wherever torch's is (Gamma's through the implicit gradient)."""

from pyframe.distributions import constraints as constraints
from pyframe.distributions import transforms as transforms
from pyframe.distributions.bernoulli import Bernoulli
from pyframe.distributions.beta import Beta
from pyframe.distributions.binomial import Binomial
from pyframe.distributions.categorical import Categorical
from pyframe.distributions.cauchy import Cauchy
from pyframe.distributions.chi2 import Chi2
from pyframe.distributions.constraint_registry import biject_to, transform_to
from pyframe.distributions.continuous_bernoulli import ContinuousBernoulli
from pyframe.distributions.dirichlet import Dirichlet
from pyframe.distributions.distribution import Distribution
from pyframe.distributions.exp_family import ExponentialFamily
from pyframe.distributions.exponential import Exponential
from pyframe.distributions.fishersnedecor import FisherSnedecor
from pyframe.distributions.gamma import Gamma
from pyframe.distributions.generalized_pareto import GeneralizedPareto
from pyframe.distributions.geometric import Geometric
from pyframe.distributions.gumbel import Gumbel
from pyframe.distributions.half_cauchy import HalfCauchy
from pyframe.distributions.half_normal import HalfNormal
from pyframe.distributions.independent import Independent
from pyframe.distributions.inverse_gamma import InverseGamma
from pyframe.distributions.kl import kl_divergence, register_kl
from pyframe.distributions.kumaraswamy import Kumaraswamy
from pyframe.distributions.laplace import Laplace
from pyframe.distributions.lkj_cholesky import LKJCholesky
from pyframe.distributions.log_normal import LogNormal
from pyframe.distributions.logistic_normal import LogisticNormal
from pyframe.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
from pyframe.distributions.mixture_same_family import MixtureSameFamily
from pyframe.distributions.multinomial import Multinomial
from pyframe.distributions.multivariate_normal import MultivariateNormal
from pyframe.distributions.negative_binomial import NegativeBinomial
from pyframe.distributions.normal import Normal
from pyframe.distributions.one_hot_categorical import OneHotCategorical, OneHotCategoricalStraightThrough
from pyframe.distributions.pareto import Pareto
from pyframe.distributions.poisson import Poisson
from pyframe.distributions.relaxed_bernoulli import RelaxedBernoulli
from pyframe.distributions.relaxed_categorical import RelaxedOneHotCategorical
from pyframe.distributions.studentT import StudentT
from pyframe.distributions.transformed_distribution import TransformedDistribution
from pyframe.distributions.transforms import *  # noqa: F403
from pyframe.distributions.uniform import Uniform
from pyframe.distributions.von_mises import VonMises
from pyframe.distributions.weibull import Weibull
from pyframe.distributions.wishart import Wishart

__all__ = [
    "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2", "ContinuousBernoulli", "Dirichlet",
    "Distribution", "Exponential", "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric",
    "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "InverseGamma", "Kumaraswamy", "Laplace", "LKJCholesky",
    "LogNormal",
    "LogisticNormal", "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial", "MultivariateNormal",
    "NegativeBinomial", "Normal", "OneHotCategorical", "OneHotCategoricalStraightThrough", "Pareto",
    "RelaxedBernoulli", "RelaxedOneHotCategorical", "StudentT", "Poisson", "Uniform", "VonMises", "Weibull", "Wishart",
    "TransformedDistribution", "biject_to", "kl_divergence", "register_kl", "transform_to",
]  # fmt: skip
__all__.extend(transforms.__all__)
