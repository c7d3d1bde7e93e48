# WGAN-GP in the style of the improved-WGAN reference code on 2-D toy data: a critic and a generator (MLPs),
# Adam(betas=(0.5, 0.9)), five critic steps per generator step, and the gradient penalty taken with
# torch.autograd.grad on the interpolated points -- a non-leaf input, with create_graph=True -- whose norm
# enters the critic's loss. Weights and data come from NumPy; the interpolation weights and the noise too.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(0)


def mlp(sizes):
    layers = []
    for i in range(len(sizes) - 1):
        lin = nn.Linear(sizes[i], sizes[i + 1])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(rng.normal(0, 0.4, (sizes[i + 1], sizes[i])).astype(np.float32)))
            lin.bias.copy_(torch.from_numpy(rng.normal(0, 0.1, sizes[i + 1]).astype(np.float32)))
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


G, D = mlp([2, 16, 16, 2]), mlp([2, 16, 16, 1])
opt_g = torch.optim.Adam(G.parameters(), lr=1e-3, betas=(0.5, 0.9))
opt_d = torch.optim.Adam(D.parameters(), lr=1e-3, betas=(0.5, 0.9))
centers = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]], dtype=np.float32)
LAMBDA, BATCH = 10.0, 32


def real_batch():
    idx = rng.integers(0, 4, BATCH)
    return torch.from_numpy(centers[idx] + rng.normal(0, 0.05, (BATCH, 2)).astype(np.float32))


def gradient_penalty(critic, real, fake):
    alpha = torch.from_numpy(rng.uniform(0, 1, (BATCH, 1)).astype(np.float32)).expand_as(real)
    interpolates = alpha * real + (1 - alpha) * fake
    interpolates.requires_grad_(True)
    out = critic(interpolates)
    grads = torch.autograd.grad(
        outputs=out,
        inputs=interpolates,
        grad_outputs=torch.ones_like(out),
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]
    return ((grads.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA


d_losses, g_losses, penalties = [], [], []
for it in range(15):
    for _ in range(5):
        real = real_batch()
        noise = torch.from_numpy(rng.normal(0, 1, (BATCH, 2)).astype(np.float32))
        with torch.no_grad():
            fake = G(noise)
        opt_d.zero_grad()
        gp = gradient_penalty(D, real, fake)
        d_loss = D(fake).mean() - D(real).mean() + gp
        d_loss.backward()
        opt_d.step()
    noise = torch.from_numpy(rng.normal(0, 1, (BATCH, 2)).astype(np.float32))
    opt_g.zero_grad()
    g_loss = -D(G(noise)).mean()
    g_loss.backward()
    opt_g.step()
    d_losses.append(d_loss.item())
    g_losses.append(g_loss.item())
    penalties.append(gp.item())

# a second penalty from the same interpolation: the graph behind a non-leaf input survives autograd.grad
x = torch.from_numpy(centers).requires_grad_(True)
h = x.exp()
(g1,) = torch.autograd.grad((h * h).sum(), h)
(g2,) = torch.autograd.grad((h * 3).sum(), h)
(h * 3).sum().backward()
print(
    "RESULT",
    json.dumps(
        {
            "d": d_losses,
            "g": g_losses,
            "gp": penalties,
            "g1": g1.tolist(),
            "g2": g2.tolist(),
            "x_grad": x.grad.tolist(),
            "w": G[0].weight.flatten().tolist(),
        }
    ),
)
