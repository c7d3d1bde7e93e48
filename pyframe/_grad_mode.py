"""Grad mode: whether ops record the autograd graph. Same as torch.no_grad and friends.

The mode is per thread, as PyTorch's: a backward (which runs with grad mode off) or a ``no_grad`` block in one
thread must not stop another thread's recording. Read it as ``_grad_mode.enabled``; a new thread starts enabled."""

from __future__ import annotations

import sys
import threading
import types
from contextlib import ContextDecorator


class _State(threading.local):
    enabled = True  # the class attribute is every new thread's default (no failed lookup: fast)
    inference = False


_state = _State()


class _Module(types.ModuleType):
    """This module's type: ``_grad_mode.enabled`` reads the calling thread's mode (a property, as fast as a
    function call; a module ``__getattr__`` is several times slower)."""

    @property
    def enabled(self) -> bool:
        return _state.enabled

    @enabled.setter
    def enabled(self, mode: bool) -> None:  # assigning ``_grad_mode.enabled`` still works: this thread's mode
        _state.enabled = bool(mode)


sys.modules[__name__].__class__ = _Module


def _get() -> bool:
    return _state.enabled


def _set(mode: bool) -> None:
    _state.enabled = mode


def is_grad_enabled() -> bool:
    """Same as torch.is_grad_enabled: whether operations are recorded for autograd here (False inside ``no_grad``)."""
    return _state.enabled


class set_grad_enabled(ContextDecorator):  # noqa: N801 - PyTorch's name
    """Sets grad mode at once; as a context manager, restores the previous mode on exit."""

    def __init__(self, mode: bool):
        self.prev = _get()
        self.mode = bool(mode)
        _set(self.mode)

    def __call__(self, func):
        _set(self.prev)  # used as a decorator: undo the switch made above; each call switches instead
        return super().__call__(func)

    def _recreate_cm(self):
        return set_grad_enabled(self.mode)  # built at call time: switches now, restores on exit

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(self.prev)
        return False


class _Mode(ContextDecorator):
    """A decorator use gets a fresh context per call, so recursive calls restore the right mode; usable
    bare (``@no_grad``) as well as called (``@no_grad()``), as PyTorch."""

    def __new__(cls, func=None):
        if func is None:
            return super().__new__(cls)
        return cls()(func)

    def _recreate_cm(self):
        return type(self)()


class _Switch(_Mode):
    """Grad mode set to ``mode`` inside the block, and back to what it was after."""

    mode: bool

    def __enter__(self):
        self.prev = _get()
        _state.enabled = self.mode
        return self

    def __exit__(self, *exc):
        _state.enabled = self.prev
        return False


class no_grad(_Switch):  # noqa: N801
    """Same as torch.no_grad: a context manager (and decorator) inside which no autograd graph is recorded."""

    mode = False


class enable_grad(_Switch):  # noqa: N801
    """Same as torch.enable_grad: a context manager (and decorator) that turns recording back on inside ``no_grad``."""

    mode = True


class inference_mode(_Mode):  # noqa: N801
    """Same as torch.inference_mode: no graph is recorded (``no_grad``; pyframe has no separate
    inference tensors). ``inference_mode(False)`` leaves the mode as it is."""

    def __new__(cls, mode=True):
        if callable(mode):  # used bare as a decorator
            return cls()(mode)
        self = super().__new__(cls)
        self.mode = bool(mode)
        return self

    def __init__(self, mode=True) -> None:
        pass

    def _recreate_cm(self):
        return type(self)(self.mode)

    def __enter__(self):
        self.prev, self.prev_inference = _get(), _state.inference
        if self.mode:
            _state.enabled = False
            _state.inference = True
        return self

    def __exit__(self, *exc):
        _state.enabled, _state.inference = self.prev, self.prev_inference
        return False


def is_inference_mode_enabled() -> bool:
    """Same as torch.is_inference_mode_enabled."""
    return _state.inference
