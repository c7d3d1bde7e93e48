# Models that keep their weights in `nn.ParameterList` / `nn.ParameterDict` and their constants in `nn.Buffer`,
# as research code does (a mixture density over learnable components, per-task heads looked up by name), an
# adaptive-softmax language model head (`nn.AdaptiveLogSoftmaxWithLoss`) trained with gradient clipping through
# `get_total_norm` and `clip_grads_with_norm_`, and the round trip of such a model through its state_dict.
# compat-tolerance: 1e-4 1e-5
import json
import math

import numpy as np
import torch
import torch.nn as nn


class Mixture(nn.Module):
    def __init__(self, k, d):
        super().__init__()
        self.means = nn.ParameterList([nn.Parameter(torch.zeros(d)) for _ in range(k)])
        self.log_scales = nn.ParameterDict({"shared": torch.zeros(d)})  # a plain tensor becomes a Parameter
        self.logits = nn.Parameter(torch.zeros(k))
        self.log2pi = nn.Buffer(torch.tensor(math.log(2 * math.pi)), persistent=False)

    def forward(self, x):
        scale = self.log_scales["shared"]
        comps = torch.stack([(-0.5 * ((x - m) / scale.exp()) ** 2 - scale - 0.5 * self.log2pi).sum(-1)
                             for m in self.means], -1)  # fmt: skip
        return torch.logsumexp(comps + torch.log_softmax(self.logits, 0), -1)


class MultiHead(nn.Module):
    def __init__(self, d, tasks):
        super().__init__()
        self.body = nn.Linear(d, 8)
        self.heads = nn.ParameterDict({t: nn.Parameter(torch.zeros(8, n)) for t, n in tasks.items()})

    def forward(self, x, task):
        return torch.tanh(self.body(x)) @ self.heads[task]


rng = np.random.default_rng(0)


def fill(module, scale=0.5):
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.from_numpy(rng.normal(0, scale, tuple(p.shape)).astype(np.float32)))


mix = Mixture(3, 2)
fill(mix)
opt = torch.optim.Adam(mix.parameters(), lr=0.05)
data = torch.from_numpy(np.concatenate([rng.normal(-2, 0.5, (20, 2)), rng.normal(2, 0.5, (20, 2))]).astype(np.float32))
nll = []
for _ in range(5):
    opt.zero_grad()
    loss = -mix(data).mean()
    loss.backward()
    opt.step()
    nll.append(loss.item())

heads = MultiHead(4, {"cls": 3, "reg": 1})
fill(heads)
x = torch.from_numpy(rng.normal(size=(5, 4)).astype(np.float32))
head_out = {t: heads(x, t).sum().item() for t in heads.heads}

asm = nn.AdaptiveLogSoftmaxWithLoss(8, 20, cutoffs=[4, 10], div_value=2.0)
embed = nn.Embedding(20, 8)
fill(asm)
fill(embed)
params = list(asm.parameters()) + list(embed.parameters())
opt = torch.optim.SGD(params, lr=0.1)
tokens = torch.from_numpy(rng.integers(0, 20, 33))
lm = []
for _ in range(4):
    opt.zero_grad()
    out = asm(embed(tokens[:-1]), tokens[1:])
    out.loss.backward()
    total = nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
    nn.utils.clip_grads_with_norm_(params, 1.0, total)
    opt.step()
    lm.append([out.loss.item(), total.item()])
with torch.no_grad():
    pred = asm.predict(embed(tokens[:6])).tolist()
    full = asm.log_prob(embed(tokens[:2])).exp().sum(1).tolist()

keys = sorted(mix.state_dict())
clone = Mixture(3, 2)
clone.load_state_dict(mix.state_dict())
print(
    "RESULT",
    json.dumps(
        {
            "nll": nll,
            "keys": keys,
            "n_params": sum(p.numel() for p in mix.parameters()),
            "buffers": [n for n, _ in mix.named_buffers()],
            "head_out": head_out,
            "head_keys": list(heads.heads.keys()),
            "lm": lm,
            "pred": pred,
            "prob_sums": full,
            "clone_same": bool(torch.equal(clone(data), mix(data))),
            "list_repr_lines": len(repr(mix.means).splitlines()),
        }
    ),
)
