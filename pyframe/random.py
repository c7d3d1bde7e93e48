"""Same as torch.random: the global generator's seed and state, and ``fork_rng``.

The functions are the ones ``pyframe`` exports at top level (``pyframe.manual_seed`` is
``pyframe.random.manual_seed``); the state is pyframe's counter-based generator's ``[seed, offset]``
(an int64 tensor), not torch's Mersenne Twister bytes, so a state moves between pyframe processes, not
between pyframe and torch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Generator as _PyGenerator
from collections.abc import Iterable

from pyframe._device import DeviceError
from pyframe.ops.random import (
    Generator,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    seed,
    set_rng_state,
)

__all__ = [
    "set_rng_state", "get_rng_state", "manual_seed", "seed", "initial_seed", "fork_rng", "Generator",
    "default_generator",
]  # fmt: skip


@contextlib.contextmanager
def fork_rng(
    devices: Iterable | None = None,
    enabled: bool = True,
    _caller: str = "fork_rng",
    _devices_kw: str = "devices",
    device_type: str = "cuda",
) -> _PyGenerator[None, None, None]:
    """Same as torch.random.fork_rng: the global generator's state is saved on entry and restored on
    exit, so the random numbers drawn inside do not change those drawn after.

    Args:
        devices: the accelerator devices whose generators to fork as well. pyframe has none: an empty
            list or None is accepted, naming a device raises the one device error.
        enabled: with False the context does nothing.
        device_type: the accelerator type ``devices`` refer to (``"cuda"`` by default, as torch);
            only the CPU generator exists, so the type does not matter when ``devices`` is empty.
    """
    if devices is not None and list(devices):
        raise DeviceError(
            f"{_caller}(): {_devices_kw}={list(devices)!r} names {device_type} devices; pyframe runs on the CPU "
            f"only, so pass {_devices_kw}=[] (the CPU generator is always forked)"
        )
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
