# The PyTorch "NLP From Scratch: Translation with a Sequence to Sequence Network and Attention" tutorial,
# shrunk: a GRU encoder, a Bahdanau (additive) attention decoder with teacher forcing on a toy reversal task,
# then greedy decoding and the attention weights it produced.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SOS, EOS, V, H, L = 0, 1, 10, 24, 6


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(V, H)
        self.gru = nn.GRU(H, H, batch_first=True)

    def forward(self, x):
        return self.gru(self.embedding(x))


class BahdanauAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.Wa, self.Ua, self.Va = nn.Linear(H, H), nn.Linear(H, H), nn.Linear(H, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys))).squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        return torch.bmm(weights, keys), weights


class AttnDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(V, H)
        self.attention = BahdanauAttention()
        self.gru = nn.GRU(2 * H, H, batch_first=True)
        self.out = nn.Linear(H, V)

    def step(self, inp, hidden, enc_out):
        emb = self.embedding(inp)
        context, attn = self.attention(hidden.permute(1, 0, 2), enc_out)
        output, hidden = self.gru(torch.cat((emb, context), dim=2), hidden)
        return self.out(output), hidden, attn

    def forward(self, enc_out, hidden, target=None):
        inp = torch.full((enc_out.size(0), 1), SOS, dtype=torch.long)
        outs, attns = [], []
        for i in range(L + 1):
            out, hidden, attn = self.step(inp, hidden, enc_out)
            outs.append(out)
            attns.append(attn)
            inp = target[:, i].unsqueeze(1) if target is not None else out.argmax(-1).detach()
        return F.log_softmax(torch.cat(outs, 1), dim=-1), torch.cat(attns, 1)


rng = np.random.default_rng(4)
src = rng.integers(2, V, (64, L))
tgt = np.concatenate([src[:, ::-1], np.full((64, 1), EOS)], 1)
src_t, tgt_t = torch.from_numpy(src), torch.from_numpy(np.ascontiguousarray(tgt))
enc, dec = Encoder(), AttnDecoder()
for m in (enc, dec):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.2, 0.2, tuple(p.shape)).astype(np.float32)))
opt = torch.optim.Adam([*enc.parameters(), *dec.parameters()], lr=5e-3)
losses = []
for epoch in range(25):
    for b in range(0, 64, 16):
        opt.zero_grad()
        enc_out, hidden = enc(src_t[b : b + 16])
        logp, _ = dec(enc_out, hidden, tgt_t[b : b + 16])
        loss = F.nll_loss(logp.reshape(-1, V), tgt_t[b : b + 16].reshape(-1))
        loss.backward()
        nn.utils.clip_grad_norm_([*enc.parameters(), *dec.parameters()], 1.0)
        opt.step()
        losses.append(loss.item())
with torch.no_grad():
    enc_out, hidden = enc(src_t[:4])
    logp, attn = dec(enc_out, hidden)
    decoded = logp.argmax(-1)
acc = (decoded == tgt_t[:4]).float().mean().item()
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}, greedy token accuracy {acc:.2f}")
assert losses[-1] < losses[0] and torch.allclose(attn.sum(-1), torch.ones(4, L + 1))
print("RESULT", json.dumps({"losses": losses[:8], "attn_shape": list(attn.shape),
                            "_losses_last": losses[-1], "_accuracy": acc}))  # fmt: skip
