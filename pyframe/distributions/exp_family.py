"""``ExponentialFamily``: families whose density is ``exp(<t(x), theta> - F(theta) + k(x))``."""

from __future__ import annotations

from pyframe import autograd
from pyframe.distributions.distribution import Distribution
from pyframe.tensor import Tensor

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    r"""Base of the exponential families, :math:`p(x; \theta) = \exp(\langle t(x), \theta\rangle - F(\theta) +
    k(x))`. A family gives its natural parameters :math:`\theta` (``_natural_params``), its log-normaliser
    :math:`F` (``_log_normalizer``) and :math:`E[k(x)]` (``_mean_carrier_measure``); the entropy then follows
    from :math:`F` and its gradient, :math:`H = F(\theta) - \langle \theta, \nabla F(\theta)\rangle - E[k(x)]`,
    and the KL divergence between two members is the Bregman divergence of :math:`F`.
    """

    @property
    def _natural_params(self) -> tuple[Tensor, ...]:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params: Tensor) -> Tensor:
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float | Tensor:
        raise NotImplementedError

    def entropy(self) -> Tensor:
        """The entropy from the log-normaliser and its gradient (differentiable: the gradient is taken with
        ``create_graph=True``)."""
        theta = [p.detach().requires_grad_() for p in self._natural_params]
        f = self._log_normalizer(*theta)
        grads = autograd.grad(f.sum(), theta, create_graph=True)
        inner = sum((t * g).reshape(self._batch_shape + (-1,)).sum(-1) for t, g in zip(theta, grads, strict=True))
        return f - inner - self._mean_carrier_measure
