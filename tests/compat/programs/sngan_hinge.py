# An SNGAN in the style of public GAN code: a discriminator whose Conv2d and Linear layers are wrapped in
# `nn.utils.spectral_norm` (the hook form), hinge losses, a generator initialised by a `weights_init` that tests
# `isinstance(m, nn.modules.batchnorm._BatchNorm)` and uses nn.init's old names, then NumPy weights (and
# power-iteration vectors) so both libraries train from the same numbers; `remove_spectral_norm` for export.
# compat-tolerance: 1e-3 1e-4
import json
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm
from torch.nn.modules.conv import _ConvNd

warnings.simplefilter("ignore", FutureWarning)  # nn.init.normal / xavier_uniform are deprecated names
nz = 6
SN = nn.utils.spectral_norm


def weights_init(m):
    if isinstance(m, _ConvNd):
        nn.init.normal(m.weight, 0.0, 0.02)
    elif isinstance(m, nn.modules.batchnorm._BatchNorm):
        nn.init.normal(m.weight, 1.0, 0.02)
        nn.init.constant(m.bias, 0.0)
    elif isinstance(m, nn.Linear):
        nn.init.xavier_uniform(m.weight)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(nz, 8 * 2 * 2)
        self.net = nn.Sequential(
            nn.BatchNorm2d(8), nn.ReLU(), nn.ConvTranspose2d(8, 4, 4, 2, 1), nn.BatchNorm2d(4), nn.ReLU(),
            nn.ConvTranspose2d(4, 1, 4, 2, 1), nn.Tanh(),
        )  # fmt: skip

    def forward(self, z):
        return self.net(self.fc(z).view(-1, 8, 2, 2))


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = SN(nn.Conv2d(1, 4, 3, 2, 1))
        self.conv2 = SN(nn.Conv2d(4, 8, 3, 2, 1))
        self.fc = SN(nn.Linear(8 * 2 * 2, 1))

    def forward(self, x):
        x = F.leaky_relu(self.conv1(x), 0.1)
        x = F.leaky_relu(self.conv2(x), 0.1)
        return self.fc(x.flatten(1))


rng = np.random.default_rng(0)
G, D = Generator(), Discriminator()
G.apply(weights_init)
D.apply(weights_init)
bn_count = sum(isinstance(m, _BatchNorm) for m in G.modules())
sn_keys = sorted(k for k in D.state_dict() if k.startswith("conv1."))
state = {}
for k, v in list(G.state_dict().items()) + [("D." + k, v) for k, v in D.state_dict().items()]:
    if not v.is_floating_point() or k.endswith(("running_mean", "running_var")):
        continue
    a = rng.normal(0, 0.3, tuple(v.shape)).astype(np.float32)
    if k.endswith(("_u", "_v")):
        a /= np.linalg.norm(a)
    state[k] = torch.from_numpy(a)
G.load_state_dict({k: v for k, v in state.items() if not k.startswith("D.")}, strict=False)
D.load_state_dict({k[2:]: v for k, v in state.items() if k.startswith("D.")})

optG = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.0, 0.9))
optD = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.0, 0.9))
history = []
for step in range(4):
    real = torch.from_numpy(rng.uniform(-1, 1, (6, 1, 8, 8)).astype(np.float32))
    z = torch.from_numpy(rng.normal(size=(6, nz)).astype(np.float32))
    optD.zero_grad()
    fake = G(z)
    loss_d = F.relu(1.0 - D(real)).mean() + F.relu(1.0 + D(fake.detach())).mean()
    loss_d.backward()
    optD.step()
    optG.zero_grad()
    loss_g = -D(fake).mean()
    loss_g.backward()
    gnorm = nn.utils.clip_grad_norm_(G.parameters(), 5.0)
    optG.step()
    history.append([loss_d.item(), loss_g.item(), gnorm.item()])

sigma = torch.linalg.matrix_norm(D.fc.weight.detach(), ord=2).item()  # ~1 after the power iterations
D.eval()
with torch.no_grad():
    score = D(real).mean().item()
nn.utils.remove_spectral_norm(D.conv1)
print(
    "RESULT",
    json.dumps(
        {
            "history": history,
            "bn_count": bn_count,
            "sn_keys": sn_keys,
            "u": D.conv2.weight_u.tolist(),
            "eval_score": score,
            "conv1_keys": sorted(D.conv1.state_dict()),
            "_sigma": sigma,
        }
    ),
)
