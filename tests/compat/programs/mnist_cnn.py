# pytorch/examples mnist, shrunk: a DataLoader-driven CNN with Adadelta, StepLR and a checkpoint.
# Synthetic 14x14 "digits" stand in for the download.
# compat-tolerance: 2e-3 2e-4
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.0)
        self.dropout2 = nn.Dropout(0.0)
        self.fc1 = nn.Linear(400, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def train(model, device, train_loader, optimizer, epoch, losses):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        if batch_idx % 4 == 0:
            losses.append(loss.item())


def test(model, device, test_loader):
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            data, target = data.to(device), target.to(device)
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    test_loss /= len(test_loader.dataset)
    return test_loss, correct


def make_data(rng, n):
    labels = rng.integers(0, 4, n)
    images = rng.normal(0, 0.3, (n, 1, 14, 14)).astype(np.float32)
    for i, k in enumerate(labels):  # each class lights up one quadrant
        r, c = divmod(int(k), 2)
        images[i, 0, r * 7 : r * 7 + 7, c * 7 : c * 7 + 7] += 1.0
    return torch.from_numpy(images), torch.from_numpy(labels)


def main():
    torch.manual_seed(1)
    use_cuda = torch.cuda.is_available()
    device = torch.device("cuda" if use_cuda else "cpu")
    rng = np.random.default_rng(0)
    train_set = TensorDataset(*make_data(rng, 256))
    test_set = TensorDataset(*make_data(rng, 128))
    train_loader = DataLoader(train_set, batch_size=32, shuffle=False)
    test_loader = DataLoader(test_set, batch_size=64)

    model = Net().to(device)
    wrng = np.random.default_rng(1)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(wrng.uniform(-0.2, 0.2, tuple(p.shape)).astype(np.float32)))
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    losses, lrs = [], []
    for epoch in range(1, 4):
        train(model, device, train_loader, optimizer, epoch, losses)
        lrs.append(scheduler.get_last_lr()[0])
        scheduler.step()
    test_loss, correct = test(model, device, test_loader)
    torch.save(model.state_dict(), "mnist_cnn.pt")
    reloaded = Net()
    reloaded.load_state_dict(torch.load("mnist_cnn.pt", weights_only=True))
    assert torch.equal(reloaded.fc2.weight, model.fc2.weight)
    print(f"Test set: Average loss: {test_loss:.4f}, Accuracy: {correct}/{len(test_loader.dataset)}")
    print("RESULT", json.dumps({"losses": losses, "lrs": lrs, "test_loss": test_loss, "correct": correct}))


if __name__ == "__main__":
    main()
