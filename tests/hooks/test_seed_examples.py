"""The examples of seeds 000, 001, 003 and 004 (/work/shared/seeds), translated to Python,
behave as the seeds say (JavaScript's ``null`` is ``pyframe.nn.BLOCK``)."""

from __future__ import annotations

import logging

import pytest

import pyframe
import pyframe.nn as nn

log = logging.getLogger("test_seeds")


pytestmark = pytest.mark.usefixtures("no_installed_plugins")  # built-in plugins off: only the tests' own hooks


def grad_step(model, x):
    model(x).sum().backward()


# ---- 000: register_module_parameter_registration_hook ---------------------------------------------------


def test_000_ensure_all_parameters_float32():
    def hook(module, name, param):
        if param is not None and param.dtype != pyframe.float32:
            log.info("Converting parameter '%s' to float32", name)
            return param.to(dtype=pyframe.float32)

    nn.register_module_parameter_registration_hook(hook)
    m = nn.Module()
    m.w = nn.Parameter(pyframe.ones(2, dtype=pyframe.float64))
    assert type(m.w) is nn.Parameter and m.w.dtype == pyframe.float32 and m.w.requires_grad


def test_000_log_all_parameter_registration():
    seen = []

    def hook(module, name, param):
        if param is not None:
            seen.append(f"Parameter '{name}' in {type(module).__name__}: shape={tuple(param.shape)}")

    nn.register_module_parameter_registration_hook(hook)
    nn.Linear(3, 2)
    assert seen == ["Parameter 'weight' in Linear: shape=(2, 3)", "Parameter 'bias' in Linear: shape=(2,)"]


def test_000_make_certain_parameters_non_trainable():
    def hook(module, name, param):
        if param is not None and name.startswith("_"):
            param.requires_grad = False

    nn.register_module_parameter_registration_hook(hook)
    m = nn.Module()
    m.register_parameter("_frozen", nn.Parameter(pyframe.ones(1)))
    m.register_parameter("trained", nn.Parameter(pyframe.ones(1)))
    assert not m._frozen.requires_grad and m.trained.requires_grad


def test_000_custom_parameter_initialization_is_final():
    def hook(module, name, param):
        if param is not None and name == "weight" and isinstance(module, nn.Linear):
            param.data.uniform_(-0.05, 0.05)

    nn.register_module_parameter_registration_hook(hook)
    lin = nn.Linear(50, 40)
    assert float(lin.weight.abs().max()) <= 0.05


def test_000_returning_null_prevents_registration():
    nn.register_module_parameter_registration_hook(lambda m, n, p: nn.BLOCK if n == "bias" else None)
    lin = nn.Linear(2, 2)
    assert lin.bias is None and [n for n, _ in lin.named_parameters()] == ["weight"]


# ---- 001: register_module_buffer_registration_hook ---------------------------------------------------------


def test_001_ensure_all_buffers_float32():
    def hook(module, name, buffer):
        if buffer is not None and buffer.dtype.is_floating_point and buffer.dtype != pyframe.float32:
            return buffer.to(dtype=pyframe.float32)

    nn.register_module_buffer_registration_hook(hook)
    m = nn.Module()
    m.register_buffer("b", pyframe.ones(2, dtype=pyframe.float64))
    assert m.b.dtype == pyframe.float32


def test_001_track_buffer_registration():
    buffers = []

    def hook(module, name, buffer):
        if buffer is not None:
            buffers.append({"module": type(module).__name__, "name": name, "shape": tuple(buffer.shape),
                            "dtype": buffer.dtype})  # fmt: skip

    nn.register_module_buffer_registration_hook(hook)
    nn.BatchNorm1d(3)
    assert [b["name"] for b in buffers] == ["running_mean", "running_var", "num_batches_tracked"]
    assert buffers[0] == {"module": "BatchNorm1d", "name": "running_mean", "shape": (3,), "dtype": pyframe.float32}


def test_001_prevent_buffers_with_certain_names():
    def hook(module, name, buffer):
        if name == "temp_buffer":
            return nn.BLOCK

    nn.register_module_buffer_registration_hook(hook)
    m = nn.Module()
    m.register_buffer("temp_buffer", pyframe.ones(1))
    m.register_buffer("kept", pyframe.ones(1))
    assert m.temp_buffer is None and list(m.state_dict()) == ["kept"]


def test_001_receives_none():
    seen = []
    nn.register_module_buffer_registration_hook(lambda m, n, b: seen.append((n, b)))
    nn.Module().register_buffer("gone", None)
    assert seen == [("gone", None)]


# ---- 003: register_module_backward_hook (full, post) ----------------------------------------------------


def test_003_monitor_gradient_statistics():
    norms = []

    def hook(module, grad_input, grad_output):
        for g in grad_input:
            if g is not None:
                norms.append(g.norm().item())

    nn.register_module_backward_hook(hook)
    grad_step(nn.Linear(3, 2), pyframe.ones(4, 3, requires_grad=True))
    assert len(norms) == 1 and norms[0] > 0


def test_003_clip_gradients():
    def hook(module, grad_input, grad_output):
        return tuple(None if g is None else pyframe.clamp(g, -1, 1) for g in grad_input)

    nn.register_module_backward_hook(hook)
    x = pyframe.ones(2, requires_grad=True)
    (nn.Identity()(x) * 100).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]  # the Identity's grad_input was 100: clipped
    y = pyframe.ones(2, requires_grad=True)

    class Scale(nn.Module):
        def forward(self, x):
            return x * 100

    Scale()(y).sum().backward()
    assert y.grad.tolist() == [1.0, 1.0]


def test_003_detect_dying_layers():
    warned = []

    def hook(module, grad_input, grad_output):
        for i, g in enumerate(grad_input):
            if g is not None and pyframe.all(g.eq(0)).item():
                warned.append(f"{type(module).__name__} layer {i} has zero gradients!")

    nn.register_module_full_backward_hook(hook)  # the alias
    grad_step(nn.ReLU(), -pyframe.ones(3, requires_grad=True))
    assert warned == ["ReLU layer 0 has zero gradients!"]


# ---- 004: register_module_full_backward_pre_hook -------------------------------------------------------------


def test_004_validate_incoming_gradients():
    bad = []

    def hook(module, grad_output):
        for i, g in enumerate(grad_output):
            if g is not None and (pyframe.isnan(g).any().item() or pyframe.isinf(g).any().item()):
                bad.append(f"Invalid gradients at layer {i}")

    nn.register_module_full_backward_pre_hook(hook)
    x = pyframe.ones(2, requires_grad=True)
    (nn.Identity()(x) * float("inf")).sum().backward()
    assert bad == ["Invalid gradients at layer 0"]


def test_004_scale_incoming_gradients():
    def hook(module, grad_output):
        return tuple(None if g is None else g.mul(0.1) for g in grad_output)

    nn.register_module_full_backward_pre_hook(hook)
    x = pyframe.ones(2, requires_grad=True)
    nn.Identity()(x).sum().backward()
    assert [round(v, 6) for v in x.grad.tolist()] == [0.1, 0.1]


def test_004_monitor_gradient_flow():
    seen = []

    def hook(module, grad_output):
        norm = grad_output[0].norm().item() if grad_output[0] is not None else 0
        seen.append((type(module).__name__, norm))

    nn.register_module_full_backward_pre_hook(hook)
    model = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
    grad_step(model, pyframe.ones(1, 2, requires_grad=True))
    assert [name for name, _ in seen] == ["Sequential", "Tanh", "Linear"]
