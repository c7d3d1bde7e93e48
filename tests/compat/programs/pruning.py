# The pruning tutorial: LeNet pruned with l1_unstructured, ln_structured, global_unstructured,
# a custom BasePruningMethod, then made permanent with remove().
# compat-tolerance: 1e-5 1e-6
import json

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.utils.prune as prune

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.view(-1, int(x.nelement() / x.shape[0]))
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def fresh_model():
    model = LeNet().to(device=device)
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.from_numpy(rng.normal(0, 0.1, tuple(p.shape)).astype(np.float32)))
    return model


results = {}
model = fresh_model()
module = model.conv1
prune.random_unstructured(module, name="weight", amount=0.3)
assert [n for n, _ in module.named_parameters()] == ["bias", "weight_orig"]
assert [n for n, _ in module.named_buffers()] == ["weight_mask"]
assert int((module.weight_mask == 0).sum()) == round(0.3 * module.weight_orig.nelement())
assert len(module._forward_pre_hooks) == 1
prune.l1_unstructured(module, name="bias", amount=3)
results["bias_mask"] = module.bias_mask.tolist()
prune.ln_structured(module, name="weight", amount=0.5, n=2, dim=0)
results["channels_kept"] = int((module.weight.abs().sum(dim=(1, 2, 3)) != 0).sum())
for hook in module._forward_pre_hooks.values():
    if hook._tensor_name == "weight":
        results["history"] = [type(m).__name__ for m in hook]
        break
prune.remove(module, "weight")
assert [n for n, _ in module.named_parameters()] == ["bias_orig", "weight"]
assert not prune.is_pruned(model.fc1) and prune.is_pruned(model)

new_model = fresh_model()
for name, module in new_model.named_modules():
    if isinstance(module, torch.nn.Conv2d):
        prune.l1_unstructured(module, name="weight", amount=0.2)
    elif isinstance(module, torch.nn.Linear):
        prune.l1_unstructured(module, name="weight", amount=0.4)
results["mask_keys"] = list(dict(new_model.named_buffers()).keys())

model = fresh_model()
parameters_to_prune = (
    (model.conv1, "weight"),
    (model.conv2, "weight"),
    (model.fc1, "weight"),
    (model.fc2, "weight"),
    (model.fc3, "weight"),
)
prune.global_unstructured(parameters_to_prune, pruning_method=prune.L1Unstructured, amount=0.2)
sparsity = {m: float(torch.sum(getattr(model, m).weight == 0)) for m in ("conv1", "conv2", "fc1", "fc2", "fc3")}
results["global_sparsity"] = [sparsity[k] for k in sorted(sparsity)]


class FooBarPruningMethod(prune.BasePruningMethod):
    """Prune every other entry in a tensor"""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        mask = default_mask.clone()
        mask.view(-1)[::2] = 0
        return mask


def foobar_unstructured(module, name):
    FooBarPruningMethod.apply(module, name)
    return module


foobar_unstructured(model.fc3, name="bias")
results["foobar_bias_mask"] = model.fc3.bias_mask.tolist()

x = torch.from_numpy(np.random.default_rng(1).normal(0, 1, (2, 1, 28, 28)).astype(np.float32))
out = model(x)
results["out"] = out.tolist()
out.sum().backward()
results["grad_zero_where_pruned"] = bool((model.fc1.weight_orig.grad[model.fc1.weight_mask == 0] == 0).all())
for m, _ in parameters_to_prune:
    prune.remove(m, "weight")
assert "weight" in dict(model.fc1.named_parameters())
print("RESULT", json.dumps(results))
