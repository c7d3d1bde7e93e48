"""Same as torch.autograd.anomaly_mode: ``detect_anomaly`` and ``set_detect_anomaly``.

With anomaly detection on, every recorded node keeps the stack of the forward call that made it
(``grad_fn.metadata["traceback_"]``), and backward checks the gradients each node returns: a NaN raises
``RuntimeError("Function 'DivBackward0' returned nan values in its 1th output.")``, and any error in a node's
backward is preceded by a warning naming the node and showing that forward stack. Like torch's, the switch is
global (not per thread) and slows both passes down: it is for debugging.
"""

from __future__ import annotations

import warnings
from contextlib import ContextDecorator

from pyframe.autograd import graph

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]


def is_anomaly_enabled() -> bool:
    """Same as torch.is_anomaly_enabled: whether anomaly detection is on."""
    return graph.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    """Same as torch.is_anomaly_check_nan_enabled: whether anomaly detection checks gradients for NaN."""
    return graph.anomaly_check_nan


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Same as torch.set_anomaly_enabled: turns anomaly detection on or off (and its NaN check)."""
    graph.anomaly = bool(enabled)
    graph.anomaly_check_nan = bool(check_nan)


class detect_anomaly(ContextDecorator):  # noqa: N801 - torch's name
    """Same as torch.autograd.detect_anomaly: a context manager (or decorator) that turns anomaly detection
    on inside, with a warning that it slows things down; ``check_nan=False`` keeps the forward stacks but skips
    the NaN check."""

    def __init__(self, check_nan: bool = True) -> None:
        self.prev = graph.anomaly
        self.check_nan = check_nan
        self.prev_check_nan = graph.anomaly_check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)  # fmt: skip

    def __enter__(self) -> None:
        set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *args: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)


class set_detect_anomaly:  # noqa: N801 - torch's name
    """Same as torch.autograd.set_detect_anomaly: turns anomaly detection on or off at once (and back to the
    previous setting on exit when used as a context manager)."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self.prev = graph.anomaly
        self.prev_check_nan = graph.anomaly_check_nan
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *args: object) -> None:
        set_anomaly_enabled(self.prev, self.prev_check_nan)
