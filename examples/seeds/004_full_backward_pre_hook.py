"""Seed 004: ``pyframe.nn.register_module_full_backward_pre_hook``: see (and replace) the gradient arriving at every
module's output before its backward runs: validate it, scale it, watch it flow."""

import pyframe
import pyframe.nn as nn

flow = []


def watch(module, grad_output):
    g = grad_output[0]
    flow.append((type(module).__name__, 0.0 if g is None else round(g.norm().item(), 4)))


def validate(module, grad_output):
    for i, g in enumerate(grad_output):
        if g is not None and (pyframe.isnan(g).any().item() or pyframe.isinf(g).any().item()):
            raise FloatingPointError(f"invalid gradient arriving at {type(module).__name__} output {i}")


def scale(module, grad_output):
    return tuple(None if g is None else g * 0.1 for g in grad_output)


model = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
with nn.register_module_full_backward_pre_hook(watch):
    model(pyframe.ones(1, 2, requires_grad=True)).sum().backward()
print("gradient flow:", flow)
assert [name for name, _ in flow] == ["Sequential", "Tanh", "Linear"]

x = pyframe.ones(2, requires_grad=True)
with nn.register_module_full_backward_pre_hook(scale):
    nn.Identity()(x).sum().backward()
assert [round(v, 6) for v in x.grad.tolist()] == [0.1, 0.1]

with nn.register_module_full_backward_pre_hook(validate):
    try:
        (nn.Identity()(pyframe.ones(2, requires_grad=True)) * float("inf")).sum().backward()
    except FloatingPointError as e:
        print("caught:", e)
    else:
        raise AssertionError("the infinite gradient was not caught")
print("seed 004: ok")
