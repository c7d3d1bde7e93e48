# pytorch/examples vae, shrunk to 8x8 inputs: reparameterisation with randn_like, BCE + KL loss.
# Sampling differs between libraries, so only the deterministic parts are compared.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.utils.data
from torch import nn, optim
from torch.nn import functional as F


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar) if self.training else mu
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return BCE + KLD


torch.manual_seed(1)
rng = np.random.default_rng(0)
images = (rng.random((256, 1, 8, 8)) < 0.3).astype(np.float32)
images[:128, :, :4] = 1.0
dataset = torch.utils.data.TensorDataset(torch.from_numpy(images), torch.zeros(256, dtype=torch.long))
loader = torch.utils.data.DataLoader(dataset, batch_size=32, shuffle=True)

model = VAE()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.2, 0.2, tuple(p.shape)).astype(np.float32)))
optimizer = optim.Adam(model.parameters(), lr=1e-2)

model.eval()
with torch.no_grad():
    x0 = torch.from_numpy(images[:32])
    recon, mu, logvar = model(x0)
    eval_loss_before = loss_function(recon, x0, mu, logvar).item()

epoch_losses = []
for epoch in range(3):
    model.train()
    train_loss = 0
    for data, _ in loader:
        optimizer.zero_grad()
        recon_batch, mu, logvar = model(data)
        loss = loss_function(recon_batch, data, mu, logvar)
        loss.backward()
        train_loss += loss.item()
        optimizer.step()
    epoch_losses.append(train_loss / len(loader.dataset))

with torch.no_grad():
    sample = model.decode(torch.randn(16, 4))
assert sample.shape == (16, 64) and float(sample.min()) >= 0 and float(sample.max()) <= 1
print(f"epoch losses {epoch_losses}")
assert epoch_losses[-1] < epoch_losses[0]
print("RESULT", json.dumps({"eval_loss_before": eval_loss_before, "_epoch_losses": epoch_losses}))
