# The training-toolbox recipes together: bfloat16 autocast on the CPU with a GradScaler (unscale_ before
# clipping), activation checkpointing of the residual blocks, a TorchScript-decorated activation, SWA with
# AveragedModel/SWALR/update_bn and an EMA copy, torch.testing.assert_close, fork_rng and detect_anomaly.
# bfloat16 steps round differently in the last bit between libraries: the first steps are compared (to bfloat16's
# precision), the rest of the run is checked by the program itself.
# compat-tolerance: 3e-2 3e-2
import json
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import SWALR, AveragedModel, get_ema_multi_avg_fn, update_bn
from torch.utils.checkpoint import checkpoint


@torch.jit.script
def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.BatchNorm1d(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)

    def forward(self, x):
        return x + self.fc2(gelu_tanh(self.fc1(self.norm(x))))


class Net(nn.Module):
    def __init__(self, width=16, depth=3, classes=4):
        super().__init__()
        self.inp = nn.Linear(6, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))
        self.out = nn.Linear(width, classes)

    def forward(self, x):
        h = self.inp(x)
        for block in self.blocks:
            h = checkpoint(block, h, use_reentrant=False) if self.training else block(h)
        return self.out(h)


rng = np.random.default_rng(0)
model = Net()
with torch.no_grad():
    for name, p in model.named_parameters():
        if "norm" not in name:
            p.copy_(torch.from_numpy(rng.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))
x_all = torch.from_numpy(rng.normal(0, 1, (64, 6)).astype(np.float32))
y_all = torch.from_numpy(rng.integers(0, 4, 64))


def forward_loss(xb, yb):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        logits = model(xb)
        loss = F.cross_entropy(logits, yb)
    dtypes.add((logits.dtype == torch.bfloat16, loss.dtype == torch.float32))
    return loss


opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**12, growth_interval=3)
swa = AveragedModel(model)
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
swa_sched = SWALR(opt, swa_lr=0.01, anneal_epochs=2)
losses, scales, lrs, dtypes = [], [], [], set()
for epoch in range(4):
    model.train()
    for i in range(0, 64, 16):
        xb, yb = x_all[i : i + 16], y_all[i : i + 16]
        opt.zero_grad()
        loss = forward_loss(xb, yb)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())
        scales.append(scaler.get_scale())
        ema.update_parameters(model)
    if epoch >= 1:
        swa.update_parameters(model)
        swa_sched.step()
    lrs.append(opt.param_groups[0]["lr"])

update_bn([(x_all[i : i + 16], y_all[i : i + 16]) for i in range(0, 64, 16)], swa)
swa.eval()
model.eval()
with torch.no_grad():
    swa_logits = swa(x_all[:8])
    plain_logits = model(x_all[:8])
torch.testing.assert_close(swa.n_averaged, torch.tensor(3))
assert dtypes == {(True, True)}, dtypes
assert losses[-1] < losses[0], losses

# gradients through a checkpointed block equal the plain block's
block = model.blocks[0].train()
h = torch.from_numpy(rng.normal(0, 1, (8, 16)).astype(np.float32)).requires_grad_()
(g_plain,) = torch.autograd.grad(block(h).square().sum(), h)
(g_ckpt,) = torch.autograd.grad(checkpoint(block, h, use_reentrant=False).square().sum(), h)
torch.testing.assert_close(g_ckpt, g_plain)

with torch.random.fork_rng():
    torch.rand(3)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    with torch.autograd.detect_anomaly():
        anomaly = None
        z = torch.tensor([0.0, 1.0], requires_grad=True)
        try:
            (z.sqrt() / z).sum().backward()
        except RuntimeError as e:
            anomaly = str(e)

print(
    "RESULT",
    json.dumps(
        {
            "first_losses": losses[:3],
            "scales": scales[:3],
            "lrs": lrs,
            "anomaly": anomaly,
            "n_averaged": swa.n_averaged.item(),
            "_losses": losses,
            "_swa_logits": swa_logits.tolist(),
            "_plain_logits": plain_logits.tolist(),
            "_ema_n": ema.n_averaged.item(),
        }
    ),
)
