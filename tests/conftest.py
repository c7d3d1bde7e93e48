"""Shared set-up for pyframe's tests.

NumPy is the reference for most tests; its BLAS must stay single-threaded so that the
2-core test machine is not oversubscribed while pyframe's own OpenMP threads run, so the
variable is set here, before anything imports numpy. Installed plugins (make test installs
the ones in plugins/) change numerics, so pyframe's own suite runs without entry-point
plugins; the plugin tests turn them on themselves.
"""

import os
import warnings

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import pyframe  # noqa: E402

try:  # optional: hypothesis profile for the property tests
    from hypothesis import HealthCheck, settings

    settings.register_profile("pyframe", max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("pyframe")
except ImportError:  # pragma: no cover
    pass


@pytest.fixture
def rng():
    """A fresh, seeded NumPy generator for each test."""
    return np.random.default_rng(1234)


@pytest.fixture
def restore_threads():
    """Lets a test change pyframe's thread count; puts the previous one back."""
    before = pyframe.get_num_threads()
    yield
    pyframe.set_num_threads(before)


@pytest.fixture
def restore_gemm():
    """Lets a test force a GEMM path; restores automatic selection afterwards."""
    lib = pyframe._backend.lib
    yield lib
    assert lib.pf_gemm_select(b"auto") == 0


@pytest.fixture
def restore_seed():
    """Lets a test reseed pyframe's generator; reseeds it afterwards so tests stay independent."""
    yield
    pyframe.manual_seed(0x5EED)


def _plugin_records() -> list:
    """What ``pyframe.plugins.list()`` reports, as plain values: a run-time enable, disable or configure shows."""
    return [(i.name, i.enabled, i.reason, repr(sorted(i.settings.items()))) for i in pyframe.plugins.list()]


@pytest.fixture(autouse=True)
def _global_hooks_and_plugins():
    """Every test starts from the same global hooks and plugins and leaves them so: the global module hooks and
    plugins a test registers are unregistered afterwards, the ones it unregisters come back, and the plugin records
    (enabled, settings, order) are restored."""
    from pyframe import _hooks

    pm = pyframe.plugins._manager
    before = pm.list_name_plugin()
    functions = [dict(r.functions) for r in _hooks.REGISTRIES]
    records = _plugin_records()
    yield
    if _plugin_records() != records:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            pm.reset()
    kept = {id(obj) for _, obj in before}
    for _, obj in pm.list_name_plugin():
        if id(obj) not in kept:
            pm.unregister(obj)
    for name, obj in before:
        if not pm.is_registered(obj):
            pm.register(obj, name=name)
    for registry, saved in zip(_hooks.REGISTRIES, functions, strict=True):
        if registry.functions != saved:
            registry.functions.clear()
            registry.functions.update(saved)
            registry.refresh()
    assert pyframe.nn.modules.module._global_hooks_active == _hooks.any_call_hooks()


@pytest.fixture
def no_installed_plugins():
    """Every plugin object registered with pyframe's plugin manager (built-in, entry point or run-time) is
    unregistered for the test, so only the test's own hooks run (the autouse fixture above brings them back)."""
    pm = pyframe.plugins._manager
    for _, obj in pm.list_name_plugin():
        if obj is not None:
            pm.unregister(obj)
