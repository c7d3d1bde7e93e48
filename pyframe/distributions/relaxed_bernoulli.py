"""``LogitRelaxedBernoulli``, ``RelaxedBernoulli``
at torch's module path (``pyframe.distributions.relaxed_bernoulli``); defined in
:mod:`pyframe.distributions.relaxed`."""

from pyframe.distributions.relaxed import LogitRelaxedBernoulli, RelaxedBernoulli

__all__ = ["LogitRelaxedBernoulli", "RelaxedBernoulli"]
