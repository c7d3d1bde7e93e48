"""Devices: the CPU as torch's device type, accelerators refused with one clear error."""

import pickle

import pytest

import pyframe
from pyframe import nn

ACCELERATORS = ["cuda", "cuda:0", "mps", "xpu"]


def test_device_type_index_equality():
    d = pyframe.device("cpu")
    assert d.type == "cpu" and d.index is None and str(d) == "cpu" and repr(d) == "device(type='cpu')"
    assert d == "cpu" and d == pyframe.device("cpu") and d != "cpu:0" and d != 3
    assert pyframe.device("cpu", 0) == pyframe.device("cpu:0") == "cpu:0"
    assert pyframe.device("cpu:0").index == 0 and str(pyframe.device("cpu", 0)) == "cpu:0"
    assert pyframe.device(d) == d and len({d, pyframe.device("cpu")}) == 1
    assert pickle.loads(pickle.dumps(pyframe.device("cpu:1"))) == "cpu:1"


def test_tensor_device_and_to():
    x = pyframe.ones(2, 3)
    assert x.device == pyframe.device("cpu") and x.device.type == "cpu" and not x.is_cuda and x.get_device() == -1
    assert x.to("cpu") is x and x.cpu() is x and x.to(pyframe.device("cpu")) is x
    assert x.to(x.device, pyframe.float64).dtype == pyframe.float64
    assert x.to("cpu", dtype=pyframe.float16).dtype == pyframe.float16
    assert x.to(pyframe.zeros(1, dtype=pyframe.int64)).dtype == pyframe.int64
    assert x.to(device="cpu", non_blocking=True) is x


def test_factories_accept_cpu_device():
    cpu = pyframe.device("cpu")
    for t in (
        pyframe.zeros(2, device=cpu), pyframe.ones(2, device="cpu"), pyframe.empty(2, device="cpu:0"),
        pyframe.full((2,), 1.0, device=cpu), pyframe.arange(3, device=cpu), pyframe.rand(2, device=cpu),
        pyframe.randn(2, device=cpu), pyframe.randint(0, 3, (2,), device=cpu), pyframe.tensor([1.0], device=cpu),
        pyframe.eye(2, device=cpu), pyframe.zeros_like(pyframe.ones(2), device=cpu),
        pyframe.linspace(0, 1, 3, device="cpu"),
    ):  # fmt: skip
        assert t.device == "cpu"


@pytest.mark.parametrize("spec", ACCELERATORS)
def test_accelerators_are_one_clear_error(spec):
    x = pyframe.ones(2)
    m = nn.Linear(2, 2)
    calls = [
        lambda: pyframe.device(spec), lambda: x.to(spec), lambda: x.to(device=spec),
        lambda: pyframe.zeros(2, device=spec),
        lambda: pyframe.tensor([1.0], device=spec), lambda: m.to(spec), lambda: pyframe.set_default_device(spec),
        lambda: pyframe.randn(2, device=spec), lambda: pyframe.ones_like(x, device=spec),
    ]  # fmt: skip
    for call in calls:
        with pytest.raises(RuntimeError, match="pyframe runs on the CPU only"):
            call()
    with pytest.raises(RuntimeError, match="pyframe runs on the CPU only"):
        x.cuda()
    with pytest.raises(RuntimeError, match="pyframe runs on the CPU only"):
        m.cuda()


def test_unknown_device_string():
    with pytest.raises(ValueError, match="device type"):
        pyframe.device("gpu")
    with pytest.raises(TypeError):
        pyframe.device(None)


def test_accelerator_queries_answer_none():
    assert pyframe.cuda.is_available() is False and pyframe.cuda.device_count() == 0
    pyframe.cuda.manual_seed_all(0)
    pyframe.cuda.manual_seed(0)
    assert pyframe.accelerator.is_available() is False and pyframe.accelerator.current_accelerator() is None
    assert pyframe.backends.mps.is_available() is False
    pyframe.backends.cudnn.benchmark = True
    with pytest.raises(RuntimeError, match="CPU only"):
        pyframe.cuda.current_device()


def test_default_device_and_module_to():
    assert pyframe.get_default_device() == "cpu"
    pyframe.set_default_device("cpu")
    pyframe.set_default_device(None)
    assert pyframe.get_default_device() == pyframe.device("cpu")
    m = nn.Linear(2, 2)
    assert m.to(pyframe.device("cpu")) is m and m.to("cpu", pyframe.float64).weight.dtype == pyframe.float64


def test_constants():
    import math

    assert pyframe.pi == math.pi and pyframe.e == math.e and pyframe.inf == math.inf and math.isnan(pyframe.nan)


def test_generator_streams_are_reproducible():
    a = pyframe.rand(4, generator=pyframe.Generator().manual_seed(7))
    b = pyframe.rand(4, generator=pyframe.Generator().manual_seed(7))
    assert a.tolist() == b.tolist()
    g = pyframe.Generator().manual_seed(7)
    first = pyframe.randn(3, generator=g)
    state = g.get_state()
    second = pyframe.randn(3, generator=g)
    assert first.tolist() != second.tolist()
    assert pyframe.randn(3, generator=g.set_state(state)).tolist() == second.tolist()
    with pytest.raises(TypeError, match="Generator"):
        pyframe.rand(2, generator=3)


def test_backends_are_importable_submodules_with_torchs_flags():
    import importlib

    cudnn = importlib.import_module("pyframe.backends.cudnn")
    assert cudnn is pyframe.backends.cudnn and not cudnn.is_available() and cudnn.version() is None
    before = cudnn.deterministic
    with cudnn.flags(enabled=False, deterministic=True):
        assert (cudnn.enabled, cudnn.deterministic) == (False, True)
    assert cudnn.enabled and cudnn.deterministic == before
    for name in ("cuda", "mps", "openmp", "cpu", "mkl", "mkldnn", "opt_einsum"):
        assert importlib.import_module(f"pyframe.backends.{name}") is getattr(pyframe.backends, name)
    assert pyframe.backends.openmp.is_available() is pyframe._backend.openmp_enabled()
    assert pyframe.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    with pyframe.backends.cuda.sdp_kernel(enable_flash=False):
        assert not pyframe.backends.cuda.flash_sdp_enabled()
    assert pyframe.backends.cuda.flash_sdp_enabled() and not pyframe.backends.cuda.is_built()
