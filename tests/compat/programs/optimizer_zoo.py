# The optimizers the tutorials mention once and programs still use, on one Poisson regression with a
# log-likelihood written out (torch.lgamma), a probit feature (torch.special.ndtr, torch.erfinv) and a
# Hann-windowed input (torch.signal.windows.hann), as in feature-engineering recipes: ASGD (with its
# averaged parameters), Rprop (full batch, as it is meant), Adafactor, and Adam with a tensor learning rate;
# each from the same NumPy weights, losses recorded every ten steps.
# compat-tolerance: 1e-4 1e-6
import json

import numpy as np
import torch

rng = np.random.default_rng(0)
n, d = 64, 8
window = torch.signal.windows.hann(d, dtype=torch.float64)
X = torch.from_numpy(rng.normal(size=(n, d))) * window
u = torch.from_numpy(rng.uniform(0.05, 0.95, size=(n, 1)))
X = torch.cat([X, torch.special.ndtr(torch.erfinv(2 * u - 1) * 2**0.5)], dim=1)
true_w = torch.from_numpy(rng.normal(0, 0.5, size=(d + 1, 1)))
y = torch.from_numpy(rng.poisson(np.exp((X @ true_w).numpy())).astype(np.float64))
w0 = rng.normal(0, 0.1, size=(d + 1, 1))


def nll(w):
    rate = X @ w
    return -(y * rate - torch.exp(rate) - torch.lgamma(y + 1)).mean()


def run(make_opt, steps=40):
    w = torch.tensor(w0, requires_grad=True)
    opt = make_opt([w])
    losses = []

    def closure():
        opt.zero_grad()
        loss = nll(w)
        loss.backward()
        return loss

    for step in range(steps):
        loss = opt.step(closure)
        if step % 10 == 9:
            losses.append(loss.item())
    return losses, w.detach().flatten().tolist(), opt


results = {}
losses, w, opt = run(lambda p: torch.optim.ASGD(p, lr=0.05, t0=10))
results["asgd"] = {"losses": losses, "w": w, "ax": opt.state[opt.param_groups[0]["params"][0]]["ax"].flatten().tolist()}
losses, w, _ = run(lambda p: torch.optim.Rprop(p, lr=0.01, etas=(0.5, 1.2), step_sizes=(1e-6, 1.0)))
results["rprop"] = {"losses": losses, "w": w}
losses, w, _ = run(lambda p: torch.optim.Adafactor(p, lr=0.05))
results["adafactor"] = {"losses": losses, "w": w}
losses, w, _ = run(lambda p: torch.optim.Adam(p, lr=torch.tensor(0.02)))
results["adam_tensor_lr"] = {"losses": losses, "w": w}
results["digamma"] = torch.digamma(y[:4, 0] + 1).tolist()
results["i0"] = torch.i0(X[:3, 0]).tolist()
print("RESULT", json.dumps(results))
