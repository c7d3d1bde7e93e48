# The "quickstart" tutorial: DataLoader over a dataset class, the accelerator idiom,
# nn.Flatten + nn.Sequential, SGD, train/test loops, save and load a state_dict.
# compat-tolerance: 1e-3 1e-4
import json

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset


class FakeFashion(Dataset):
    """Stands in for datasets.FashionMNIST: 28x28 images whose class sets one stripe."""

    def __init__(self, n, seed, transform=None, target_transform=None):
        rng = np.random.default_rng(seed)
        self.labels = rng.integers(0, 10, n)
        self.images = rng.uniform(0, 0.3, (n, 1, 28, 28)).astype(np.float32)
        for i, k in enumerate(self.labels):
            self.images[i, 0, 2 * k + 4, :] = 1.0
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, idx):
        image, label = torch.from_numpy(self.images[idx]), int(self.labels[idx])
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label


training_data = FakeFashion(256, 0)
test_data = FakeFashion(128, 1)
batch_size = 32
train_dataloader = DataLoader(training_data, batch_size=batch_size)
test_dataloader = DataLoader(test_data, batch_size=batch_size)
for X, y in test_dataloader:
    print(f"Shape of X [N, C, H, W]: {X.shape}")
    print(f"Shape of y: {y.shape} {y.dtype}")
    shapes = [list(X.shape), list(y.shape), y.dtype == torch.int64]
    break

device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
print(f"Using {device} device")


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


model = NeuralNetwork().to(device)
print(model)
rng = np.random.default_rng(2)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.05, 0.05, tuple(p.shape)).astype(np.float32)))
loss_fn = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=1e-1)


def train(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()
    losses = []
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if batch % 4 == 0:
            loss, current = loss.item(), (batch + 1) * len(X)
            print(f"loss: {loss:>7f}  [{current:>5d}/{size:>5d}]")
            losses.append(loss)
    return losses


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    print(f"Test Error: \n Accuracy: {(100 * correct):>0.1f}%, Avg loss: {test_loss:>8f} \n")
    return test_loss, correct


history = []
for t in range(3):
    print(f"Epoch {t + 1}\n-------------------------------")
    history += train(train_dataloader, model, loss_fn, optimizer)
    history += test(test_dataloader, model, loss_fn)
torch.save(model.state_dict(), "model.pth")
model = NeuralNetwork().to(device)
model.load_state_dict(torch.load("model.pth", weights_only=True))
model.eval()
x, y = test_data[0][0], test_data[0][1]
with torch.no_grad():
    x = x.to(device)
    pred = model(x)
    predicted = pred[0].argmax(0)
print("RESULT", json.dumps({"shapes": shapes, "history": history, "predicted": int(predicted), "label": y}))
