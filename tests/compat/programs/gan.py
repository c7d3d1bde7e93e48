# A small GAN in the style of pytorch/examples dcgan: BCELoss, detach() for the discriminator
# step, two Adam optimizers with betas (0.5, 0.999), noise drawn from NumPy.
# compat-tolerance: 1e-3 1e-4
import json

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

nz = 4


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Linear(nz, 32), nn.BatchNorm1d(32), nn.LeakyReLU(0.2, inplace=True), nn.Linear(32, 2), nn.Tanh()
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(2, 32), nn.LeakyReLU(0.2, inplace=True), nn.Linear(32, 1), nn.Sigmoid())

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


def weights_from_numpy(m, rng):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.from_numpy(rng.normal(0, 0.2, tuple(p.shape)).astype(np.float32)))


rng = np.random.default_rng(0)
netG, netD = Generator(), Discriminator()
weights_from_numpy(netG, rng)
weights_from_numpy(netD, rng)
criterion = nn.BCELoss()
real_label, fake_label = 1.0, 0.0
optimizerD = optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))

history = []
for i in range(40):
    angles = rng.uniform(0, 2 * np.pi, 32)
    real = torch.from_numpy(np.stack([np.cos(angles), np.sin(angles)], 1).astype(np.float32) * 0.8)
    b_size = real.size(0)
    netD.zero_grad()
    label = torch.full((b_size,), real_label, dtype=torch.float)
    output = netD(real)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()
    noise = torch.from_numpy(rng.normal(0, 1, (b_size, nz)).astype(np.float32))
    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    errD = errD_real + errD_fake
    optimizerD.step()
    netG.zero_grad()
    label.fill_(real_label)
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    optimizerG.step()
    if i % 8 == 0:
        history.append([errD.item(), errG.item(), D_x])
print(f"[{i}] Loss_D: {errD.item():.4f} Loss_G: {errG.item():.4f} D(x): {D_x:.4f}")
print("RESULT", json.dumps({"history": history}))
