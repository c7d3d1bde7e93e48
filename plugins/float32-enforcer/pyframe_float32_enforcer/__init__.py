"""pyframe plugin ``float32-enforcer``: every floating parameter and buffer is registered as float32.

Implements the parameter and buffer registration hooks. A floating tensor of another floating dtype
is converted to the configured ``dtype`` (float32 by default); a Parameter stays a Parameter and
keeps ``requires_grad``; integer and bool tensors (and None) are left alone. With ``strict = true``
the registration raises ``TypeError`` instead of converting; with ``log = true`` each conversion is
logged to the ``pyframe.plugins.float32_enforcer`` logger.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import pluggy

# The same marker as ``pyframe.hookimpl`` (pluggy markers are keyed by project name). It is built here
# rather than imported so that this module never imports pyframe while it is itself being imported:
# ``import pyframe_float32_enforcer`` before ``import pyframe`` would otherwise make pyframe's entry-point autoload
# register this module half-initialized, with no hooks. pyframe is imported inside the functions.
hookimpl = pluggy.HookimplMarker("pyframe")

__all__ = [
    "pyframe_declare_settings",
    "pyframe_configure",
    "pyframe_unconfigure",
    "pyframe_module_parameter_registration",
    "pyframe_module_buffer_registration",
    "pyframe_summary",
]
__version__ = "0.1.0"

logger = logging.getLogger("pyframe.plugins.float32_enforcer")

# the floating dtype names pyframe knows: canonical names and their aliases
FLOAT_DTYPE_NAMES = ("float16", "float32", "float64", "half", "float", "double")

DEFAULTS = {"dtype": "float32", "strict": False, "log": False}

# configured state; the defaults equal the declared defaults, so the plugin works unconfigured
dtype_name = "float32"  # the configured name, as given
_target = None  # the pyframe dtype, resolved on first use
strict = False
log = False
# what pyframe_summary reports; restarted by pyframe_configure
stats = {"parameters converted": 0, "buffers converted": 0}


@hookimpl
def pyframe_declare_settings() -> dict:
    from pyframe.plugins import Setting, declare

    return declare(
        changes_numerics=True,  # converts parameters and buffers: numerics change
        dtype=Setting(
            str,
            DEFAULTS["dtype"],
            choices=FLOAT_DTYPE_NAMES,
            help="the floating dtype every floating parameter and buffer is registered as",
        ),
        strict=Setting(
            bool, DEFAULTS["strict"], help="raise TypeError on a floating tensor of another dtype instead of converting"
        ),
        log=Setting(bool, DEFAULTS["log"], help="log each conversion to the 'pyframe.plugins.float32_enforcer' logger"),
    )


def resolve_dtype(name: Any) -> Any:
    """The pyframe floating dtype for a name ("float64", "double", ...) or a floating dtype object."""
    import pyframe

    if isinstance(name, str):
        dt = getattr(pyframe, name, None) if name in FLOAT_DTYPE_NAMES else None
    else:
        dt = name if isinstance(name, type(pyframe.float32)) else None
    if dt is None or not dt.is_floating_point:
        raise ValueError(f"float32-enforcer: dtype must be one of {list(FLOAT_DTYPE_NAMES)}, got {name!r}")
    return dt


def target_dtype() -> Any:
    """The dtype floating tensors are registered as under the current settings."""
    global _target
    if _target is None:
        _target = resolve_dtype(dtype_name)
    return _target


@hookimpl
def pyframe_configure(settings: Mapping) -> None:
    global dtype_name, _target, strict, log
    name = settings.get("dtype", DEFAULTS["dtype"])
    dt = resolve_dtype(name)  # raises before any state changes
    dtype_name, _target = getattr(dt, "name", name), dt
    strict = bool(settings.get("strict", DEFAULTS["strict"]))
    log = bool(settings.get("log", DEFAULTS["log"]))
    stats.update(dict.fromkeys(stats, 0))


@hookimpl
def pyframe_unconfigure() -> None:
    global dtype_name, _target, strict, log
    dtype_name, _target, strict, log = DEFAULTS["dtype"], None, DEFAULTS["strict"], DEFAULTS["log"]


def _enforce(kind: str, module: Any, name: str, value: Any) -> Any:
    import pyframe
    from pyframe.nn import Parameter

    if value is None or not isinstance(value, pyframe.Tensor) or not value.is_floating_point():
        return None
    target = target_dtype()
    if value.dtype == target:
        return None
    if strict:
        raise TypeError(
            f"float32-enforcer: {type(module).__name__}.{name}: {kind} has dtype {value.dtype.name}, "
            f"expected {target.name} (strict mode; set strict = false to convert instead)"
        )
    if isinstance(value, Parameter):
        converted = Parameter(value.detach().to(target), value.requires_grad)
    else:
        converted = value.to(target)
    stats[f"{kind}s converted"] += 1
    if log:
        logger.info(
            "converted %s %s.%s from %s to %s",
            kind,
            type(module).__name__,
            name,
            value.dtype.name,
            target.name,
        )
    return converted


@hookimpl
def pyframe_module_parameter_registration(module: Any, name: str, param: Any) -> Any:
    return _enforce("parameter", module, name, param)


@hookimpl
def pyframe_module_buffer_registration(module: Any, name: str, buffer: Any) -> Any:
    return _enforce("buffer", module, name, buffer)


@hookimpl
def pyframe_summary() -> dict:
    """Floating parameters and buffers registered in another dtype and converted."""
    return dict(stats)
