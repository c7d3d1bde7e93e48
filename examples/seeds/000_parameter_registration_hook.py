"""Seed 000: ``pyframe.nn.register_module_parameter_registration_hook``, a hook on every parameter any module
registers: validate, transform (here: force float32, freeze ``_``-names, log), or block it (``pyframe.nn.BLOCK``)."""

import pyframe
import pyframe.nn as nn


def to_float32(module, name, param):
    if param is not None and param.dtype != pyframe.float32:
        print(f"converting parameter {name!r} of {type(module).__name__} to float32")
        return param.to(dtype=pyframe.float32)
    return None


def freeze_private(module, name, param):
    if param is not None and name.startswith("_"):
        param.requires_grad = False


def no_bias(module, name, param):
    return nn.BLOCK if name == "bias" else None  # the seed's "return null"


with nn.register_module_parameter_registration_hook(to_float32):
    layer = nn.Linear(3, 2, dtype=pyframe.float64)
assert layer.weight.dtype == pyframe.float32 and isinstance(layer.weight, nn.Parameter)

with nn.register_module_parameter_registration_hook(freeze_private):
    m = nn.Module()
    m.register_parameter("_scale", nn.Parameter(pyframe.ones(1)))
    m.register_parameter("shift", nn.Parameter(pyframe.zeros(1)))
assert not m._scale.requires_grad and m.shift.requires_grad

with nn.register_module_parameter_registration_hook(no_bias):
    unbiased = nn.Linear(3, 2)
assert unbiased.bias is None and [n for n, _ in unbiased.named_parameters()] == ["weight"]
print("seed 000: ok")
