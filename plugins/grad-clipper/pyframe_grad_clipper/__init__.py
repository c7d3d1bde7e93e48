"""pyframe plugin ``grad-clipper``: clips the gradients a module's backward passes on.

Implements the full backward (post) hook. With ``mode = "value"`` (the default) every element of
every grad_input tensor is clamped to ``[-max_value, max_value]``; with ``mode = "norm"`` each
grad_input tensor whose 2-norm exceeds ``max_norm`` is scaled down to norm ``max_norm`` (a tensor
whose norm is NaN or Inf is left as it is: that is nan-detector's business). ``modules`` restricts
the clipping to modules whose class (or one of its base classes) has one of the given names; the
empty list means every module. None entries of grad_input stay None.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pluggy

# The same marker as ``pyframe.hookimpl`` (pluggy markers are keyed by project name). It is built here
# rather than imported so that this module never imports pyframe while it is itself being imported:
# ``import pyframe_grad_clipper`` before ``import pyframe`` would otherwise make pyframe's entry-point autoload
# register this module half-initialized, with no hooks. pyframe is imported inside the functions.
hookimpl = pluggy.HookimplMarker("pyframe")

__all__ = [
    "pyframe_declare_settings",
    "pyframe_configure",
    "pyframe_unconfigure",
    "pyframe_module_full_backward",
    "pyframe_summary",
]
__version__ = "0.1.1"

MODES = ("value", "norm")
DEFAULTS = {"max_value": 1.0, "mode": "value", "max_norm": 1.0, "modules": []}

# configured state; the defaults equal the declared defaults, so the plugin works unconfigured
max_value = 1.0
mode = "value"
max_norm = 1.0
modules: frozenset[str] = frozenset()
# what pyframe_summary reports; restarted by pyframe_configure
stats = {"gradients seen": 0, "gradients clipped": 0}


def _finite(value: float) -> None:
    if math.isinf(value):
        raise ValueError("expected a finite number")


@hookimpl
def pyframe_declare_settings() -> dict:
    from pyframe.plugins import Setting, declare

    return declare(
        changes_numerics=True,  # clips gradients: numerics change
        max_value=Setting(
            float,
            DEFAULTS["max_value"],
            gt=0.0,
            validator=_finite,
            help='mode "value": clamp every gradient element to [-max_value, max_value]',
        ),
        mode=Setting(
            str, DEFAULTS["mode"], choices=MODES, help='"value": clamp elements; "norm": rescale each tensor\'s norm'
        ),
        max_norm=Setting(
            float,
            DEFAULTS["max_norm"],
            gt=0.0,
            validator=_finite,
            help='mode "norm": scale each gradient tensor down to at most this 2-norm',
        ),
        modules=Setting(
            list, list(DEFAULTS["modules"]), help="class names of the modules to clip; empty: every module"
        ),
    )


def _positive(key: str, value: Any) -> float:
    value = float(value)
    if not value > 0 or math.isinf(value):
        raise ValueError(f"grad-clipper: {key} must be a positive finite number, got {value!r}")
    return value


@hookimpl
def pyframe_configure(settings: Mapping) -> None:
    global max_value, mode, max_norm, modules
    new_mode = settings.get("mode", DEFAULTS["mode"])
    if new_mode not in MODES:
        raise ValueError(f"grad-clipper: mode must be one of {list(MODES)}, got {new_mode!r}")
    new_value = _positive("max_value", settings.get("max_value", DEFAULTS["max_value"]))
    new_norm = _positive("max_norm", settings.get("max_norm", DEFAULTS["max_norm"]))
    names = settings.get("modules", DEFAULTS["modules"]) or []
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise ValueError(f"grad-clipper: modules must be a list of class names, got {names!r}")
    max_value, mode, max_norm, modules = new_value, new_mode, new_norm, frozenset(names)
    stats.update(dict.fromkeys(stats, 0))


@hookimpl
def pyframe_unconfigure() -> None:
    global max_value, mode, max_norm, modules
    max_value, mode, max_norm, modules = DEFAULTS["max_value"], DEFAULTS["mode"], DEFAULTS["max_norm"], frozenset()


def applies_to(module: Any) -> bool:
    """True when ``module`` is clipped under the current ``modules`` setting."""
    if not modules:
        return True
    return any(cls.__name__ in modules for cls in type(module).__mro__)


def clip(grad: Any) -> Any:
    """One gradient tensor clipped under the current settings (None stays None)."""
    import pyframe

    if grad is None or not isinstance(grad, pyframe.Tensor) or not grad.is_floating_point():
        return grad
    stats["gradients seen"] += 1
    if grad.numel() == 0:  # an empty batch: nothing to clip (and max() of nothing is undefined)
        return grad
    if mode == "value":
        if float(grad.abs().max().item()) > max_value:
            stats["gradients clipped"] += 1
            return grad.clamp(-max_value, max_value)
        return grad
    norm = float(grad.norm().item())
    if norm > max_norm and math.isfinite(norm):
        stats["gradients clipped"] += 1
        return grad * (max_norm / norm)
    return grad


@hookimpl
def pyframe_module_full_backward(module: Any, grad_input: tuple, grad_output: tuple) -> Any:
    if not applies_to(module) or all(g is None for g in grad_input):
        return None
    return tuple(clip(g) for g in grad_input)


@hookimpl
def pyframe_summary() -> dict:
    """Gradient tensors seen and clipped (some element beyond max_value, or the norm beyond max_norm)."""
    return dict(stats)
