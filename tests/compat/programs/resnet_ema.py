# A small ResNet in the style of torchvision's BasicBlock: residual blocks with a 1x1 shortcut,
# AdaptiveAvgPool2d, CrossEntropyLoss(label_smoothing=...), MultiStepLR, clip_grad_value_, and an
# EMA copy of the weights kept with lerp_ and mul_().add_(alpha=).
# compat-tolerance: 1e-3 1e-4
import copy
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, kernel_size=1, stride=stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        return F.relu(out)


class ResNet(nn.Module):
    def __init__(self, num_classes=3):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.layer1 = nn.Sequential(BasicBlock(4, 4), BasicBlock(4, 8, stride=2))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(8, num_classes)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer1(out)
        out = self.avgpool(out)
        out = torch.flatten(out, 1)
        return self.fc(out)


rng = np.random.default_rng(0)
model = ResNet()
with torch.no_grad():
    for name, p in model.named_parameters():
        if "bn" in name or "shortcut.1" in name:
            continue
        p.copy_(torch.from_numpy(rng.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))
ema = copy.deepcopy(model)
for p in ema.parameters():
    p.requires_grad_(False)

criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones=[2, 4], gamma=0.1)
x_all = rng.normal(0, 1, (24, 1, 8, 8)).astype(np.float32)
y_all = rng.integers(0, 3, 24)
losses, lrs = [], []
for epoch in range(5):
    model.train()
    for i in range(0, 24, 8):
        inputs = torch.from_numpy(x_all[i : i + 8])
        targets = torch.from_numpy(y_all[i : i + 8])
        optimizer.zero_grad()
        loss = criterion(model(inputs), targets)
        loss.backward()
        nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
        optimizer.step()
        with torch.no_grad():
            for e, m in zip(ema.parameters(), model.parameters()):
                e.lerp_(m, 0.1)
            for e, m in zip(ema.buffers(), model.buffers()):
                if e.dtype.is_floating_point:
                    e.mul_(0.9).add_(m, alpha=0.1)
                else:
                    e.copy_(m)
    scheduler.step()
    losses.append(loss.item())
    lrs.append(scheduler.get_last_lr()[0])

model.eval()
ema.eval()
correct = 0
with torch.no_grad():
    outputs = model(torch.from_numpy(x_all))
    _, predicted = torch.max(outputs.data, 1)
    correct = (predicted == torch.from_numpy(y_all)).sum().item()
    ema_out = ema(torch.from_numpy(x_all[:4]))
print(
    "RESULT",
    json.dumps(
        {
            "losses": losses,
            "lrs": lrs,
            "correct": correct,
            "ema_out": ema_out.tolist(),
            "batches_tracked": ema.bn1.num_batches_tracked.item(),
        }
    ),
)
