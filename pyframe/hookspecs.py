"""The hook specifications pyframe plugins implement (a stable contract).

A plugin is any object (a module, a class instance) with functions named after these specs
and marked ``@pyframe.hookimpl``. An implementation may take any subset of a spec's
arguments, as pluggy allows. The module hooks are the same hooks the eight global
``pyframe.nn.register_module_*`` functions register into; their return rules are the
registries' (see ``docs/hooks/``).
"""

from __future__ import annotations

from typing import Any

import pluggy

PROJECT = "pyframe"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# ---- module registration: None keeps, a value replaces, pyframe.nn.BLOCK blocks ----------


@hookspec
def pyframe_module_parameter_registration(module: Any, name: str, param: Any) -> Any:
    """Inside ``register_parameter`` (and attribute assignment of a Parameter); ``param`` may be
    None. Return None to keep it, a tensor to register instead (a plain tensor is wrapped into
    a Parameter keeping its ``requires_grad``), or ``pyframe.nn.BLOCK`` to register None."""


@hookspec
def pyframe_module_buffer_registration(module: Any, name: str, buffer: Any) -> Any:
    """Inside ``register_buffer``; ``buffer`` may be None. None keeps, a tensor replaces,
    ``pyframe.nn.BLOCK`` registers None."""


@hookspec
def pyframe_module_module_registration(module: Any, name: str, submodule: Any) -> Any:
    """Inside ``add_module`` / ``register_module`` / attribute assignment of a Module.
    None keeps, a Module replaces, ``pyframe.nn.BLOCK`` registers None."""


# ---- forward and backward -----------------------------------------------------------------


@hookspec
def pyframe_module_forward_pre(module: Any, args: tuple, kwargs: dict) -> Any:
    """Before ``forward``. None keeps; new args (a tuple, or a single value wrapped into one)
    or ``(args, kwargs)`` replace them."""


@hookspec
def pyframe_module_forward(module: Any, args: tuple, kwargs: dict, output: Any) -> Any:
    """After ``forward``. None keeps; any other value replaces the output."""


@hookspec
def pyframe_module_full_backward_pre(module: Any, grad_output: tuple) -> Any:
    """Before the module's backward. None keeps; a tuple of the same length replaces grad_output."""


@hookspec
def pyframe_module_full_backward(module: Any, grad_input: tuple, grad_output: tuple) -> Any:
    """After the module's backward. None keeps; a tuple of the same length replaces grad_input.
    Entries are None for inputs that need no gradient."""


@hookspec
def pyframe_model_ready(model: Any) -> None:
    """Once per outermost module (one attached to no parent), at its first call, before any forward pre-hook:
    from here on every qualified name below ``model`` is final (``pyframe.plugins.qualified_name``,
    ``model.named_modules()``). The return value is ignored. While no plugin implements this hook nothing runs
    on forward for it."""


# ---- plugin lifecycle ------------------------------------------------------------------------


@hookspec
def pyframe_declare_settings() -> dict:
    """A plugin's settings: ``{"key": pyframe.plugins.Setting(type, default, ...)}``. Read once
    when the plugin is registered; values from config files, the environment and run-time calls
    are validated against it."""


@hookspec
def pyframe_configure(settings: Any) -> None:
    """Called with this plugin's validated settings (a read-only mapping) when it is enabled and
    after ``pyframe.plugins.reload_config()``."""


@hookspec
def pyframe_unconfigure() -> None:
    """Called when the plugin is disabled or unregistered: undo what ``pyframe_configure`` set up."""


# ---- distributed backends ------------------------------------------------------------------


@hookspec
def pyframe_distributed_backends() -> dict:
    """The process-group backends this plugin provides: ``{"name": factory}``, where
    ``factory(timeout: float)`` starts the backend (``timeout`` in seconds bounds every wait) and
    returns an object following ``pyframe.distributed.Backend``. Called by
    ``pyframe.distributed.init_process_group``; keep it cheap (import the transport inside the factory)."""


# ---- reporting ---------------------------------------------------------------------------------


@hookspec
def pyframe_summary() -> Any:
    """Optional. What this plugin has done since it was last configured, as ``{"what": number}`` in the order to
    show (e.g. ``{"gradients clipped": 120, "gradients seen": 3000}``), or None. Cheap to call: read at the end of
    a run by ``pyframe.plugins.summary()`` for reports. Counters restart at ``pyframe_configure``."""
