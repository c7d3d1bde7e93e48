"""pyframe's fuzzer: a seeded random walk over the public Tensor, functional and nn API.

``python -m tools.fuzz`` runs seeds in child processes and prints
``fuzz: N calls, C crashes, W wrong, H hangs``; ``--seed S --replay I`` replays one call.
See docs/reliability.md.

When ``PYFRAME_FUZZ_CORE`` names a compiled core (the AddressSanitizer build made by
``tools.fuzz.asan``), it is loaded as ``pyframe._core`` here, before anything imports pyframe.
"""

import importlib.util
import os
import sys

_core = os.environ.get("PYFRAME_FUZZ_CORE")
if _core and "pyframe._core" not in sys.modules:
    _spec = importlib.util.spec_from_file_location("pyframe._core", _core)
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    sys.modules["pyframe._core"] = _mod
