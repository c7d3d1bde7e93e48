"""Forward-mode AD (pyframe.autograd.forward_ad): dual tensors carry tangents through ops, modules, functional_call
and custom Functions with ``jvp``; levels drop their tangents on exit; gradcheck's forward-mode check. Against
torch where torch is installed."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
import pyframe.autograd.forward_ad as fwAD
from pyframe import nn
from pyframe.func import functional_call

F64 = pyframe.float64


def arr(t) -> np.ndarray:
    return t.detach().numpy()


def test_tangent_of_a_composite_matches_the_analytic_jvp():
    x, v, y = (pyframe.randn(4, 3, dtype=F64) for _ in range(3))
    with fwAD.dual_level():
        d = fwAD.make_dual(x, v)
        assert fwAD.unpack_dual(d).tangent is v
        out = (d.sin() * y + d**2).sum(1)
        p, t = fwAD.unpack_dual(out)
    expect = ((np.cos(arr(x)) * arr(y) + 2 * arr(x)) * arr(v)).sum(1)
    np.testing.assert_allclose(arr(t), expect, rtol=1e-12)
    np.testing.assert_allclose(arr(p), (np.sin(arr(x)) * arr(y) + arr(x) ** 2).sum(1), rtol=1e-12)
    assert fwAD.unpack_dual(out).tangent is None  # the level is closed


def test_plain_tensor_has_no_tangent_and_a_tangent_of_other_strides_is_copied():
    x, v = pyframe.randn(3, 3), pyframe.randn(3, 3)
    with fwAD.dual_level():
        assert fwAD.unpack_dual(x).tangent is None
        d = fwAD.make_dual(x, v.T)
        t = fwAD.unpack_dual(d).tangent
        assert t is not v and np.array_equal(arr(t), arr(v.T))


def test_errors_say_what_is_wrong():
    x = pyframe.randn(3)
    with pytest.raises(RuntimeError, match="dual_level"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(ValueError, match="different size"):
            fwAD.make_dual(x, pyframe.randn(4))
        with pytest.raises(ValueError, match="floating point"):
            fwAD.make_dual(pyframe.arange(3), pyframe.randn(3))
        with pytest.raises(RuntimeError, match="Nested"), fwAD.dual_level():
            pass


def test_module_with_dual_parameters_and_functional_call_agree():
    torch = pytest.importorskip("torch")
    model = nn.Linear(5, 4)
    inp = pyframe.randn(6, 5)
    params = dict(model.named_parameters())
    tangents = {k: pyframe.rand(*p.shape) for k, p in params.items()}
    with fwAD.dual_level():
        dual = {k: fwAD.make_dual(p, tangents[k]) for k, p in params.items()}
        jvp = fwAD.unpack_dual(functional_call(model, dual, (inp,))).tangent
    tm = torch.nn.Linear(5, 4)
    tp = {k: torch.from_numpy(arr(p).copy()) for k, p in params.items()}
    tt = {k: torch.from_numpy(arr(v).copy()) for k, v in tangents.items()}
    import torch.autograd.forward_ad as tfw

    with tfw.dual_level():
        tdual = {k: tfw.make_dual(tp[k], tt[k]) for k in tp}
        expect = tfw.unpack_dual(torch.func.functional_call(tm, tdual, (torch.from_numpy(arr(inp).copy()),))).tangent
    np.testing.assert_allclose(arr(jvp), expect.numpy(), rtol=1e-5, atol=1e-6)


def test_network_tangent_matches_torch():
    torch = pytest.importorskip("torch")
    net = nn.Sequential(nn.Conv2d(2, 3, 3), nn.Tanh(), nn.Flatten(), nn.Linear(12, 2), nn.LogSoftmax(-1))
    tnet = torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.Tanh(), torch.nn.Flatten(), torch.nn.Linear(12, 2),
                               torch.nn.LogSoftmax(-1))  # fmt: skip
    tnet.load_state_dict({k: torch.from_numpy(arr(v).copy()) for k, v in net.state_dict().items()})
    x, v = pyframe.randn(2, 2, 4, 4), pyframe.randn(2, 2, 4, 4)
    with fwAD.dual_level():
        t = fwAD.unpack_dual(net(fwAD.make_dual(x, v))).tangent
    import torch.autograd.forward_ad as tfw

    with tfw.dual_level():
        expect = tfw.unpack_dual(tnet(tfw.make_dual(torch.from_numpy(arr(x).copy()),
                                                    torch.from_numpy(arr(v).copy())))).tangent  # fmt: skip
    np.testing.assert_allclose(arr(t), expect.detach().numpy(), rtol=1e-4, atol=1e-5)


class Exp(pyframe.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        result = x.exp()
        ctx.result = result
        return result

    @staticmethod
    def jvp(ctx, gx):
        return gx * ctx.result


def test_custom_function_jvp_is_used_and_checked_by_gradcheck():
    x = pyframe.randn(3, dtype=F64, requires_grad=True)
    v = pyframe.randn(3, dtype=F64)
    with fwAD.dual_level():
        t = fwAD.unpack_dual(Exp.apply(fwAD.make_dual(x, v))).tangent
    np.testing.assert_allclose(arr(t), np.exp(arr(x)) * arr(v), rtol=1e-12)
    assert pyframe.autograd.gradcheck(Exp.apply, (x,), check_forward_ad=True, check_backward_ad=False,
                                      check_undefined_grad=False, check_batched_grad=False)  # fmt: skip


def test_gradcheck_forward_mode_catches_a_wrong_jvp():
    class Wrong(Exp):
        @staticmethod
        def jvp(ctx, gx):
            return 2 * gx * ctx.result

    x = pyframe.randn(3, dtype=F64, requires_grad=True)
    with pytest.raises(pyframe.autograd.GradcheckError, match="forward mode"):
        pyframe.autograd.gradcheck(Wrong.apply, (x,), check_forward_ad=True, check_backward_ad=False)


def test_custom_function_without_jvp_raises_torchs_error():
    class NoJvp(pyframe.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with fwAD.dual_level(), pytest.raises(NotImplementedError, match="jvp"):
        NoJvp.apply(fwAD.make_dual(pyframe.randn(2), pyframe.randn(2)))
