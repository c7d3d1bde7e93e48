# A VAE written with torch.distributions, as in the Pyro-style tutorials: the encoder returns an
# Independent(Normal), the decoder an Independent(Bernoulli(logits=...)), the ELBO is log_prob of the data at a
# reparameterised draw minus kl_divergence(q, prior); the noise of the draws is fixed up front (loc + scale *
# eps, the same as rsample) so both libraries train the same model; rsample itself is checked, not compared.
# Then importance-weighted log-likelihood estimates (IWAE bound) with the same fixed noise.
# compat-tolerance: 1e-4 1e-5
import json
import math

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Bernoulli, Independent, Normal, kl_divergence


class VAE(nn.Module):
    def __init__(self, d=16, z=2):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(d, 32), nn.Tanh(), nn.Linear(32, 2 * z))
        self.dec = nn.Sequential(nn.Linear(z, 32), nn.Tanh(), nn.Linear(32, d))
        self.z = z

    def q(self, x):
        loc, log_scale = self.enc(x).chunk(2, -1)
        return Independent(Normal(loc, log_scale.exp()), 1)

    def p_x(self, z):
        return Independent(Bernoulli(logits=self.dec(z)), 1)

    def prior(self):
        return Independent(Normal(torch.zeros(self.z), torch.ones(self.z)), 1)


rng = np.random.default_rng(12)
protos = (rng.random((3, 16)) < 0.5).astype(np.float32)
data = torch.from_numpy(np.abs(protos[rng.integers(0, 3, 192)] - (rng.random((192, 16)) < 0.05)).astype(np.float32))
eps = torch.from_numpy(rng.normal(size=(40, 192, 2)).astype(np.float32))
model = VAE()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
elbos = []
for step in range(40):
    q = model.q(data)
    z = q.mean + q.stddev * eps[step]
    elbo = (model.p_x(z).log_prob(data) - kl_divergence(q, model.prior())).mean()
    opt.zero_grad()
    (-elbo).backward()
    opt.step()
    elbos.append(elbo.item())

with torch.no_grad():
    x = data[:4]
    q = model.q(x)
    k_eps = torch.from_numpy(rng.normal(size=(16, 4, 2)).astype(np.float32))
    zk = q.mean + q.stddev * k_eps
    log_w = model.p_x(zk).log_prob(x) + model.prior().log_prob(zk) - q.log_prob(zk)
    iwae = (torch.logsumexp(log_w, 0) - math.log(16)).tolist()
    drawn = q.rsample((5,))
    assert drawn.shape == (5, 4, 2) and q.has_rsample and not model.p_x(zk).has_rsample
    entropy = q.entropy().tolist()
assert elbos[-1] > elbos[0]
shapes = [list(q.batch_shape), list(q.event_shape)]
print("RESULT", json.dumps({"elbo": elbos[:12], "iwae": iwae, "entropy": entropy, "batch_event": shapes,
                            "_elbo_last": elbos[-1]}))  # fmt: skip
