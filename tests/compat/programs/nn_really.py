# "What is torch.nn really?": logistic regression from scratch (log_softmax by hand, indexing
# with range), then refactored step by step into nn.Module, nn.Linear, optim, TensorDataset,
# DataLoader, a CNN with a Lambda layer, nn.Sequential and AdaptiveAvgPool2d.
# compat-tolerance: 1e-3 1e-4
import json
import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

rng = np.random.default_rng(0)
n, classes = 320, 10
y_np = rng.integers(0, classes, n)
x_np = rng.normal(0, 0.5, (n, 784)).astype(np.float32)
x_np[np.arange(n), y_np * 70] += 3.0  # one bright pixel per class
x_train, y_train, x_valid, y_valid = map(torch.tensor, (x_np[:256], y_np[:256], x_np[256:], y_np[256:]))
n, c = x_train.shape
results = {"shape": list(x_train.shape), "y_range": [y_train.min().item(), y_train.max().item()]}

weights = torch.from_numpy(rng.normal(0, 1, (784, 10)).astype(np.float32)) / math.sqrt(784)
weights.requires_grad_()
bias = torch.zeros(10, requires_grad=True)


def log_softmax(x):
    return x - x.exp().sum(-1).log().unsqueeze(-1)


def model(xb):
    return log_softmax(xb @ weights + bias)


def nll(input, target):
    return -input[range(target.shape[0]), target].mean()


def accuracy(out, yb):
    preds = torch.argmax(out, dim=1)
    return (preds == yb).float().mean()


loss_func = nll
bs, lr, epochs = 64, 0.5, 2
xb, yb = x_train[0:bs], y_train[0:bs]
results["scratch_loss_before"] = loss_func(model(xb), yb).item()
for epoch in range(epochs):
    for i in range((n - 1) // bs + 1):
        start_i = i * bs
        end_i = start_i + bs
        xb = x_train[start_i:end_i]
        yb = y_train[start_i:end_i]
        pred = model(xb)
        loss = loss_func(pred, yb)
        loss.backward()
        with torch.no_grad():
            weights -= weights.grad * lr
            bias -= bias.grad * lr
            weights.grad.zero_()
            bias.grad.zero_()
results["scratch"] = [loss_func(model(xb), yb).item(), accuracy(model(xb), yb).item()]

loss_func = F.cross_entropy


class Mnist_Logistic(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(784, 10)

    def forward(self, xb):
        return self.lin(xb)


def get_model():
    model = Mnist_Logistic()
    with torch.no_grad():
        model.lin.weight.copy_(weights.detach().T)
        model.lin.bias.zero_()
    return model, optim.SGD(model.parameters(), lr=lr)


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    history = []
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
        history.append(float(val_loss))
    return history


def get_data(train_ds, valid_ds, bs):
    return (DataLoader(train_ds, batch_size=bs, shuffle=False), DataLoader(valid_ds, batch_size=bs * 2))


train_dl, valid_dl = get_data(TensorDataset(x_train, y_train), TensorDataset(x_valid, y_valid), bs)
model, opt = get_model()
results["logistic"] = fit(epochs, model, loss_func, opt, train_dl, valid_dl)


class Lambda(nn.Module):
    def __init__(self, func):
        super().__init__()
        self.func = func

    def forward(self, x):
        return self.func(x)


def preprocess(x):
    return x.view(-1, 1, 28, 28)


model = nn.Sequential(
    Lambda(preprocess),
    nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1),
    nn.ReLU(),
    nn.AdaptiveAvgPool2d(1),
    Lambda(lambda x: x.view(x.size(0), -1)),
)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.2, 0.2, tuple(p.shape)).astype(np.float32)))
opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
results["cnn"] = fit(epochs, model, loss_func, opt, train_dl, valid_dl)
print("RESULT", json.dumps(results))
