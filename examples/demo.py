"""pyframe's demo: train a small network on a synthetic task, checkpoint it, reload it.

Two interleaved spirals (a classic task a linear model cannot solve): an MLP trained with
Adam reaches near-100% accuracy in a few seconds on 2 cores. Everything below runs on the
C core; NumPy is not imported.
"""

import math
import os
import tempfile
import time

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F


def spirals(n_per_class: int = 500, noise: float = 0.05) -> tuple[pf.Tensor, pf.Tensor]:
    """Points on two spirals, labels 0 and 1."""
    t = pf.linspace(0.25, 1.0, n_per_class) * (3 * math.pi)
    points, labels = [], []
    for label, phase in ((0, 0.0), (1, math.pi)):
        r = t / (3 * math.pi)
        xy = pf.stack([r * (t + phase).cos(), r * (t + phase).sin()], dim=1)
        points.append(xy + noise * pf.randn(n_per_class, 2))
        labels.append(pf.full((n_per_class,), label))
    return pf.cat(points), pf.cat(labels)


def main() -> None:
    pf.show_config()
    pf.manual_seed(0)
    x, y = spirals()
    model = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
    opt = pf.optim.Adam(model.parameters(), lr=0.01)
    print(f"\n{model}\n\ntraining on {x.shape[0]} points:")
    start = time.perf_counter()
    for step in range(1, 601):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step % 100 == 0:
            with pf.no_grad():
                acc = (model(x).argmax(dim=1) == y).float().mean().item()
            print(f"  step {step:4d}  loss {loss.item():.4f}  accuracy {acc:.1%}")
    print(f"  {time.perf_counter() - start:.1f} s")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "spirals.pyframe")
        pf.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, path)
        restored = nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))
        restored.load_state_dict(pf.load(path)["model"])
        with pf.no_grad():
            same = (model(x) == restored(x)).all().item()
        print(f"\ncheckpoint: {os.path.getsize(path)} bytes, reloaded model gives identical outputs: {bool(same)}")


if __name__ == "__main__":
    main()
