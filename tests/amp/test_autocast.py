"""autocast: torch's CPU op lists run in bfloat16/float16 or float32, checked against torch on the same data."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn.functional as F
from pyframe import nn


def _data(*shape, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(np.float32)


def test_lower_precision_ops_run_in_bfloat16():
    x, w = pf.tensor(_data(4, 3)), pf.tensor(_data(5, 3), requires_grad=True)
    with pf.autocast("cpu", dtype=pf.bfloat16):
        assert pf.is_autocast_enabled("cpu") and pf.get_autocast_dtype("cpu") == pf.bfloat16
        assert F.linear(x, w).dtype == pf.bfloat16
        assert (x @ w.T).dtype == pf.bfloat16
        assert x.matmul(w.T).dtype == pf.bfloat16
        assert pf.mm(x, w.T).dtype == pf.bfloat16
        assert pf.bmm(x[None], w.T[None]).dtype == pf.bfloat16
        assert nn.Linear(3, 2)(x).dtype == pf.bfloat16
        assert nn.Conv2d(1, 2, 3)(pf.tensor(_data(1, 1, 5, 5))).dtype == pf.bfloat16
    assert not pf.is_autocast_enabled("cpu")
    assert F.linear(x, w).dtype == pf.float32  # outside: as before


def test_float32_list_unlisted_ops_and_ineligible_tensors():
    y = pf.tensor(_data(2, 3)).to(pf.bfloat16)
    with pf.autocast("cpu"):
        assert F.cross_entropy(y, pf.tensor([0, 2])).dtype == pf.float32
        assert F.mse_loss(y, y).dtype == pf.float32
        assert y.prod().dtype == pf.float32
        assert y.softmax(-1).dtype == pf.bfloat16  # not on torch's CPU lists: runs in its input's dtype
        assert y.relu().dtype == pf.bfloat16
        d = pf.tensor(_data(2, 3)).double()
        assert (d @ d.T).dtype == pf.float64  # float64 is never cast
        assert y.prod(dtype=pf.float64).dtype == pf.float64  # an explicit dtype= is not autocast
        with pf.autocast("cpu", enabled=False):
            assert (d.float() @ d.float().T).dtype == pf.float32


def test_float16_and_the_decorator_form():
    @pf.autocast("cpu", dtype=pf.float16)
    def f(a, b):
        return a @ b

    a = pf.tensor(_data(2, 3))
    assert f(a, a.T).dtype == pf.float16
    assert not pf.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="requires a callable"):
        pf.autocast("cpu")(3)


def test_autocast_is_per_thread():
    a = pf.tensor(_data(2, 3))
    seen = {}
    entered, done = threading.Event(), threading.Event()

    def other():
        with pf.autocast("cpu"):
            entered.set()
            done.wait(10)
            seen["other"] = (a @ a.T).dtype

    t = threading.Thread(target=other)
    t.start()
    entered.wait(10)
    seen["main"] = (a @ a.T).dtype
    done.set()
    t.join()
    assert seen == {"main": pf.float32, "other": pf.bfloat16}


def test_gradients_of_float32_parameters_stay_float32():
    lin = nn.Linear(3, 2)
    x = pf.tensor(_data(4, 3))
    with pf.autocast("cpu"):
        out = lin(x)
        loss = F.mse_loss(out, pf.zeros(4, 2))  # float32 list: the bfloat16 output is cast up
    assert out.dtype == pf.bfloat16 and loss.dtype == pf.float32
    loss.backward()
    assert lin.weight.grad.dtype == pf.float32 and lin.bias.grad.dtype == pf.float32


def test_bad_arguments_and_disabled_devices():
    with pytest.raises(ValueError, match="device_type"):
        pf.autocast(0)
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'tpu'"):
        pf.autocast("tpu")
    x = pf.tensor(_data(2, 2))
    with pytest.warns(UserWarning, match="target dtype is not supported"):
        ctx = pf.autocast("cpu", dtype=pf.float64)
    with ctx:
        assert (x @ x).dtype == pf.float32 and not pf.is_autocast_enabled("cpu")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        ctx = pf.amp.autocast("cuda")
    with ctx:
        assert (x @ x).dtype == pf.float32
    with pytest.warns(FutureWarning, match=r"torch.cuda.amp.autocast\(args...\)` is deprecated"):
        warnings.simplefilter("ignore", UserWarning)  # pytest.warns restores the filters on exit
        ctx = pf.cuda.amp.autocast()
    with ctx:
        assert (x @ x).dtype == pf.float32
    with pytest.warns(FutureWarning, match=r"torch.cpu.amp.autocast\(args...\)` is deprecated"):
        ctx = pf.cpu.amp.autocast()
    with ctx:
        assert (x @ x).dtype == pf.bfloat16
    from pyframe.cuda.amp import GradScaler  # torch's module path imports

    assert GradScaler is pf.cuda.amp.GradScaler


# the same calls in both libraries: lib is pyframe or torch, F its nn.functional
CASES = {
    "linear": lambda lib, F, a: F.linear(a(4, 3), a(5, 3), a(5)),
    "matmul": lambda lib, F, a: lib.matmul(a(2, 4, 3), a(3, 5)),
    "baddbmm": lambda lib, F, a: lib.baddbmm(a(2, 3, 3), a(2, 3, 4), a(2, 4, 3)),
    "addmm": lambda lib, F, a: lib.addmm(a(3, 3), a(3, 4), a(4, 3)),
    "addbmm": lambda lib, F, a: lib.addbmm(a(3, 3), a(2, 3, 4), a(2, 4, 3)),
    "conv1d": lambda lib, F, a: F.conv1d(a(1, 2, 6), a(3, 2, 3)),
    "conv2d": lambda lib, F, a: F.conv2d(a(1, 2, 5, 5), a(3, 2, 3, 3), a(3), padding=1),
    "conv_transpose2d": lambda lib, F, a: F.conv_transpose2d(a(1, 2, 3, 3), a(2, 3, 2, 2)),
    "prelu": lambda lib, F, a: F.prelu(a(2, 3), a(1)),
    "sdpa": lambda lib, F, a: F.scaled_dot_product_attention(a(1, 2, 4), a(1, 2, 4), a(1, 2, 4)),
    "einsum (through bmm)": lambda lib, F, a: lib.einsum("ij,jk->ik", a(2, 3), a(3, 4)),
    "cross_entropy": lambda lib, F, a: F.cross_entropy(a(3, 4).bfloat16(), lib.tensor([0, 3, 1])),
    "nll_loss": lambda lib, F, a: F.nll_loss(a(3, 4).bfloat16(), lib.tensor([0, 3, 1])),
    "binary_cross_entropy_with_logits": lambda lib, F, a: F.binary_cross_entropy_with_logits(
        a(4).bfloat16(), a(4).sigmoid().bfloat16()
    ),
    "l1_loss": lambda lib, F, a: F.l1_loss(a(4).bfloat16(), a(4)),
    "smooth_l1_loss": lambda lib, F, a: F.smooth_l1_loss(a(4).bfloat16(), a(4).bfloat16()),
    "kl_div": lambda lib, F, a: F.kl_div(a(4).bfloat16(), a(4).bfloat16(), reduction="batchmean"),
    "prod": lambda lib, F, a: a(4).bfloat16().prod(),
    "cdist": lambda lib, F, a: lib.cdist(a(2, 3).bfloat16(), a(3, 3).bfloat16()),
    "trace": lambda lib, F, a: a(3, 3).bfloat16().trace(),
    "avg_pool3d": lambda lib, F, a: F.avg_pool3d(a(1, 1, 2, 2, 2).bfloat16(), 2),
    "pad reflect 3-d": lambda lib, F, a: F.pad(a(1, 2, 4).bfloat16(), (1, 1), mode="reflect"),
    "pad reflect 5-d": lambda lib, F, a: F.pad(a(1, 1, 3, 3, 3).bfloat16(), (1, 1, 1, 1, 1, 1), mode="reflect"),
    "pad constant": lambda lib, F, a: F.pad(a(1, 2, 4).bfloat16(), (1, 1)),
    "softmax (unlisted)": lambda lib, F, a: a(2, 3).bfloat16().softmax(-1),
    "layer_norm (unlisted)": lambda lib, F, a: F.layer_norm(a(2, 3).bfloat16(), (3,)),
    "cat (widest)": lambda lib, F, a: lib.cat([a(2), a(2).bfloat16()]),
    "stack (all bfloat16)": lambda lib, F, a: lib.stack([a(2).bfloat16(), a(2).bfloat16()]),
    "matmul then add (promotes)": lambda lib, F, a: lib.matmul(a(2, 3), a(3, 2)) + a(2, 2),
}


@pytest.mark.parametrize("name", list(CASES))
def test_dtypes_and_values_match_torch(name):
    torch = pytest.importorskip("torch")

    def maker(lib):
        made = []

        def a(*shape):
            made.append(shape)
            return lib.tensor(_data(*shape, seed=len(made)))

        return a

    with pf.autocast("cpu", dtype=pf.bfloat16):
        ours = CASES[name](pf, F, maker(pf))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        theirs = CASES[name](torch, torch.nn.functional, maker(torch))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], name
    tol = 2e-2 if ours.dtype == pf.bfloat16 else 1e-5
    np.testing.assert_allclose(ours.float().detach().numpy(), theirs.float().detach().numpy(), rtol=tol, atol=tol)


def test_training_step_gradients_match_torch():
    torch = pytest.importorskip("torch")
    w1, b1, w2 = _data(8, 4), _data(8), _data(3, 8)
    x, y = _data(6, 4), np.array([0, 1, 2, 0, 1, 2])
    grads = []
    for lib, Fn in ((pf, F), (torch, torch.nn.functional)):
        p = [lib.tensor(v, requires_grad=True) for v in (w1, b1, w2)]
        with lib.autocast("cpu", dtype=lib.bfloat16):
            h = Fn.relu(Fn.linear(lib.tensor(x), p[0], p[1]))
            h = Fn.linear(h, p[2]) + Fn.linear(h, p[2])  # a parameter used twice: its cast is shared
            loss = Fn.cross_entropy(h, lib.tensor(y))
        loss.backward()
        grads.append([loss.item()] + [t.grad.float().numpy() for t in p])
    assert grads[0][0] == pytest.approx(grads[1][0], rel=2e-2)
    for ours, theirs in zip(grads[0][1:], grads[1][1:], strict=True):
        assert ours.dtype == np.float32
        np.testing.assert_allclose(ours, theirs, rtol=3e-2, atol=3e-2)


def test_deprecated_cpu_spellings():
    with pytest.warns(DeprecationWarning, match=r"torch.is_autocast_cpu_enabled\(\) is deprecated"):
        assert not pf.is_autocast_cpu_enabled()
    with pf.autocast("cpu", dtype=pf.float16), pytest.warns(DeprecationWarning):
        assert pf.is_autocast_cpu_enabled() and pf.get_autocast_cpu_dtype() == pf.float16
    with pytest.warns(DeprecationWarning):
        assert pf.get_autocast_gpu_dtype() == pf.float16


def test_normalization_of_autocast_outputs_matches_torch():
    """A bfloat16 activation meets float32 norm parameters (torch's mixed-type batch_norm and layer_norm): the
    result is in the input's dtype, the running statistics and gradients stay float32."""
    torch = pytest.importorskip("torch")
    x, w = _data(8, 4), _data(6, 4)
    out = []
    for lib in (pf, torch):
        lin, bn, ln = lib.nn.Linear(4, 6), lib.nn.BatchNorm1d(6), lib.nn.LayerNorm(6)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(w))
            lin.bias.zero_()
        with lib.autocast("cpu", dtype=lib.bfloat16):
            h = ln(bn(lin(lib.tensor(x))))
        h.float().square().sum().backward()
        out.append((str(h.dtype).split(".")[-1], h.float().detach().numpy(), bn.running_mean.numpy().copy(),
                    str(bn.running_mean.dtype).split(".")[-1], lin.weight.grad.numpy()))  # fmt: skip
    assert out[0][0] == out[1][0] == "bfloat16" and out[0][3] == out[1][3] == "float32"
    for a, b in zip(out[0][1:], out[1][1:], strict=True):
        if isinstance(a, np.ndarray):
            np.testing.assert_allclose(a, b, rtol=3e-2, atol=3e-2)


def test_functions_are_themselves_again_after_the_region():
    """The wrappers exist only while a region is open: graph capture (fx, ONNX) knows ops by identity."""
    from pyframe.ops import products

    original = products.matmul
    with pf.autocast("cpu"):
        assert pf.matmul is not original and hasattr(pf.matmul, "_autocast_original")
        with pf.autocast("cpu", enabled=False):
            assert pf.matmul is not original  # still inside the outer region
    assert pf.matmul is original and pf.Tensor.matmul is original and F.linear.__name__ == "linear"
    assert not hasattr(F.linear, "_autocast_original") and not hasattr(nn.Conv2d._fn, "_autocast_original")
    import pyframe.fx

    gm = pyframe.fx.symbolic_trace(nn.Linear(3, 2))
    assert any(n.op == "call_function" and n.target is F.linear for n in gm.graph.nodes)
