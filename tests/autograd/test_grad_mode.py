"""Grad mode: no_grad, enable_grad and set_grad_enabled as context managers, decorators and functions,
restored after exceptions and recursion, off during backward, per thread. Same behaviour as torch."""

from __future__ import annotations

import threading

import pytest

import pyframe

F64 = pyframe.float64


def leaf(values, dtype=F64):
    return pyframe.tensor(values, dtype=dtype, requires_grad=True)


def test_no_grad_context_manager_stops_recording_and_restores():
    x = leaf([1.0])
    with pyframe.no_grad():
        assert not pyframe.is_grad_enabled()
        y = x * 2
        with pyframe.enable_grad():
            assert pyframe.is_grad_enabled()
            z = x * 2
        assert not pyframe.is_grad_enabled()
    assert pyframe.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None


def test_grad_mode_restored_after_an_exception():
    with pytest.raises(ValueError), pyframe.no_grad():
        raise ValueError
    assert pyframe.is_grad_enabled()
    with pytest.raises(ValueError), pyframe.set_grad_enabled(False):
        raise ValueError
    assert pyframe.is_grad_enabled()


def test_no_grad_and_enable_grad_as_decorators():
    @pyframe.no_grad()
    def called(x):
        return x * 2, pyframe.is_grad_enabled()

    @pyframe.no_grad
    def bare(x):
        return x * 2

    @pyframe.enable_grad()
    def enabled(x):
        return x * 2

    x = leaf([1.0])
    y, mode = called(x)
    assert not mode and not y.requires_grad and pyframe.is_grad_enabled()
    assert not bare(x).requires_grad and pyframe.is_grad_enabled()
    assert bare.__name__ == "bare"
    with pyframe.no_grad():
        assert enabled(x).requires_grad
        assert not pyframe.is_grad_enabled()


def test_recursive_decorated_function_restores_grad_mode():
    @pyframe.no_grad()
    def down(n):
        if n:
            down(n - 1)
        return pyframe.is_grad_enabled()

    assert down(3) is False
    assert pyframe.is_grad_enabled()

    @pyframe.enable_grad()
    def up(n):
        if n:
            up(n - 1)
        return pyframe.is_grad_enabled()

    with pyframe.no_grad():
        assert up(3) is True
        assert not pyframe.is_grad_enabled()


def test_set_grad_enabled_as_function_context_manager_and_decorator():
    x = leaf([1.0])
    try:
        pyframe.set_grad_enabled(False)  # a plain call switches at once
        assert not pyframe.is_grad_enabled() and not (x * 2).requires_grad
    finally:
        pyframe.set_grad_enabled(True)
    assert pyframe.is_grad_enabled()

    with pyframe.set_grad_enabled(False):
        assert not (x * 2).requires_grad
        with pyframe.set_grad_enabled(True):
            assert (x * 2).requires_grad
        assert not pyframe.is_grad_enabled()
    assert pyframe.is_grad_enabled()

    @pyframe.set_grad_enabled(False)
    def f(x):
        return x * 2

    assert pyframe.is_grad_enabled()  # decorating does not switch the mode
    assert not f(x).requires_grad
    assert pyframe.is_grad_enabled()
    assert not f(x).requires_grad  # and the decorator works more than once


def test_autograd_namespace_exposes_grad_mode():
    from pyframe import autograd

    assert autograd.no_grad is pyframe.no_grad and autograd.enable_grad is pyframe.enable_grad
    assert autograd.set_grad_enabled is pyframe.set_grad_enabled and autograd.is_grad_enabled()


def test_backward_runs_with_grad_mode_off_and_restores_it():
    seen = []
    x = leaf([1.0, 2.0])
    y = x * 2
    y.register_hook(lambda g: seen.append(pyframe.is_grad_enabled()))
    y.sum().backward()
    assert seen == [False] and pyframe.is_grad_enabled() and not x.grad.requires_grad


def test_grad_mode_is_per_thread():
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def other():
        seen["start"] = pyframe.is_grad_enabled()  # a new thread starts enabled, whatever the main thread does
        with pyframe.no_grad():
            inside.set()
            release.wait(5)
            seen["inside"] = pyframe.is_grad_enabled()

    with pyframe.no_grad():
        t = threading.Thread(target=other)
        t.start()
        inside.wait(5)
    assert pyframe.is_grad_enabled()  # the other thread's no_grad does not reach this one
    assert (leaf([1.0]) * 2).requires_grad
    release.set()
    t.join()
    assert seen == {"start": True, "inside": False}
