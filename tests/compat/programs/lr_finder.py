# A learning-rate range test (Smith 2017, as in the torch-lr-finder package) with LambdaLR growing the rate
# exponentially and an exponentially smoothed loss, then training with the schedulers that recipes combine:
# warm-up by LinearLR chained into CosineAnnealingLR with SequentialLR, OneCycleLR, CosineAnnealingWarmRestarts,
# CyclicLR, ReduceLROnPlateau, ChainedScheduler and MultiStepLR; every learning rate is compared, losses where a
# step is still far from chaotic.
# compat-tolerance: 1e-4 1e-5
import copy
import json

import numpy as np
import torch
import torch.nn as nn
from torch.optim import lr_scheduler

rng = np.random.default_rng(8)
X = torch.from_numpy(rng.normal(size=(128, 6)).astype(np.float32))
y = torch.from_numpy((X.numpy() @ rng.normal(size=(6, 1)) + 0.1 * rng.normal(size=(128, 1))).astype(np.float32))
base = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
with torch.no_grad():
    for p in base.parameters():
        p.copy_(torch.from_numpy(rng.uniform(-0.3, 0.3, tuple(p.shape)).astype(np.float32)))

# range test
model = copy.deepcopy(base)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
sched = lr_scheduler.LambdaLR(opt, lambda i: 1.25**i)
lrs, smooth, avg = [], [], 0.0
for i in range(30):
    xb, yb = X[(i * 16) % 128 : (i * 16) % 128 + 16], y[(i * 16) % 128 : (i * 16) % 128 + 16]
    loss = nn.functional.mse_loss(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    avg = 0.9 * avg + 0.1 * loss.item()
    smooth.append(avg / (1 - 0.9 ** (i + 1)))
    lrs.append(sched.get_last_lr()[0])
    sched.step()
best = lrs[int(np.argmin(smooth[:20]))]


def run(make_sched, steps=24, per="step", lr=0.05, momentum=0.9):
    m = copy.deepcopy(base)
    o = torch.optim.SGD(m.parameters(), lr=lr, momentum=momentum)
    s = make_sched(o)
    rates, losses = [], []
    for i in range(steps):
        loss = nn.functional.mse_loss(m(X), y)
        o.zero_grad()
        loss.backward()
        o.step()
        rates.append(o.param_groups[0]["lr"])
        losses.append(loss.item())
        s.step(loss.item()) if per == "plateau" else s.step()
    return {"lrs": rates, "losses": losses[:8], "_last": losses[-1]}


results = {
    "warmup_cosine": run(lambda o: lr_scheduler.SequentialLR(
        o, [lr_scheduler.LinearLR(o, 0.1, total_iters=5), lr_scheduler.CosineAnnealingLR(o, T_max=19)], [5])),
    "one_cycle": run(lambda o: lr_scheduler.OneCycleLR(o, max_lr=0.1, total_steps=24)),
    "warm_restarts": run(lambda o: lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=6, T_mult=2, eta_min=1e-3)),
    "cyclic": run(lambda o: lr_scheduler.CyclicLR(o, base_lr=0.01, max_lr=0.08, step_size_up=4, mode="triangular2")),
    "plateau": run(lambda o: lr_scheduler.ReduceLROnPlateau(o, factor=0.5, patience=1, threshold=0.05), per="plateau"),
    "chained": run(lambda o: lr_scheduler.ChainedScheduler([lr_scheduler.ExponentialLR(o, 0.95),
                                                            lr_scheduler.MultiStepLR(o, [8, 16], 0.5)])),
}  # fmt: skip
print(f"suggested lr {best:.2e}")
print("RESULT", json.dumps({"range_lrs": lrs, "range_smoothed": smooth[:12], "_suggested": best, **results}))
