# A tiny DCGAN in the style of pytorch/examples dcgan: ConvTranspose2d + BatchNorm2d generator,
# Conv2d discriminator, `netG.apply(weights_init)` with `classname.find('Conv')`, then NumPy
# weights so both libraries train from the same numbers.
# compat-tolerance: 1e-3 1e-4
import json

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

nz, ngf, ndf = 8, 8, 8


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 2, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, 1, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, input):
        return self.main(input).view(-1, 1).squeeze(1)


rng = np.random.default_rng(0)
netG, netD = Generator(), Discriminator()
netG.apply(weights_init)
netD.apply(weights_init)
init_std = netG.main[0].weight.data.std().item()
init_bn = netG.main[1].bias.data.abs().sum().item()
with torch.no_grad():
    for p in list(netG.parameters()) + list(netD.parameters()):
        p.copy_(torch.from_numpy(rng.normal(0, 0.1, tuple(p.shape)).astype(np.float32)))

criterion = nn.BCELoss()
optimizerD = optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
history = []
for i in range(6):
    real = torch.from_numpy(rng.uniform(-1, 1, (8, 1, 8, 8)).astype(np.float32))
    b_size = real.size(0)
    netD.zero_grad()
    label = torch.full((b_size,), 1.0, dtype=torch.float)
    output = netD(real)
    errD_real = criterion(output, label)
    errD_real.backward()
    noise = torch.from_numpy(rng.normal(0, 1, (b_size, nz, 1, 1)).astype(np.float32))
    fake = netG(noise)
    label.fill_(0.0)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    optimizerD.step()
    netG.zero_grad()
    label.fill_(1.0)
    errG = criterion(netD(fake), label)
    errG.backward()
    optimizerG.step()
    history.append([(errD_real + errD_fake).item(), errG.item()])
netG.eval()
with torch.no_grad():
    sample = netG(torch.from_numpy(rng.normal(0, 1, (2, nz, 1, 1)).astype(np.float32)))
print(
    "RESULT",
    json.dumps(
        {
            "history": history,
            "fake_shape": list(fake.shape),
            "sample_mean": sample.mean().item(),
            "running_mean": netG.main[1].running_mean.tolist(),
            "_init_std": init_std,
            "init_bn_bias": init_bn,
        }
    ),
)
