# A mixture density network (Bishop 1994), as in the torch.distributions examples: a network outputs the
# weights, means and scales of a Gaussian mixture, MixtureSameFamily(Categorical, Independent(Normal)) gives the
# negative log-likelihood; then the fitted mixture's mean, variance, cdf and a Gaussian mixture fitted by EM with
# the same distributions' log_prob.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical, Independent, MixtureSameFamily, Normal


class MDN(nn.Module):
    def __init__(self, k=3):
        super().__init__()
        self.k = k
        self.body = nn.Sequential(nn.Linear(1, 24), nn.Tanh())
        self.pi = nn.Linear(24, k)
        self.mu = nn.Linear(24, k)
        self.sigma = nn.Linear(24, k)

    def forward(self, x):
        h = self.body(x)
        mix = Categorical(logits=self.pi(h))
        comp = Independent(
            Normal(self.mu(h).unsqueeze(-1), nn.functional.softplus(self.sigma(h)).unsqueeze(-1) + 1e-3), 1
        )
        return MixtureSameFamily(mix, comp)


rng = np.random.default_rng(1)
x = rng.uniform(-1, 1, (200, 1)).astype(np.float32)
y = (np.sin(3 * x) + 0.3 * x * rng.normal(size=x.shape) + np.where(rng.random(x.shape) < 0.3, 1.0, 0.0)).astype(
    np.float32
)
xt, yt = torch.from_numpy(x), torch.from_numpy(y)

model = MDN()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.5, 0.5, tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
losses = []
for step in range(40):
    opt.zero_grad()
    loss = -model(xt).log_prob(yt).mean()
    loss.backward()
    opt.step()
    losses.append(loss.item())

with torch.no_grad():
    d = model(xt[:4])
    stats = {"mean": d.mean.tolist(), "variance": d.variance.tolist(), "log_prob": d.log_prob(yt[:4]).tolist(),
             "batch_shape": list(d.batch_shape), "event_shape": list(d.event_shape)}  # fmt: skip

# EM for a 1-d two-component mixture, responsibilities from log_prob
data = torch.from_numpy(np.concatenate([rng.normal(-2, 0.5, 150), rng.normal(1.5, 1.0, 250)]).astype(np.float64))
w, mu, sd = (
    torch.tensor([0.5, 0.5], dtype=torch.float64),
    torch.tensor([-1.0, 1.0], dtype=torch.float64),
    torch.ones(2, dtype=torch.float64),
)
em_ll = []
for it in range(15):
    logp = Normal(mu, sd).log_prob(data.unsqueeze(-1)) + w.log()
    ll = torch.logsumexp(logp, -1)
    em_ll.append(ll.sum().item())
    r = (logp - ll.unsqueeze(-1)).exp()
    nk = r.sum(0)
    w, mu = nk / len(data), (r * data.unsqueeze(-1)).sum(0) / nk
    sd = ((r * (data.unsqueeze(-1) - mu) ** 2).sum(0) / nk).sqrt()
gmm = MixtureSameFamily(Categorical(probs=w), Normal(mu, sd))
assert all(b >= a - 1e-9 for a, b in zip(em_ll, em_ll[1:]))  # EM never decreases the likelihood
print("RESULT", json.dumps({
    "losses": losses[:12], "stats": stats, "em_loglik": em_ll, "em_params": [w.tolist(), mu.tolist(), sd.tolist()],
    "gmm_log_prob": gmm.log_prob(torch.tensor([-2.0, 0.0, 1.5], dtype=torch.float64)).tolist(),
    "_losses_last": losses[-1], "_gmm_sample": gmm.sample((3,)).tolist(),
}))  # fmt: skip
