# A graph convolutional network (Kipf and Welling) on a small synthetic citation-like graph, message passing
# written with index_add_ and scatter_add over an edge list as in PyG-free tutorials, symmetric degree
# normalisation, semi-supervised node classification with a train mask; then a graph-level readout by
# index_add over a batch vector.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

rng = np.random.default_rng(3)
n_nodes, n_feat, n_cls = 40, 8, 3
labels = rng.integers(0, n_cls, n_nodes)
edges = [(i, j) for i in range(n_nodes) for j in range(i + 1, n_nodes)
         if rng.random() < (0.25 if labels[i] == labels[j] else 0.02)]  # fmt: skip
src = torch.tensor([a for a, b in edges] + [b for a, b in edges] + list(range(n_nodes)))
dst = torch.tensor([b for a, b in edges] + [a for a, b in edges] + list(range(n_nodes)))
x = torch.from_numpy(
    (rng.normal(size=(n_nodes, n_feat)) + np.eye(n_cls)[labels].repeat(3, 1)[:, :n_feat]).astype(np.float32)
)
y = torch.from_numpy(labels)
train_mask = torch.zeros(n_nodes, dtype=torch.bool)
train_mask[::3] = True

deg = torch.zeros(n_nodes).index_add_(0, dst, torch.ones(len(dst)))
norm = deg[src].rsqrt() * deg[dst].rsqrt()


class GCNLayer(nn.Module):
    def __init__(self, fin, fout):
        super().__init__()
        self.lin = nn.Linear(fin, fout)

    def forward(self, h):
        h = self.lin(h)
        msg = h[src] * norm.unsqueeze(-1)
        return torch.zeros_like(h).index_add_(0, dst, msg)


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = GCNLayer(n_feat, 16), GCNLayer(16, n_cls)

    def forward(self, h):
        return self.l2(F.dropout(F.relu(self.l1(h)), 0.0, self.training))


model = GCN()
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam(model.parameters(), lr=0.02, weight_decay=5e-4)
losses = []
for epoch in range(30):
    model.train()
    opt.zero_grad()
    out = model(x)
    loss = F.cross_entropy(out[train_mask], y[train_mask])
    loss.backward()
    opt.step()
    losses.append(loss.item())
model.eval()
with torch.no_grad():
    logits = model(x)
    acc = (logits.argmax(1)[~train_mask] == y[~train_mask]).float().mean().item()
    # graph-level readout: three graphs in a batch vector, mean pooling by scatter_add and counts
    batch = torch.tensor([0] * 15 + [1] * 15 + [2] * 10)
    pooled = torch.zeros(3, n_cls).scatter_add_(0, batch.unsqueeze(-1).expand(-1, n_cls), logits)
    counts = torch.bincount(batch).float().unsqueeze(-1)
    readout = (pooled / counts).tolist()
print(f"losses {losses[0]:.4f} -> {losses[-1]:.4f}, accuracy {acc:.2f}")
assert losses[-1] < losses[0]
print("RESULT", json.dumps({"losses": losses[:15], "degrees": deg[:10].tolist(), "_readout": readout,
                            "_losses_last": losses[-1], "_accuracy": acc}))  # fmt: skip
