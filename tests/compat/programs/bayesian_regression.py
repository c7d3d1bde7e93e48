# Bayesian linear regression two ways, as in the probabilistic-programming tutorials: the conjugate Gaussian
# posterior in closed form (MultivariateNormal, marginal likelihood, predictive), and mean-field variational
# inference whose reparameterised draws use noise fixed up front, so the ELBO is deterministic; kl_divergence
# between Independent Normals, LowRankMultivariateNormal and a Gamma prior on the noise precision.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
from torch.distributions import Gamma, Independent, LowRankMultivariateNormal, MultivariateNormal, Normal, kl_divergence

torch.set_default_dtype(torch.float64)
rng = np.random.default_rng(2)
n, d = 60, 3
X = torch.from_numpy(np.c_[np.ones(n), rng.normal(size=(n, d - 1))])
w_true = torch.tensor([0.5, -1.0, 2.0])
y = X @ w_true + 0.3 * torch.from_numpy(rng.normal(size=n))

alpha, beta = 1.0, 1 / 0.09  # prior precision, noise precision
prior = MultivariateNormal(torch.zeros(d), precision_matrix=alpha * torch.eye(d))
S_inv = alpha * torch.eye(d) + beta * X.T @ X
post_cov = torch.linalg.inv(S_inv)
post_mean = beta * post_cov @ X.T @ y
posterior = MultivariateNormal(post_mean, covariance_matrix=post_cov)
evidence = MultivariateNormal(torch.zeros(n), covariance_matrix=X @ X.T / alpha + torch.eye(n) / beta)
x_new = torch.tensor([[1.0, 0.3, -0.2], [1.0, -1.0, 1.0]])
pred = Normal(x_new @ post_mean, ((x_new @ post_cov * x_new).sum(-1) + 1 / beta).sqrt())

# variational: q(w) = N(m, diag(softplus(rho))^2), noise fixed up front
m = torch.zeros(d, requires_grad=True)
rho = torch.full((d,), -1.0, requires_grad=True)
eps = torch.from_numpy(rng.normal(size=(200, 16, d)))
opt = torch.optim.Adam([m, rho], lr=0.05)
elbos = []
for step in range(200):
    opt.zero_grad()
    q = Independent(Normal(m, torch.nn.functional.softplus(rho)), 1)
    w = m + eps[step] * torch.nn.functional.softplus(rho)
    loglik = Normal(w @ X.T, beta**-0.5).log_prob(y).sum(-1).mean()
    kl = kl_divergence(q, Independent(Normal(torch.zeros(d), alpha**-0.5 * torch.ones(d)), 1))
    loss = kl - loglik
    loss.backward()
    opt.step()
    elbos.append(-loss.item())

lowrank = LowRankMultivariateNormal(post_mean, 0.1 * torch.ones(d, 1), post_cov.diagonal())
noise_prior = Gamma(torch.tensor(2.0), torch.tensor(0.5))
print("RESULT", json.dumps({
    "post_mean": post_mean.tolist(), "post_entropy": posterior.entropy().item(),
    "log_evidence": evidence.log_prob(y).item(), "prior_log_prob_true": prior.log_prob(w_true).item(),
    "pred_mean": pred.mean.tolist(), "pred_std": pred.stddev.tolist(), "pred_cdf": pred.cdf(torch.zeros(2)).tolist(),
    "elbo_first": elbos[:20], "vi_mean": m.tolist(),
    "kl_post_prior": kl_divergence(posterior, prior).item(),
    "kl_lowrank_post": kl_divergence(lowrank, posterior).item(), "lowrank_log_prob": lowrank.log_prob(w_true).item(),
    "noise_log_prob": noise_prior.log_prob(torch.tensor(beta)).item(),
    "noise_entropy": noise_prior.entropy().item(),
}))  # fmt: skip
