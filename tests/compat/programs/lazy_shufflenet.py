# A ShuffleNet-style classifier built from lazy layers (LazyConv2d, LazyBatchNorm2d, LazyLinear: channel counts
# come from a dry run), `nn.ChannelShuffle` between grouped convolutions, a custom pooling layer written with
# `torch.nn.modules.utils._pair`, NumPy weights (and fresh running statistics) after the dry run, a few SGD steps,
# then inference with each conv + batch norm pair folded by `torch.nn.utils.fuse_conv_bn_eval`.
# compat-tolerance: 1e-4 1e-5
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules.utils import _pair


class AvgPoolPair(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.kernel_size = _pair(kernel_size)

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size)


class ShuffleUnit(nn.Module):
    def __init__(self, channels, groups):
        super().__init__()
        self.conv1 = nn.LazyConv2d(channels, 1, groups=groups, bias=False)
        self.bn1 = nn.LazyBatchNorm2d()
        self.shuffle = nn.ChannelShuffle(groups)
        self.conv2 = nn.LazyConv2d(channels, 3, padding=1, groups=channels, bias=False)
        self.bn2 = nn.LazyBatchNorm2d()

    def forward(self, x):
        y = self.shuffle(F.relu(self.bn1(self.conv1(x))))
        return F.relu(x + self.bn2(self.conv2(y)))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.LazyConv2d(8, 3, padding=1)
        self.units = nn.Sequential(ShuffleUnit(8, 2), ShuffleUnit(8, 4))
        self.pool = AvgPoolPair(2)
        self.head = nn.LazyLinear(3)

    def forward(self, x):
        return self.head(self.pool(self.units(F.relu(self.stem(x)))).flatten(1))


rng = np.random.default_rng(0)
net = Net()
lazy_before = [type(m).__name__ for m in net.modules() if "Lazy" in type(m).__name__]
net(torch.zeros(1, 3, 6, 6))  # dry run: shapes inferred, the lazy classes become the plain ones
classes = sorted({type(m).__name__ for m in net.modules()})
for m in net.modules():  # the dry run's batch statistics came from random weights: start the averages again
    if isinstance(m, nn.modules.batchnorm._BatchNorm):
        m.reset_running_stats()
with torch.no_grad():
    for name, p in net.named_parameters():
        p.copy_(torch.from_numpy(rng.normal(0.0 if "bias" in name else 0.2, 0.3, tuple(p.shape)).astype(np.float32)))

opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
losses = []
for step in range(3):
    x = torch.from_numpy(rng.normal(size=(4, 3, 6, 6)).astype(np.float32))
    y = torch.from_numpy(rng.integers(0, 3, 4))
    opt.zero_grad()
    loss = F.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
    losses.append(loss.item())

net.eval()
x = torch.from_numpy(rng.normal(size=(2, 3, 6, 6)).astype(np.float32))
with torch.no_grad():
    plain = net(x)
    for unit in net.units:
        unit.conv1 = nn.utils.fuse_conv_bn_eval(unit.conv1, unit.bn1)
        unit.conv2 = nn.utils.fuse_conv_bn_eval(unit.conv2, unit.bn2)
        unit.bn1, unit.bn2 = nn.Identity(), nn.Identity()
    fused = net(x)
print(
    "RESULT",
    json.dumps(
        {
            "lazy_before": lazy_before,
            "classes": classes,
            "in_features": net.head.in_features,
            "losses": losses,
            "fused_bias": net.units[0].conv1.bias.tolist(),
            "plain": plain.tolist(),
            "fused_gap": (fused - plain).abs().max().item() < 1e-4,
            "state_keys": len(net.state_dict()),
        }
    ),
)
