# The torch.func tutorials' recipes: per-sample gradients (functional_call + grad + vmap over the batch, checked
# against a loop of ordinary backward passes), model ensembling by stacking parameters, a Jacobian and a
# Hessian-vector product of a small network with torch.func and torch.autograd.functional, and one step of
# per-sample-gradient clipping as DP-SGD does. Weights and data come from NumPy.
# compat-tolerance: 1e-5 1e-6
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call, grad, hessian, jacrev, vmap

rng = np.random.default_rng(0)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(5, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def init(model, seed):
    r = np.random.default_rng(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(r.normal(0, 0.5, tuple(p.shape)).astype(np.float32)))
    return model


model = init(Net(), 1)
data = torch.from_numpy(rng.normal(size=(6, 5)).astype(np.float32))
targets = torch.from_numpy(rng.integers(0, 3, 6))
params = {k: v.detach() for k, v in model.named_parameters()}


def loss_one(p, x, y):
    out = functional_call(model, p, (x.unsqueeze(0),))
    return F.cross_entropy(out, y.unsqueeze(0))


per_sample = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, data, targets)
loop = []
for i in range(6):
    model.zero_grad()
    F.cross_entropy(model(data[i : i + 1]), targets[i : i + 1]).backward()
    loop.append(model.fc1.weight.grad.clone())
max_diff = max((per_sample["fc1.weight"][i] - loop[i]).abs().max().item() for i in range(6))

# DP-SGD: clip each sample's gradient to norm 1, average, step
norms = torch.stack([torch.cat([g[i].flatten() for g in per_sample.values()]).norm() for i in range(6)])
scale = (1.0 / norms).clamp(max=1.0)
clipped = {k: (g * scale.view(-1, *([1] * (g.dim() - 1)))).mean(0) for k, g in per_sample.items()}
with torch.no_grad():
    for k, p in model.named_parameters():
        p -= 0.1 * clipped[k]

# an ensemble of three models evaluated at once from stacked parameters
models = [init(Net(), s) for s in (2, 3, 4)]
stacked = {k: torch.stack([dict(m.named_parameters())[k].detach() for m in models]) for k in params}
ens = vmap(lambda p, x: functional_call(model, p, (x,)), in_dims=(0, None))(stacked, data[:2])

x0 = data[0]
jac = jacrev(lambda x: model(x))(x0)
hess = hessian(lambda x: torch.tanh(model.fc1(x)).sum())(x0)
_, hvp = torch.autograd.functional.hvp(lambda x: (model(x) ** 2).sum(), x0, torch.ones(5))

print(
    "RESULT",
    json.dumps(
        {
            "per_sample_norms": norms.tolist(),
            "_max_loop_diff": max_diff,
            "fc1": model.fc1.weight.flatten().tolist(),
            "ensemble": ens.flatten().tolist(),
            "jac": jac.flatten().tolist(),
            "hess": hess.flatten().tolist(),
            "hvp": hvp.tolist(),
        }
    ),
)
assert max_diff < 1e-5, max_diff
