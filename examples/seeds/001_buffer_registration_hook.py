"""Seed 001: ``pyframe.nn.register_module_buffer_registration_hook``, a hook on every buffer any module registers:
track buffers, force a dtype, or refuse some names (``pyframe.nn.BLOCK``)."""

import pyframe
import pyframe.nn as nn

seen = []


def track(module, name, buffer):
    if buffer is not None:
        seen.append((type(module).__name__, name, tuple(buffer.shape), buffer.dtype.name))


def to_float32(module, name, buffer):
    if buffer is not None and buffer.dtype.is_floating_point and buffer.dtype != pyframe.float32:
        return buffer.to(dtype=pyframe.float32)
    return None


def no_temp(module, name, buffer):
    return nn.BLOCK if name == "temp_buffer" else None


with nn.register_module_buffer_registration_hook(track):
    nn.BatchNorm1d(4)
print("\n".join(f"{cls}.{name}: shape {shape}, {dtype}" for cls, name, shape, dtype in seen))
assert [name for _, name, _, _ in seen] == ["running_mean", "running_var", "num_batches_tracked"]

with nn.register_module_buffer_registration_hook(to_float32), nn.register_module_buffer_registration_hook(no_temp):
    m = nn.Module()
    m.register_buffer("stats", pyframe.zeros(3, dtype=pyframe.float64))
    m.register_buffer("temp_buffer", pyframe.ones(1))
assert m.stats.dtype == pyframe.float32 and m.temp_buffer is None and list(m.state_dict()) == ["stats"]
print("seed 001: ok")
