"""pyframe plugin ``nan-detector``: reports NaN and Inf in module outputs and incoming gradients.

Implements the forward hook (checks every floating tensor of a module's output, when
``check_forward`` is true) and the full backward pre hook (checks every gradient arriving at a
module's outputs). A finding names the module (its class, and its qualified name such as
``encoder.0`` when the module was added to a parent while the plugin was active) and which
output or gradient held the bad values. ``action``: ``"raise"`` raises ``FloatingPointError``;
``"warn"`` warns (``NanDetectedWarning``, a ``RuntimeWarning``); ``"zero"`` replaces the NaN and
Inf elements with 0 and warns.

To know qualified names the plugin also implements the module registration hook, only to record
(weakly) which parent each submodule was added to under which name; it never changes a registration.
"""

from __future__ import annotations

import contextlib
import warnings
import weakref
from collections.abc import Mapping
from typing import Any

import pluggy

# The same marker as ``pyframe.hookimpl`` (pluggy markers are keyed by project name). It is built here
# rather than imported so that this module never imports pyframe while it is itself being imported:
# ``import pyframe_nan_detector`` before ``import pyframe`` would otherwise make pyframe's entry-point autoload
# register this module half-initialized, with no hooks. pyframe is imported inside the functions.
hookimpl = pluggy.HookimplMarker("pyframe")

__all__ = [
    "NanDetectedWarning",
    "pyframe_declare_settings",
    "pyframe_configure",
    "pyframe_unconfigure",
    "pyframe_module_module_registration",
    "pyframe_module_forward",
    "pyframe_module_full_backward_pre",
    "qualified_name",
    "pyframe_summary",
]
__version__ = "0.1.0"

ACTIONS = ("raise", "warn", "zero")
DEFAULTS = {"action": "raise", "check_forward": True}

# configured state; the defaults equal the declared defaults, so the plugin works unconfigured
action = "raise"
check_forward = True
# what pyframe_summary reports; restarted by pyframe_configure
stats = {"tensors checked": 0, "non-finite found": 0}

# child module -> (weak reference to its parent, the name it was registered under)
_parents: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class NanDetectedWarning(RuntimeWarning):
    """Warned by nan-detector with ``action = "warn"`` or ``"zero"``."""


def _zeroes(settings: Mapping) -> bool:
    return settings["action"] == "zero"


@hookimpl
def pyframe_declare_settings() -> dict:
    from pyframe.plugins import Setting, declare

    return declare(
        changes_numerics=_zeroes,  # only action = "zero" changes a value
        action=Setting(
            str,
            DEFAULTS["action"],
            choices=ACTIONS,
            help='"raise": FloatingPointError; "warn": a warning; "zero": replace NaN/Inf with 0 and warn',
        ),
        check_forward=Setting(
            bool, DEFAULTS["check_forward"], help="also check module outputs (not only incoming gradients)"
        ),
    )


@hookimpl
def pyframe_configure(settings: Mapping) -> None:
    global action, check_forward
    new_action = settings.get("action", DEFAULTS["action"])
    if new_action not in ACTIONS:
        raise ValueError(f"nan-detector: action must be one of {list(ACTIONS)}, got {new_action!r}")
    action = new_action
    check_forward = bool(settings.get("check_forward", DEFAULTS["check_forward"]))
    stats.update(dict.fromkeys(stats, 0))


@hookimpl
def pyframe_unconfigure() -> None:
    global action, check_forward
    action, check_forward = DEFAULTS["action"], DEFAULTS["check_forward"]


# ---- module names ----------------------------------------------------------------------------


@hookimpl
def pyframe_module_module_registration(module: Any, name: str, submodule: Any) -> None:
    if submodule is not None:
        # a module that is not weak-referenceable simply gets no qualified name
        with contextlib.suppress(TypeError):
            _parents[submodule] = (weakref.ref(module), name)
    return None


def qualified_name(module: Any) -> str | None:
    """The dotted path of ``module`` from the outermost parent the plugin saw it added to
    (``"encoder.0"``), or None when it was never seen as a submodule."""
    parts: list[str] = []
    seen: set[int] = set()
    cur = module
    while id(cur) not in seen:
        seen.add(id(cur))
        try:
            entry = _parents.get(cur)
        except TypeError:
            entry = None
        if entry is None:
            break
        parent = entry[0]()
        # the registration may have been undone or replaced since: trust it only if still true
        if parent is None or getattr(parent, "_modules", {}).get(entry[1]) is not cur:
            break
        parts.append(entry[1])
        cur = parent
    return ".".join(reversed(parts)) or None


def describe(module: Any) -> str:
    """``Linear 'encoder.0'`` (class and qualified name), or just the class name."""
    qual = qualified_name(module)
    cls = type(module).__name__
    return f"{cls} '{qual}'" if qual else cls


# ---- checking --------------------------------------------------------------------------------


def _problem(t: Any) -> str | None:
    """None when ``t`` is not a floating tensor or is all finite; else what is wrong with it."""
    import pyframe

    if not isinstance(t, pyframe.Tensor) or not t.is_floating_point():
        return None
    stats["tensors checked"] += 1
    if bool(pyframe.isfinite(t).all()):
        return None
    stats["non-finite found"] += 1
    # counted as int64: summing a bool mask directly is not reliable in every pyframe version
    n_nan = int(pyframe.isnan(t).to(pyframe.int64).sum().item())
    n_inf = int(pyframe.isinf(t).to(pyframe.int64).sum().item())
    found = [f"{n} {what}" for n, what in ((n_nan, "NaN"), (n_inf, "Inf")) if n]
    return f"{' and '.join(found)} of {t.numel()} elements"


def _zeroed(t: Any) -> Any:
    import pyframe

    return pyframe.where(pyframe.isfinite(t), t, pyframe.zeros_like(t))


def _report(module: Any, where: str, problem: str) -> None:
    msg = f"nan-detector: {where} of {describe(module)} contains {problem}"
    if action == "raise":
        raise FloatingPointError(msg)
    if action == "zero":
        msg += "; replaced with 0"
    warnings.warn(msg, NanDetectedWarning, stacklevel=3)


def _check(module: Any, where: str, value: Any) -> tuple[bool, Any]:
    """Checks ``value`` (a tensor, or a tuple/list/dict of them, one level deep). Returns whether
    it changed and the value to use (NaN/Inf zeroed under ``action = "zero"``)."""
    if isinstance(value, (tuple, list)):
        items = [_check(module, f"{where}[{i}]", v) for i, v in enumerate(value)]
        if not any(changed for changed, _ in items):
            return False, value
        new = [v for _, v in items]
        if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
            return True, type(value)(*new)
        return True, type(value)(new)
    if isinstance(value, dict):
        items = {k: _check(module, f"{where}[{k!r}]", v) for k, v in value.items()}
        if not any(changed for changed, _ in items.values()):
            return False, value
        new_dict = dict(value)
        new_dict.update({k: v for k, (_, v) in items.items()})
        return True, new_dict
    problem = _problem(value)
    if problem is None:
        return False, value
    _report(module, where, problem)
    if action == "zero":
        return True, _zeroed(value)
    return False, value


@hookimpl
def pyframe_module_forward(module: Any, args: tuple, kwargs: dict, output: Any) -> Any:
    if not check_forward:
        return None
    changed, new = _check(module, "output", output)
    return new if changed else None


@hookimpl
def pyframe_module_full_backward_pre(module: Any, grad_output: tuple) -> Any:
    changed = False
    new = []
    for i, g in enumerate(grad_output):
        c, v = _check(module, f"grad_output[{i}]", g) if g is not None else (False, None)
        changed = changed or c
        new.append(v)
    return tuple(new) if changed else None


@hookimpl
def pyframe_summary() -> dict:
    """Floating tensors checked (outputs and incoming gradients) and how many held NaN or Inf."""
    return dict(stats)
