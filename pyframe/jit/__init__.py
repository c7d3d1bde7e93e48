"""torch.jit for code written for TorchScript: pyframe runs it eagerly.

pyframe has no TorchScript compiler. Each function here behaves as torch's does with the JIT disabled
(``PYTORCH_JIT=0``): ``script`` and ``trace`` return what they are given, so a scripted or traced model
is the Python model and gives the same results; the decorators (``ignore``, ``unused``, ``export``,
``script_method``) leave the function as it is; ``is_scripting()`` and ``is_tracing()`` are False, so
the eager branch of code that asks is the one taken. TorchScript archives cannot be written or read:
``save`` and ``load`` raise, naming ``pyframe.save`` of a ``state_dict`` as the way to keep a model.
"""

from __future__ import annotations

import typing as _typing
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from pyframe.nn.modules.module import Module

__all__ = [
    "Attribute", "Error", "Final", "Future", "ScriptFunction", "ScriptModule", "annotate", "export", "fork", "freeze",
    "ignore", "interface", "is_scripting", "is_tracing", "isinstance", "load", "optimize_for_inference", "save",
    "script", "script_if_tracing", "script_method", "trace", "trace_module", "unused", "wait",
]  # fmt: skip

_F = TypeVar("_F", bound=Callable)

Final: Any = _typing.Final
"""Same as torch.jit.Final: ``typing.Final``, for module attributes TorchScript treats as constants."""
_builtin_isinstance = isinstance


def _deprecated(name: str) -> None:
    warnings.warn(f"`torch.jit.{name}` is deprecated. Please switch to `torch.compile` or `torch.export`.",
                  DeprecationWarning, stacklevel=3)  # fmt: skip


class Error(RuntimeError):
    """Same as torch.jit.Error: the exception TorchScript code raises (never raised by pyframe itself)."""


class ScriptModule(Module):
    """Same as torch.jit.ScriptModule with the JIT disabled: an ordinary ``nn.Module`` base class, so a
    subclass with ``@script_method`` methods runs them as Python."""


class ScriptFunction:
    """Same as torch.jit.ScriptFunction: the type of a compiled function. ``script`` returns the Python function
    itself, so nothing in pyframe is an instance of it."""


def script(obj: Any, optimize: bool | None = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:  # fmt: skip
    """Same as torch.jit.script with the JIT disabled: returns ``obj`` (a module, function or class)
    unchanged, which then runs eagerly."""
    _deprecated("script")
    return obj


def script_method(fn: _F) -> _F:
    """Same as torch.jit.script_method with the JIT disabled: returns ``fn``."""
    _deprecated("script_method")
    return fn


def trace(func: Any, example_inputs: Any = None, optimize: bool | None = None, check_trace: bool = True,
          check_inputs: Any = None, check_tolerance: float = 1e-5, strict: bool = True, _force_outplace: bool = False,
          _module_class: Any = None, _compilation_unit: Any = None, example_kwarg_inputs: Any = None,
          _store_inputs: bool = True) -> Any:  # fmt: skip
    """Same as torch.jit.trace with the JIT disabled: returns ``func`` (a module or function) unchanged;
    ``example_inputs`` are not run."""
    _deprecated("trace")
    return func


def trace_module(mod: Module, inputs: Any, **kwargs: Any) -> Module:
    """Same as torch.jit.trace_module with the JIT disabled: returns ``mod``."""
    _deprecated("trace_module")
    return mod


def script_if_tracing(fn: _F) -> _F:
    """Same as torch.jit.script_if_tracing: ``fn`` itself (pyframe never traces)."""
    return fn


def _marked(fn: _F, modifier: str) -> _F:
    fn._torchscript_modifier = modifier
    return fn


def export(fn: _F) -> _F:
    """Same as torch.jit.export: marks a method as a TorchScript entry point; eagerly, ``fn`` itself."""
    return _marked(fn, "export")


def unused(fn: _F) -> _F:
    """Same as torch.jit.unused: marks a function the compiler would replace by a raise; eagerly, ``fn``
    itself, which runs as written."""
    if _builtin_isinstance(fn, property):
        return fn
    return _marked(fn, "unused")


def ignore(drop: bool | Callable = False, **kwargs: Any) -> Any:
    """Same as torch.jit.ignore: usable bare (``@ignore``) or called (``@ignore(drop=False)``); the
    function is left as Python, which is what pyframe runs anyway.

    Raises:
        RuntimeError: ``drop`` is neither a bool nor a function (torch's error).
    """
    if callable(drop):
        return _marked(drop, "ignore")
    if not _builtin_isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}")
    if kwargs.pop("drop_on_export", None):
        drop = True
    return lambda fn: _marked(fn, "unused" if drop else "ignore")


def interface(obj: Any) -> Any:
    """Same as torch.jit.interface: returns the class (an interface is only a type annotation eagerly)."""
    return obj


def is_scripting() -> bool:
    """Same as torch.jit.is_scripting: False, since pyframe runs everything eagerly."""
    return False


def is_tracing() -> bool:
    """Same as torch.jit.is_tracing: False, since pyframe never traces."""
    return False


def annotate(the_type: Any, the_value: Any) -> Any:
    """Same as torch.jit.annotate: returns ``the_value`` (the type is for the TorchScript compiler)."""
    return the_value


def Attribute(value: Any, type: Any) -> Any:  # noqa: N802, A002 - torch's names
    """Same as torch.jit.Attribute with the JIT disabled: returns ``value``."""
    return value


def isinstance(obj: Any, target_type: Any) -> bool:  # noqa: A001 - torch's name
    """Same as torch.jit.isinstance: ``obj`` against a type that may be a parameterised container
    (``List[int]``, ``Dict[str, Tensor]``, ``Optional[Tensor]``), checking the elements too."""
    import typing

    origin, args = typing.get_origin(target_type), typing.get_args(target_type)
    if origin is None:
        return target_type is Any or _builtin_isinstance(obj, target_type)
    if origin is typing.Union:
        return any(isinstance(obj, a) for a in args)
    if origin in (list, tuple, dict) and not _builtin_isinstance(obj, origin):
        return False
    if origin is list:
        return all(isinstance(x, args[0]) for x in obj) if args else True
    if origin is tuple:
        return len(obj) == len(args) and all(isinstance(x, a) for x, a in zip(obj, args, strict=True))
    if origin is dict:
        return all(isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items()) if args else True
    return _builtin_isinstance(obj, origin)


class Future:
    """Same as torch.jit.Future (torch.futures.Future) for ``fork``: the value is computed when forked."""

    def __init__(self, value: Any):
        self._value = value

    def wait(self) -> Any:
        """The forked call's result."""
        return self._value

    value = wait

    def done(self) -> bool:
        """Always True: ``fork`` runs the call at once."""
        return True


def fork(func: Callable, *args: Any, **kwargs: Any) -> Future:
    """Same as torch.jit.fork eagerly: runs ``func(*args, **kwargs)`` now and returns a ``Future`` of it."""
    return Future(func(*args, **kwargs))


def wait(future: Future) -> Any:
    """Same as torch.jit.wait: the result of a ``fork``."""
    return future.wait()


def _no_archive(what: str) -> RuntimeError:
    return RuntimeError(
        f"torch.jit.{what}: pyframe has no TorchScript, so it cannot {what} a TorchScript archive; models run "
        "eagerly. Keep a model with pyframe.save(model.state_dict(), path) and restore it with "
        "model.load_state_dict(pyframe.load(path)) (or pyframe.save / pyframe.load of the whole module)"
    )


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    """torch.jit.save: not available (pyframe writes no TorchScript archive).

    Raises:
        RuntimeError: always, naming ``pyframe.save`` of ``state_dict()`` as the way to keep a model.
    """
    raise _no_archive("save")


def load(f: Any, map_location: Any = None, _extra_files: Any = None, _restore_shapes: bool = False) -> Any:
    """torch.jit.load: not available (pyframe reads no TorchScript archive).

    Raises:
        RuntimeError: always, naming ``pyframe.load`` and ``load_state_dict`` as the way to restore a model.
    """
    raise _no_archive("load")


def freeze(mod: Module, preserved_attrs: Any = None, optimize_numerics: bool = True) -> Module:
    """torch.jit.freeze eagerly: the module in eval mode (freezing inlines a ScriptModule's parameters,
    which an eager module has no use for). Differs: torch with the JIT disabled raises here, as the module
    it is given is not a ScriptModule."""
    return mod.eval()


def optimize_for_inference(mod: Module, other_methods: Any = None) -> Module:
    """torch.jit.optimize_for_inference eagerly: the module in eval mode."""
    return mod.eval()
