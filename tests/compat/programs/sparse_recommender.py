# Matrix factorization for implicit-feedback recommendation, as sparse-embedding tutorials write it: user and
# item tables with sparse=True stepped by SparseAdam (only the rows a batch touches move), a dense global bias by
# SGD with momentum, and a second model whose user vector is the mean of the items in the user's history
# (EmbeddingBag(sparse=True, mode="mean")) stepped by Adagrad on its sparse gradients.
# compat-tolerance: 1e-6 1e-8
import json

import numpy as np
import torch
import torch.nn as nn

rng = np.random.default_rng(3)
n_users, n_items, D, B = 30, 40, 8, 16
true_u, true_v = rng.standard_normal((n_users, 3)), rng.standard_normal((n_items, 3))
users = rng.integers(0, n_users, 400)
items = rng.integers(0, n_items, 400)
ratings = (true_u[users] * true_v[items]).sum(1) + 0.1 * rng.standard_normal(400)


class MF(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.Embedding(n_users, D, sparse=True)
        self.item = nn.Embedding(n_items, D, sparse=True)
        self.item_bias = nn.Embedding(n_items, 1, sparse=True)
        self.bias = nn.Parameter(torch.zeros(1, dtype=torch.float64))

    def forward(self, u, i):
        return (self.user(u) * self.item(i)).sum(-1) + self.item_bias(i).squeeze(-1) + self.bias


model = MF().double()
with torch.no_grad():
    for table in (model.user, model.item, model.item_bias):
        table.weight.copy_(torch.from_numpy(0.1 * rng.standard_normal(tuple(table.weight.shape))))
sparse_opt = torch.optim.SparseAdam([model.user.weight, model.item.weight, model.item_bias.weight], lr=0.05)
dense_opt = torch.optim.SGD([model.bias], lr=0.05, momentum=0.9)
all_u, all_i, all_r = torch.from_numpy(users), torch.from_numpy(items), torch.from_numpy(ratings)
with torch.no_grad():
    before = ((model(all_u, all_i) - all_r) ** 2).mean().item()
losses = []
for step in range(40):
    sel = rng.choice(400, B, replace=False)
    u, i = torch.from_numpy(users[sel]), torch.from_numpy(items[sel])
    sparse_opt.zero_grad()
    dense_opt.zero_grad()
    loss = ((model(u, i) - torch.from_numpy(ratings[sel])) ** 2).mean()
    loss.backward()
    assert model.user.weight.grad.is_sparse and not model.bias.grad.is_sparse
    sparse_opt.step()
    dense_opt.step()
    losses.append(loss.item())
with torch.no_grad():
    after = ((model(all_u, all_i) - all_r) ** 2).mean().item()
grad = model.item.weight.grad.coalesce()
seen = sorted(set(items[sel].tolist()))
assert grad.indices()[0].tolist() == seen

# the bag model: a user is the mean of the items it rated
history = [np.flatnonzero(users == k)[:5] for k in range(n_users)]
flat = torch.from_numpy(np.concatenate([items[h] for h in history]))
offsets = torch.from_numpy(np.cumsum([0] + [len(h) for h in history[:-1]]))
bag = nn.EmbeddingBag(n_items, D, mode="mean", sparse=True).double()
with torch.no_grad():
    bag.weight.copy_(torch.from_numpy(0.1 * rng.standard_normal((n_items, D))))
head = nn.Linear(D, 1).double()
with torch.no_grad():
    head.weight.copy_(torch.from_numpy(0.1 * rng.standard_normal((1, D))))
    head.bias.zero_()
target = torch.from_numpy(true_u[:, 0])
bag_opt = torch.optim.Adagrad(bag.parameters(), lr=0.1)
head_opt = torch.optim.Adam(head.parameters(), lr=0.01)
bag_losses = []
for step in range(10):
    bag_opt.zero_grad()
    head_opt.zero_grad()
    loss = ((head(bag(flat, offsets)).squeeze(-1) - target) ** 2).mean()
    loss.backward()
    bag_opt.step()
    head_opt.step()
    bag_losses.append(loss.item())
try:
    torch.optim.Adam(bag.parameters()).step()
    refused = False
except RuntimeError as e:
    refused = "SparseAdam" in str(e)
print(f"MF loss {before:.4f} -> {after:.4f}; bag loss {bag_losses[0]:.4f} -> {bag_losses[-1]:.4f}")
assert after < before and bag_losses[-1] < bag_losses[0] and refused
print("RESULT", json.dumps({"losses": losses, "before": before, "after": after, "bag_losses": bag_losses,
                            "bias": model.bias.item(), "item_rows": model.item.weight[:3].tolist(),
                            "refused": refused}))  # fmt: skip
