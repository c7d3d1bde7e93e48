# Instrumenting a model with hooks, as people do for feature extraction and debugging:
# forward hooks that capture activations, full backward hooks that record gradient norms,
# a tensor hook that scales a gradient, and a global forward hook counting every call.
# compat-tolerance: 1e-4 1e-5
import json
from collections import defaultdict

import numpy as np
import torch
import torch.nn as nn
from torch.nn.modules.module import register_module_forward_hook


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(4 * 4 * 4, 16), nn.Tanh(), nn.Linear(16, 3))

    def forward(self, x):
        return self.classifier(self.features(x))


model = Net()
rng = np.random.default_rng(0)
with torch.no_grad():
    for p in model.parameters():
        p.copy_(torch.from_numpy(rng.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))

activations = {}
grad_norms = defaultdict(list)
calls = defaultdict(int)


def save_activation(name):
    def hook(module, inputs, output):
        activations[name] = output.detach()

    return hook


def record_grad(name):
    def hook(module, grad_input, grad_output):
        grad_norms[name].append(grad_output[0].norm().item())

    return hook


handles = []
for name, module in model.named_modules():
    if isinstance(module, nn.Conv2d | nn.Linear):
        handles.append(module.register_forward_hook(save_activation(name)))
        handles.append(module.register_full_backward_hook(record_grad(name)))


def count_calls(module, inputs, output):
    calls[type(module).__name__] += 1


global_handle = register_module_forward_hook(count_calls)
pre = model.classifier[3].register_forward_pre_hook(lambda m, args: (args[0] * 2,))

x = torch.from_numpy(rng.normal(0, 1, (5, 1, 8, 8)).astype(np.float32))
x.requires_grad_(True)
out = model(x)
h = out.register_hook(lambda g: g * 0.5)
loss = out.pow(2).sum()
loss.backward()

results = {
    "out": out.tolist(),
    "act_shapes": {k: list(v.shape) for k, v in sorted(activations.items())},
    "act_sums": {k: v.sum().item() for k, v in sorted(activations.items())},
    "grad_norms": {k: v for k, v in sorted(grad_norms.items())},
    "input_grad": x.grad.abs().sum().item(),
    "calls": dict(sorted(calls.items())),
}
for handle in handles:
    handle.remove()
global_handle.remove()
pre.remove()
h.remove()
activations.clear()
model(x)
assert activations == {} and sum(calls.values()) == sum(results["calls"].values())
print("RESULT", json.dumps(results))
