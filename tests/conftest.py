"""Shared set-up for pyframe's tests.

NumPy is the reference for most tests; its BLAS must stay single-threaded so that the
2-core test machine is not oversubscribed while pyframe's own OpenMP threads run, so the
variable is set here, before anything imports numpy. Installed plugins (make test installs
the ones in plugins/) change numerics, so pyframe's own suite runs without entry-point
plugins; the plugin tests turn them on themselves.
"""

import os

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


@pytest.fixture
def no_installed_plugins():
    """Every plugin object registered with pyframe's plugin manager (built-in, entry point or run-time) is
    unregistered for the test, so only the test's own hooks run; plugin order and naming are restored."""
    from pyframe import _hooks

    pm = _hooks.plugin_manager
    saved = [(name, obj) for name, obj in pm.list_name_plugin() if not isinstance(obj, _hooks._FunctionPlugin)]
    order, describer = _hooks._plugin_order, _hooks._describer
    for _, obj in saved:
        pm.unregister(obj)
    yield
    for name, obj in saved:
        if not pm.is_registered(obj):
            pm.register(obj, name=name)
    _hooks.set_plugin_order(order)
    _hooks.set_plugin_describer(describer)
