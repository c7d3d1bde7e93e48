"""The models the ONNX tests export, written once for both libraries (``lib`` is pyframe or torch), so that
torch's own exporter can run on the same weights."""

from __future__ import annotations

import math


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.Dropout(0.2), nn.Linear(16, 16), nn.Tanh(),
                         nn.Linear(16, 4), nn.LogSoftmax(dim=-1))  # fmt: skip


def cnn(lib):
    nn, F = lib.nn, lib.nn.functional  # noqa: N806

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
            self.bn1 = nn.BatchNorm2d(8)
            self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2)
            self.bn2 = nn.BatchNorm2d(8)
            self.pool = nn.MaxPool2d(2)
            self.gap = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(8, 5)

        def forward(self, x):
            x = F.relu(self.bn1(self.conv1(x)))
            x = self.pool(F.relu(self.bn2(self.conv2(x))))
            return self.fc(lib.flatten(self.gap(x), 1))

    return CNN()


def gpt_block(lib):
    nn, F = lib.nn, lib.nn.functional  # noqa: N806

    class CausalSelfAttention(nn.Module):
        def __init__(self, n_embd=16, n_head=2):
            super().__init__()
            self.c_attn = nn.Linear(n_embd, 3 * n_embd)
            self.c_proj = nn.Linear(n_embd, n_embd)
            self.n_head, self.n_embd = n_head, n_embd
            self.dropout = 0.1

        def forward(self, x):
            B, T, C = x.size()  # noqa: N806
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            p = self.dropout if self.training else 0
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p, is_causal=True)
            y = y.transpose(1, 2).contiguous().view(B, T, C)
            return self.c_proj(y)

    class MLP(nn.Module):
        def __init__(self, n_embd=16):
            super().__init__()
            self.c_fc = nn.Linear(n_embd, 4 * n_embd)
            self.gelu = nn.GELU(approximate="tanh")
            self.c_proj = nn.Linear(4 * n_embd, n_embd)
            self.dropout = nn.Dropout(0.1)

        def forward(self, x):
            return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))

    class Block(nn.Module):
        def __init__(self, vocab=11, block_size=12, n_embd=16):
            super().__init__()
            self.wte = nn.Embedding(vocab, n_embd)
            self.wpe = nn.Embedding(block_size, n_embd)
            self.ln_1 = nn.LayerNorm(n_embd)
            self.attn = CausalSelfAttention(n_embd)
            self.ln_2 = nn.LayerNorm(n_embd)
            self.mlp = MLP(n_embd)
            self.lm_head = nn.Linear(n_embd, vocab, bias=False)

        def forward(self, idx):
            t = idx.size(1)
            pos = lib.arange(0, t, dtype=lib.long)
            x = self.wte(idx) + self.wpe(pos)
            x = x + self.attn(self.ln_1(x))
            x = x + self.mlp(self.ln_2(x))
            return self.lm_head(x) / math.sqrt(16)

    return Block()


def lstm_lm(lib, cell="LSTM"):
    nn = lib.nn

    class RNNModel(nn.Module):
        """pytorch/examples' word_language_model RNNModel, smaller."""

        def __init__(self, ntoken=13, ninp=8, nhid=12, nlayers=2):
            super().__init__()
            self.drop = nn.Dropout(0.3)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = getattr(nn, cell)(ninp, nhid, nlayers, dropout=0.3)
            self.decoder = nn.Linear(nhid, ntoken)
            self.nhid, self.nlayers = nhid, nlayers

        def forward(self, input, hidden):  # noqa: A002
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            decoded = self.decoder(self.drop(output))
            return lib.nn.functional.log_softmax(decoded, dim=-1), hidden

    return RNNModel()


def transformer_encoder(lib):
    nn = lib.nn

    class Classifier(nn.Module):
        def __init__(self, d_model=16, nhead=2):
            super().__init__()
            layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=32, dropout=0.1, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
            self.head = nn.Linear(d_model, 3)

        def forward(self, src, padding_mask):
            h = self.encoder(src, src_key_padding_mask=padding_mask)
            return self.head(h.mean(dim=1))

    return Classifier()
