# A normalizing flow in the style of the pyro/torch.distributions tutorials: a RealNVP-like stack of affine
# coupling layers written as torch.distributions.transforms.Transform subclasses with parameters, composed with
# ComposeTransform and pushed through TransformedDistribution; fitted by maximum likelihood on a two-moons-like
# set. Sampling differs between libraries, so samples are only checked by the program itself.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.distributions as D
import torch.nn as nn
from torch.distributions import constraints
from torch.distributions.transforms import AffineTransform, ComposeTransform, SigmoidTransform, Transform


class Coupling(Transform, nn.Module):
    """y1 = x1; y2 = x2 * exp(s(x1)) + t(x1), with x1 the masked half."""

    domain = constraints.real_vector
    codomain = constraints.real_vector
    bijective = True

    def __init__(self, flip):
        Transform.__init__(self)
        nn.Module.__init__(self)
        self.flip = flip
        self.net = nn.Sequential(nn.Linear(1, 16), nn.Tanh(), nn.Linear(16, 2))

    def __hash__(self):
        return nn.Module.__hash__(self)

    def _split(self, x):
        a, b = x[..., :1], x[..., 1:]
        return (b, a) if self.flip else (a, b)

    def _join(self, a, b):
        return torch.cat([b, a], -1) if self.flip else torch.cat([a, b], -1)

    def _call(self, x):
        a, b = self._split(x)
        s, t = self.net(a).chunk(2, -1)
        return self._join(a, b * torch.exp(torch.tanh(s)) + t)

    def _inverse(self, y):
        a, b = self._split(y)
        s, t = self.net(a).chunk(2, -1)
        return self._join(a, (b - t) * torch.exp(-torch.tanh(s)))

    def log_abs_det_jacobian(self, x, y):
        a, _ = self._split(x)
        s, _ = self.net(a).chunk(2, -1)
        return torch.tanh(s).sum(-1)


rng = np.random.default_rng(0)
theta = rng.uniform(0, np.pi, 256)
moons = np.stack([np.cos(theta), np.sin(theta)], 1)
moons[128:] = np.stack([1 - np.cos(theta[128:]), 0.5 - np.sin(theta[128:])], 1)
data = torch.from_numpy((moons + 0.05 * rng.normal(size=moons.shape)).astype(np.float32))

torch.manual_seed(0)
layers = [Coupling(flip=i % 2 == 1) for i in range(4)]
for layer in layers:
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
base = D.Independent(D.Normal(torch.zeros(2), torch.ones(2)), 1)
flow = D.TransformedDistribution(base, ComposeTransform([AffineTransform(torch.zeros(2), 1.5, event_dim=1), *layers]))
params = [p for layer in layers for p in layer.parameters()]
opt = torch.optim.Adam(params, lr=5e-3)

nll = []
for step in range(60):
    opt.zero_grad()
    loss = -flow.log_prob(data).mean()
    loss.backward()
    opt.step()
    nll.append(loss.item())

with torch.no_grad():
    x = data[:5]
    y = flow.transforms[-1](x)
    roundtrip = (flow.transforms[-1].inv(y) - x).abs().max().item()
    samples = flow.sample((500,))
    lp = flow.log_prob(data[:8])
    squashed = D.TransformedDistribution(D.Normal(0.0, 1.0), [SigmoidTransform()])
    sq_lp = squashed.log_prob(torch.tensor([0.1, 0.5, 0.9])).tolist()
assert nll[-1] < nll[0] and roundtrip < 1e-5 and samples.shape == (500, 2)
print("RESULT", json.dumps({
    "nll_first": nll[:10], "log_prob_after": lp.tolist(), "roundtrip_ok": roundtrip < 1e-5, "squashed_log_prob": sq_lp,
    "event_shape": list(flow.event_shape), "_nll_last": nll[-1], "_sample_mean": samples.mean(0).tolist(),
}))  # fmt: skip
