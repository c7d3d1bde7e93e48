"""Seed 003: ``pyframe.nn.register_module_backward_hook`` (the full backward hook, for every module): monitor
gradient norms, clip the gradients a module passes on, find layers whose gradients vanished."""

import pyframe
import pyframe.nn as nn

pyframe.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
x = pyframe.randn(32, 4, requires_grad=True)

norms = []


def monitor(module, grad_input, grad_output):
    for g in grad_input:
        if g is not None:
            norms.append((type(module).__name__, round(g.norm().item(), 4)))


def clip(module, grad_input, grad_output):
    return tuple(None if g is None else pyframe.clamp(g, -0.01, 0.01) for g in grad_input)


def dying(module, grad_input, grad_output):
    for i, g in enumerate(grad_input):
        if g is not None and pyframe.all(g.eq(0)).item():
            print(f"{type(module).__name__} input {i} has zero gradients!")


with nn.register_module_backward_hook(monitor):
    model(x).sum().backward()
print("grad_input norms:", norms)
assert [name for name, _ in norms] == ["Linear", "ReLU", "Linear", "Sequential"]

x.grad = None
with nn.register_module_backward_hook(clip):
    model(x).sum().backward()
assert x.grad.abs().max().item() <= 0.01

with nn.register_module_full_backward_hook(dying):  # the same registry under its torch 2 name
    (nn.ReLU()(-pyframe.ones(3, requires_grad=True))).sum().backward()
print("seed 003: ok")
