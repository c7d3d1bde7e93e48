# word2vec skip-gram with negative sampling (Mikolov et al. 2013) as in the many PyTorch re-implementations:
# a corpus turned into (center, context) pairs, negatives drawn from the unigram^0.75 table with NumPy (fixed
# up front), two embedding tables, logsigmoid losses, sparse-free SGD; then cosine similarities and the nearest
# neighbours of a word.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

text = ("the king rules the land the queen rules the land the king and the queen live in the castle "
        "a dog runs in the field a cat runs in the field the dog and the cat play in the field ") * 6  # fmt: skip
words = text.split()
vocab = sorted(set(words))
idx = {w: i for i, w in enumerate(vocab)}
ids = np.array([idx[w] for w in words])
pairs = np.array(
    [(ids[i], ids[j]) for i in range(len(ids)) for j in range(max(0, i - 2), min(len(ids), i + 3)) if i != j]
)
counts = np.bincount(ids, minlength=len(vocab)).astype(np.float64) ** 0.75
rng = np.random.default_rng(6)
K, D, B = 4, 16, 64
order = rng.permutation(len(pairs))
negatives = rng.choice(len(vocab), size=(len(pairs), K), p=counts / counts.sum())


class SkipGram(nn.Module):
    def __init__(self, n, d):
        super().__init__()
        self.center = nn.Embedding(n, d)
        self.context = nn.Embedding(n, d)

    def forward(self, c, o, neg):
        vc = self.center(c)
        pos = F.logsigmoid((vc * self.context(o)).sum(-1))
        negs = F.logsigmoid(-torch.bmm(self.context(neg), vc.unsqueeze(-1)).squeeze(-1)).sum(-1)
        return -(pos + negs).mean()


model = SkipGram(len(vocab), D)
with torch.no_grad():
    model.center.weight.copy_(torch.from_numpy(rng.uniform(-0.5 / D, 0.5 / D, (len(vocab), D)).astype(np.float32)))
    model.context.weight.copy_(torch.from_numpy(rng.uniform(-0.1, 0.1, (len(vocab), D)).astype(np.float32)))
opt = torch.optim.SGD(model.parameters(), lr=0.5)
losses = []
for epoch in range(3):
    for b in range(0, len(order) - B + 1, B):
        sel = order[b : b + B]
        c, o = torch.from_numpy(pairs[sel, 0]), torch.from_numpy(pairs[sel, 1])
        opt.zero_grad()
        loss = model(c, o, torch.from_numpy(negatives[sel]))
        loss.backward()
        opt.step()
        losses.append(loss.item())
with torch.no_grad():
    emb = F.normalize(model.center.weight, dim=1)
    sim = emb @ emb.T
    king = sim[idx["king"]]
    top = king.topk(4).indices.tolist()
print(
    f"{len(vocab)} words, {len(pairs)} pairs; loss {losses[0]:.3f} -> {losses[-1]:.3f}; "
    f"near king: {[vocab[i] for i in top]}"
)
assert losses[-1] < losses[0]
print("RESULT", json.dumps({"losses": losses[:10], "_sim_king_queen": sim[idx["king"], idx["queen"]].item(),
                            "_losses_last": losses[-1], "_near_king": [vocab[i] for i in top]}))  # fmt: skip
