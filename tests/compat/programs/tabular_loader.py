# Tabular regression in the style of a Kaggle notebook: a map-style Dataset, a DataLoader with a
# custom collate_fn and num_workers=2, ReduceLROnPlateau with early stopping, register_buffer for
# the feature scaling, weight_norm, and a state_dict round trip through torch.save / torch.load.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


class Rows(Dataset):
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, idx):
        return {"features": self.x[idx], "target": self.y[idx]}


def collate(batch):
    features = torch.stack([torch.from_numpy(b["features"]) for b in batch])
    target = torch.tensor([b["target"] for b in batch], dtype=torch.float32).unsqueeze(1)
    return features, target


class Regressor(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.hidden = nn.utils.weight_norm(nn.Linear(5, 16))
        self.out = nn.Linear(16, 1)

    def forward(self, x):
        x = (x - self.mean) / self.std
        return self.out(torch.tanh(self.hidden(x)))


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.normal(3, 2, (64, 5)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 0.0, 1.5]) + rng.normal(0, 0.1, 64)).astype(np.float32)
    train, val = Rows(x[:48], y[:48]), Rows(x[48:], y[48:])
    model = Regressor(torch.from_numpy(x[:48].mean(0)), torch.from_numpy(x[:48].std(0)))
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.from_numpy(rng.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5, patience=1)
    train_loader = DataLoader(train, batch_size=16, shuffle=False, collate_fn=collate, num_workers=2)
    val_loader = DataLoader(val, batch_size=8, collate_fn=collate)
    criterion = nn.MSELoss()
    best, bad_epochs, history = float("inf"), 0, []
    for epoch in range(30):
        model.train()
        for features, target in train_loader:
            optimizer.zero_grad()
            loss = criterion(model(features), target)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            val_loss = sum(criterion(model(f), t).item() * len(t) for f, t in val_loader) / len(val)
        scheduler.step(val_loss)
        history.append([val_loss, optimizer.param_groups[0]["lr"]])
        if val_loss < best - 1e-4:
            best, bad_epochs = val_loss, 0
            torch.save(model.state_dict(), "best.pt")
        else:
            bad_epochs += 1
            if bad_epochs >= 3:
                break
    restored = Regressor(torch.zeros(5), torch.ones(5))
    missing = restored.load_state_dict(torch.load("best.pt"))
    with torch.no_grad():
        f, t = next(iter(val_loader))
        pred = restored(f)
    print(
        "RESULT",
        json.dumps(
            {
                "history": history,
                "epochs": len(history),
                "best": best,
                "pred": pred.squeeze(1).tolist(),
                "keys": sorted(restored.state_dict().keys()),
                "missing": list(missing.missing_keys),
                "mean": restored.mean.tolist(),
            }
        ),
    )
