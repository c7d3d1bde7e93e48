# The "saving and loading a general checkpoint" recipe: model, optimizer and scheduler state in
# one file, resumed into fresh objects; training continues exactly as if never interrupted.
# compat-tolerance: 1e-5 1e-6
import json

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 32)
        self.bn = nn.BatchNorm1d(32)
        self.fc2 = nn.Linear(32, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


def build(seed=0):
    net = Net()
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.from_numpy(rng.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))
    optimizer = optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-4)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10)
    return net, optimizer, scheduler


rng = np.random.default_rng(1)
X = torch.from_numpy(rng.normal(0, 1, (64, 10)).astype(np.float32))
Y = torch.from_numpy((rng.normal(0, 1, 64) > 0).astype(np.int64))
criterion = nn.CrossEntropyLoss()


def epoch(net, optimizer, scheduler):
    net.train()
    total = 0.0
    for i in range(0, 64, 16):
        optimizer.zero_grad()
        loss = criterion(net(X[i : i + 16]), Y[i : i + 16])
        loss.backward()
        optimizer.step()
        total += loss.item()
    scheduler.step()
    return total


net, optimizer, scheduler = build()
straight = [epoch(net, optimizer, scheduler) for _ in range(6)]

net, optimizer, scheduler = build()
first = [epoch(net, optimizer, scheduler) for _ in range(3)]
PATH = "model.pt"
torch.save(
    {
        "epoch": 3,
        "model_state_dict": net.state_dict(),
        "optimizer_state_dict": optimizer.state_dict(),
        "scheduler_state_dict": scheduler.state_dict(),
        "loss": first[-1],
        "class_weights": np.array([0.25, 0.75]),
    },
    PATH,
)

model, optimizer, scheduler = build(seed=5)  # other weights: the checkpoint must win
checkpoint = torch.load(PATH, weights_only=False)
model.load_state_dict(checkpoint["model_state_dict"])
optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
assert checkpoint["epoch"] == 3 and checkpoint["loss"] == first[-1]
assert isinstance(checkpoint["class_weights"], np.ndarray) and checkpoint["class_weights"].tolist() == [0.25, 0.75]
resumed = first + [epoch(model, optimizer, scheduler) for _ in range(3)]
assert np.allclose(resumed, straight, rtol=1e-6), (resumed, straight)

model.eval()
with torch.no_grad():
    out = model(X[:4])
print(
    "RESULT",
    json.dumps(
        {
            "losses": straight,
            "resumed": resumed,
            "eval_out": out.tolist(),
            "lr": scheduler.get_last_lr(),
            "running_var": model.bn.running_var[:4].tolist(),
        }
    ),
)
