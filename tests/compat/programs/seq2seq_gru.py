# The seq2seq translation tutorial, shrunk: a GRU encoder and an attention GRU decoder learn to
# reverse short sequences, with teacher forcing and SGD.
# compat-tolerance: 1e-3 1e-4
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim

SOS_token, MAX_LENGTH = 0, 6


class EncoderRNN(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.embedding = nn.Embedding(input_size, hidden_size)
        self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)

    def forward(self, input):
        return self.gru(self.embedding(input))


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))
        scores = scores.squeeze(2).unsqueeze(1)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)
        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
        batch_size = encoder_outputs.size(0)
        decoder_input = torch.empty(batch_size, 1, dtype=torch.long).fill_(SOS_token)
        decoder_hidden = encoder_hidden
        decoder_outputs = []
        for i in range(MAX_LENGTH):
            decoder_output, decoder_hidden = self.forward_step(decoder_input, decoder_hidden, encoder_outputs)
            decoder_outputs.append(decoder_output)
            if target_tensor is not None:
                decoder_input = target_tensor[:, i].unsqueeze(1)
            else:
                _, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze(-1).detach()
        decoder_outputs = torch.cat(decoder_outputs, dim=1)
        return F.log_softmax(decoder_outputs, dim=-1), decoder_hidden

    def forward_step(self, input, hidden, encoder_outputs):
        embedded = self.embedding(input)
        query = hidden.permute(1, 0, 2)
        context, attn_weights = self.attention(query, encoder_outputs)
        output, hidden = self.gru(torch.cat((embedded, context), dim=2), hidden)
        return self.out(output), hidden


rng = np.random.default_rng(0)
vocab, hidden = 8, 16
src = rng.integers(1, vocab, (64, MAX_LENGTH))
tgt = src[:, ::-1].copy()
src_t, tgt_t = torch.from_numpy(src), torch.from_numpy(tgt)
encoder, decoder = EncoderRNN(vocab, hidden), AttnDecoderRNN(hidden, vocab)
for m in (encoder, decoder):
    with torch.no_grad():
        for p in m.parameters():
            p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))
encoder_optimizer = optim.SGD(encoder.parameters(), lr=0.5)
decoder_optimizer = optim.SGD(decoder.parameters(), lr=0.5)
criterion = nn.NLLLoss()
losses = []
for epoch in range(6):
    for i in range(0, 64, 16):
        input_tensor, target_tensor = src_t[i : i + 16], tgt_t[i : i + 16]
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        encoder_outputs, encoder_hidden = encoder(input_tensor)
        decoder_outputs, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)
        loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
        loss.backward()
        encoder_optimizer.step()
        decoder_optimizer.step()
        losses.append(loss.item())
with torch.no_grad():
    enc_out, enc_hidden = encoder(src_t[:4])
    dec_out, _ = decoder(enc_out, enc_hidden)
    _, decoded_ids = dec_out.topk(1)
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}")
assert losses[-1] < losses[0]
print("RESULT", json.dumps({"losses": losses[::3], "decoded": decoded_ids.squeeze(-1).tolist()}))
