# A sequence classifier: nn.TransformerEncoder with a padding mask, then nn.MultiheadAttention
# pooling with a learned query, trained with Adam and a OneCycleLR schedule.
# compat-tolerance: 1e-3 1e-4
import json

import numpy as np
import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self, vocab=20, d_model=16, nhead=2, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.query = nn.Parameter(torch.zeros(1, 1, d_model))
        self.pool = nn.MultiheadAttention(d_model, nhead, batch_first=True)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        pad = tokens == 0
        h = self.encoder(self.embed(tokens), src_key_padding_mask=pad)
        q = self.query.expand(tokens.size(0), -1, -1)
        pooled, weights = self.pool(q, h, h, key_padding_mask=pad)
        return self.head(pooled.squeeze(1)), weights


rng = np.random.default_rng(0)
n, length = 96, 10
tokens = rng.integers(1, 20, (n, length))
lengths = rng.integers(4, length + 1, n)
for i, L in enumerate(lengths):
    tokens[i, L:] = 0
labels = (tokens % 3 == 0).sum(1) % 3  # a counting task attention can learn
x, y = torch.from_numpy(tokens), torch.from_numpy(labels)

model = Classifier()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(0, 0.2, tuple(p.shape)).astype(np.float32)))
epochs, batch = 4, 16
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=1e-2, total_steps=epochs * (n // batch))
loss_fn = nn.CrossEntropyLoss()
losses = []
for epoch in range(epochs):
    for i in range(0, n, batch):
        logits, _ = model(x[i : i + batch])
        loss = loss_fn(logits, y[i : i + batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
model.eval()
with torch.no_grad():
    logits, weights = model(x[:4])
assert weights.shape == (4, 1, length)
# padded keys get no attention
assert float(weights[0, 0, lengths[0] :].sum()) == 0.0 if lengths[0] < length else True
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
print("RESULT", json.dumps({"losses": losses[::4], "logits": logits.tolist(), "weights": weights[:, 0].tolist()}))
