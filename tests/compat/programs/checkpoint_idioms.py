# Everyday idioms around a small model: nn.ModuleDict heads, register_buffer, F.one_hot targets,
# masked_fill / scatter_ / einsum, a checkpoint dict with the optimizer state saved and loaded into
# fresh objects, and training that resumes to the same numbers.
# compat-tolerance: 1e-4 1e-5
import io
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(10, 6, padding_idx=0)
        self.norm = nn.LayerNorm(6)
        self.heads = nn.ModuleDict({"cls": nn.Linear(6, 3), "reg": nn.Linear(6, 1)})
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, tokens):
        mask = tokens == 0
        h = F.gelu(self.norm(self.embed(tokens)))
        h = h.masked_fill(mask.unsqueeze(-1), 0.0)
        pooled = h.sum(1) / (~mask).sum(1, keepdim=True).clamp(min=1)
        if self.training:
            self.steps += 1
        return self.heads["cls"](pooled), self.heads["reg"](pooled).squeeze(-1)


def weights(model, rng):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(rng.normal(0, 0.4, tuple(p.shape)).astype(np.float32)))


def train(model, opt, tokens, labels, target, n):
    out = []
    for _ in range(n):
        logits, value = model(tokens)
        soft = F.one_hot(labels, num_classes=3).float() * 0.9 + 0.1 / 3
        loss = -(soft * F.log_softmax(logits, dim=1)).sum(1).mean() + F.mse_loss(value, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
        out.append(loss.item())
    return out


rng = np.random.default_rng(0)
tokens = torch.from_numpy(rng.integers(0, 10, (8, 5)))
labels = torch.from_numpy(rng.integers(0, 3, 8))
target = torch.from_numpy(rng.normal(0, 1, 8).astype(np.float32))
model = Net()
weights(model, rng)
opt = torch.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.01)
first = train(model, opt, tokens, labels, target, 3)
buf = io.BytesIO()
torch.save({"epoch": 3, "model": model.state_dict(), "optimizer": opt.state_dict()}, buf)
buf.seek(0)
ckpt = torch.load(buf)
fresh = Net()
fresh.load_state_dict(ckpt["model"])
opt2 = torch.optim.AdamW(fresh.parameters(), lr=0.5)
opt2.load_state_dict(ckpt["optimizer"])
resumed = train(fresh, opt2, tokens, labels, target, 3)
continued = train(model, opt, tokens, labels, target, 3)

scores = torch.zeros(3, 4).scatter_(1, torch.tensor([[0], [2], [3]]), 1.0)
gram = torch.einsum("ij,kj->ik", scores, scores)
fresh.eval()
with torch.no_grad():
    logits, _ = fresh(tokens)
    _, predicted = torch.max(logits.data, 1)
print(
    "RESULT",
    json.dumps(
        {
            "first": first,
            "resumed": resumed,
            "continued": continued,
            "steps": fresh.steps.item(),
            "lr": opt2.param_groups[0]["lr"],
            "epoch": ckpt["epoch"],
            "gram": gram.tolist(),
            "predicted": predicted.tolist(),
            "pad_row": fresh.embed.weight[0].abs().sum().item(),
        }
    ),
)
