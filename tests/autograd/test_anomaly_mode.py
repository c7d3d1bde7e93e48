"""Anomaly detection and the autograd module paths torch programs import (grad_mode, variable, function)."""

from __future__ import annotations

import warnings

import pytest

import pyframe as pf
from pyframe.autograd.function import Function, InplaceFunction, once_differentiable


def _nan_backward():
    x = pf.tensor([0.0, 1.0], requires_grad=True)
    y = x.sqrt() / x  # 0/0 in the forward; its backward divides by zero again
    y.sum().backward()


def test_nan_in_backward_names_the_node_and_the_forward_line():
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ctx = pf.autograd.detect_anomaly()
    with ctx, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        assert pf.is_anomaly_enabled()
        with pytest.raises(RuntimeError, match=r"Function 'DivBackward0' returned nan values in its 1th output."):
            _nan_backward()
    assert not pf.is_anomaly_enabled()
    texts = [str(w.message) for w in seen]
    assert any(t.startswith("Error detected in DivBackward0. Traceback of forward call that caused the error:")
               and "y = x.sqrt() / x" in t for t in texts), texts  # fmt: skip


def test_messages_match_torch():
    torch = pytest.importorskip("torch")
    msgs = []
    for lib in (pf, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                x = lib.tensor([0.0, 1.0], requires_grad=True)
                try:
                    (x.sqrt() / x).sum().backward()
                except RuntimeError as e:
                    msgs.append(str(e))
    assert msgs[0] == msgs[1]


def test_check_nan_off_and_set_detect_anomaly():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pf.autograd.detect_anomaly(check_nan=False):
            assert not pf.is_anomaly_check_nan_enabled()
            _nan_backward()  # no NaN check: backward completes
    assert pf.is_anomaly_check_nan_enabled()
    with pf.autograd.set_detect_anomaly(True):
        assert pf.is_anomaly_enabled()
    assert not pf.is_anomaly_enabled()
    pf.autograd.set_detect_anomaly(True)
    assert pf.is_anomaly_enabled()
    pf.autograd.set_detect_anomaly(False)
    assert not pf.is_anomaly_enabled()


def test_module_paths():
    from pyframe.autograd.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
    from pyframe.autograd.variable import Variable

    assert no_grad is pf.no_grad and enable_grad is pf.enable_grad and set_grad_enabled is pf.set_grad_enabled
    assert inference_mode is pf.inference_mode
    t = pf.ones(2)
    assert Variable(t) is t and isinstance(t, Variable) and Variable(t, requires_grad=True).requires_grad
    assert not isinstance(3, Variable)


class _Square(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        assert not pf.is_grad_enabled()
        return 2 * a * g


def test_once_differentiable():
    a = pf.tensor([1.0, 2.0], requires_grad=True)
    (g,) = pf.autograd.grad(_Square.apply(a).sum(), a, create_graph=True)
    assert g.tolist() == [2.0, 4.0] and not g.requires_grad  # the incoming gradient needed none
    out = _Square.apply(a)
    seed = pf.ones(2, requires_grad=True)
    (g,) = pf.autograd.grad(out, a, seed, create_graph=True)
    assert g.requires_grad
    with pytest.raises(RuntimeError, match="trying to differentiate twice a function that was marked with "
                                           "@once_differentiable"):  # fmt: skip
        g.sum().backward()
    assert InplaceFunction(inplace=True).inplace
