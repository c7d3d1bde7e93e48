# Name classification with a character-level RNN, in the style of the NLP-from-scratch tutorial
# but with nn.RNN: letters as one-hot tensors, NLLLoss over log_softmax, evaluation under
# torch.no_grad() with torch.max(outputs.data, 1).
# compat-tolerance: 1e-4 1e-5
import json
import string

import numpy as np
import torch
import torch.nn as nn

all_letters = string.ascii_letters + " .,;'"
n_letters = len(all_letters)
data = {
    "English": ["Smith", "Jones", "Brown", "Taylor"],
    "Italian": ["Rossi", "Russo", "Bianchi", "Romano"],
    "Japanese": ["Sato", "Suzuki", "Takahashi", "Tanaka"],
}
all_categories = list(data)


def lineToTensor(line):
    tensor = torch.zeros(len(line), 1, n_letters)
    for li, letter in enumerate(line):
        tensor[li][0][all_letters.find(letter)] = 1
    return tensor


class CharRNN(nn.Module):
    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.rnn = nn.RNN(input_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)
        self.softmax = nn.LogSoftmax(dim=1)

    def forward(self, line_tensor):
        rnn_out, hidden = self.rnn(line_tensor)
        output = self.h2o(hidden[0])
        return self.softmax(output)


rng = np.random.default_rng(0)
rnn = CharRNN(n_letters, 16, len(all_categories))
with torch.no_grad():
    for p in rnn.parameters():
        p.copy_(torch.from_numpy(rng.normal(0, 0.2, tuple(p.shape)).astype(np.float32)))
criterion = nn.NLLLoss()
optimizer = torch.optim.SGD(rnn.parameters(), lr=0.05)
pairs = [(name, cat) for cat in all_categories for name in data[cat]]
losses = []
for epoch in range(4):
    total = 0.0
    for idx in rng.permutation(len(pairs)):
        name, cat = pairs[idx]
        label = torch.tensor([all_categories.index(cat)], dtype=torch.long)
        rnn.zero_grad()
        output = rnn(lineToTensor(name))
        loss = criterion(output, label)
        loss.backward()
        nn.utils.clip_grad_norm_(rnn.parameters(), 3)
        optimizer.step()
        total += loss.item()
    losses.append(total / len(pairs))

rnn.eval()
correct = 0
with torch.no_grad():
    outputs = torch.cat([rnn(lineToTensor(n)) for n, _ in pairs])
    _, predicted = torch.max(outputs.data, 1)
    labels = torch.tensor([all_categories.index(c) for _, c in pairs])
    correct = (predicted == labels).sum().item()
    top_v, top_i = outputs.topk(1)
print(
    "RESULT",
    json.dumps(
        {"losses": losses, "correct": correct, "predicted": predicted.tolist(), "top": top_v.squeeze(1).tolist()}
    ),
)
