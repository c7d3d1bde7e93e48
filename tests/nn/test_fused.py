"""The fused C kernels behind the GPT-style training step (layer_norm, gelu, causal SDPA,
cross_entropy, AdamW) against torch: float32 shapes large enough to run in parallel,
strided inputs, optional affine parts, and bad input reaching the C core's checks."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn.functional as F
from pyframe._backend import NULL, lib

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _run(pf_fn, torch_fn, arrays, rtol, atol, grad=True):
    """Forward and (with a random cotangent) every input's gradient, pyframe beside torch."""
    ps = [pf.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad and a.dtype.kind == "f") for a in arrays]
    po, to = pf_fn(*ps), torch_fn(*ts)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol, err_msg="forward")
    if grad:
        cot = np.random.default_rng(1).standard_normal(tuple(to.shape)).astype(arrays[0].dtype)
        po.backward(pf.tensor(cot))
        to.backward(torch.tensor(cot))
        for i, (p, t) in enumerate(zip(ps, ts, strict=True)):
            if t.requires_grad:
                np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"grad {i}")


@pytest.mark.parametrize("rows", [3, 1200])  # 1200 x 64 passes the parallel grain
@pytest.mark.parametrize("affine", ["wb", "w", "b", ""])
def test_layer_norm_float32(rows, affine):
    rng = np.random.default_rng(rows)
    x = (rng.standard_normal((rows, 64)) * 3 + 1).astype("float32")
    w, b = rng.standard_normal(64).astype("float32"), rng.standard_normal(64).astype("float32")
    arrays = [x] + ([w] if "w" in affine else []) + ([b] if "b" in affine else [])

    def call(F_, x, *rest):
        it = iter(rest)
        return F_.layer_norm(x, (64,), next(it) if "w" in affine else None, next(it) if "b" in affine else None)

    _run(lambda *a: call(F, *a), lambda *a: call(TF, *a), arrays, rtol=1e-4, atol=1e-4)


def test_layer_norm_strided_input_and_two_dims():
    x = np.random.default_rng(2).standard_normal((6, 5, 4)).astype("float64")
    _run(lambda x: F.layer_norm(x.transpose(0, 1), (6, 4)), lambda x: TF.layer_norm(x.transpose(0, 1), (6, 4)),
         [x], rtol=1e-10, atol=1e-12)  # fmt: skip


def test_layer_norm_core_checks():
    with pytest.raises(TypeError, match="float32 or float64"):
        pf._backend.check(lib.pf_layer_norm(3, NULL, NULL, NULL, NULL, NULL, NULL, 1, 4, 1e-5))
    with pytest.raises(ValueError, match="NULL"):
        pf._backend.check(lib.pf_layer_norm(0, NULL, NULL, NULL, NULL, NULL, NULL, 1, 4, 1e-5))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L, S", [(32, 32), (5, 7), (7, 3)])
def test_sdpa_fused_float32(causal, L, S):
    rng = np.random.default_rng(L * S)
    q = rng.standard_normal((2, 3, L, 8)).astype("float32")
    k = rng.standard_normal((2, 3, S, 8)).astype("float32")
    v = rng.standard_normal((2, 3, S, 6)).astype("float32")
    _run(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
         lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=causal), [q, k, v], 2e-5, 2e-5)  # fmt: skip


@pytest.mark.parametrize("causal, scale", [(True, None), (False, 0.3)])
def test_sdpa_fused_reads_strided_heads_and_scale(causal, scale):
    """nanoGPT's layout: q, k, v are head-transposed views of one projection, not copied."""
    x = np.random.default_rng(3).standard_normal((2, 16, 3 * 12))

    def attn(lib, x, causal, scale):
        q, k, v = (t.view(2, 16, 3, 4).transpose(1, 2) for t in x.split(12, dim=2))
        return lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)

    _run(lambda x: attn(pf, x, causal, scale), lambda x: attn(torch, x, causal, scale), [x], 1e-10, 1e-12)


def test_sdpa_fused_double_backward_and_core_checks():
    arrays = [np.random.default_rng(4).standard_normal(s) for s in ((1, 4, 3), (1, 5, 3), (1, 5, 2))]
    got = []
    for lib_ in (pf, torch):
        q, k, v = (lib_.tensor(a, requires_grad=True) for a in arrays)
        out = lib_.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        gq, gk = lib_.autograd.grad((out * out).sum(), (q, k), create_graph=True)
        ((gq * gq).sum() + (gk * gk).sum()).backward()
        got.append([t.detach().numpy() for t in (q.grad, k.grad, v.grad)])
    for a, b in zip(*got, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
    q, k, v = (pf.tensor(a) for a in arrays)
    out = pf.empty(1, 4, 2)
    with pytest.raises(TypeError, match="query has float64"):
        pf._backend.check(lib.pf_attention(q._d(), k._d(), v._d(), out._d(), pf.empty(1, 4, 5)._d(), 1.0, 1))
    with pytest.raises(ValueError, match=r"attention weights has shape \[1, 4, 4\]"):
        pf._backend.check(lib.pf_attention(q._d(), k._d(), v._d(), out.double()._d(),
                                           pf.empty(1, 4, 4, dtype=pf.float64)._d(), 1.0, 1))  # fmt: skip


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("n", [7, 70_000])  # 70,000 passes the parallel grain
def test_gelu_float32(approximate, n):
    # atol: in the tails (x < -5) 1 - tanh^2 is ~1e-7, which torch's float tanh rounds to 0
    x = (np.random.default_rng(n).standard_normal(n) * 3).astype("float32")
    _run(lambda x: F.gelu(x, approximate=approximate), lambda x: TF.gelu(x, approximate=approximate), [x],
         rtol=1e-5, atol=5e-6)  # fmt: skip


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_strided_double_backward_and_bad_input(approximate):
    x = np.random.default_rng(5).standard_normal((4, 6))
    _run(lambda x: F.gelu(x.T, approximate=approximate), lambda x: TF.gelu(x.T, approximate=approximate), [x],
         rtol=1e-12, atol=1e-14)  # fmt: skip
    got = []
    for lib_ in (pf, torch):
        t = lib_.tensor(x, requires_grad=True)
        (g,) = lib_.autograd.grad(lib_.nn.functional.gelu(t, approximate=approximate).sum(), t, create_graph=True)
        (g * g).sum().backward()
        got.append(t.grad.numpy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        F.gelu(pf.randn(3), approximate="fast")
    with pytest.raises(ValueError, match="approximate must be 0"):
        pf._backend.check(lib.pf_gelu(0, NULL, NULL, NULL, 3, 2))


def test_gelu_float32_erf_over_a_dense_range():
    """The vectorized float32 erf (about 1 ulp) against float64 torch, every 1e-4 on [-10, 10]."""
    x = np.linspace(-10, 10, 200_001, dtype=np.float32)
    got = F.gelu(pf.tensor(x)).numpy()
    want = TF.gelu(torch.tensor(x, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-7)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adamw_group_in_one_call_matches_torch(amsgrad):
    """Mixed float32/float64 parameters, one without a grad, a loaded number step: pf_adam_multi
    steps each like torch's AdamW, step counts included."""
    rng = np.random.default_rng(6)
    arrays = [
        rng.standard_normal(s).astype(dt) for s, dt in (((5, 3), "float32"), ((4,), "float64"), ((2,), "float32"))
    ]
    kw = dict(lr=0.01, betas=(0.9, 0.95), weight_decay=0.1, amsgrad=amsgrad)
    pp = [pf.nn.Parameter(pf.tensor(a)) for a in arrays]
    tp = [torch.nn.Parameter(torch.tensor(a)) for a in arrays]
    po, to = pf.optim.AdamW(pp, **kw), torch.optim.AdamW(tp, **kw)
    for i in range(4):
        for k, (p, t) in enumerate(zip(pp, tp, strict=True)):
            grad = None if k == 2 and i < 2 else rng.standard_normal(t.shape).astype(arrays[k].dtype)
            p.grad = None if grad is None else pf.tensor(grad)
            t.grad = None if grad is None else torch.tensor(grad)
        po.step()
        to.step()
        if i == 1:  # a state loaded with plain-number steps keeps counting
            po.state[pp[0]]["step"] = 2
    for p, t in zip(pp, tp, strict=True):
        np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=1e-6, atol=1e-7)
        assert float(po.state[p]["step"]) == float(to.state[t]["step"])
    assert po.state[pp[0]]["step"].dtype == pf.float32


def test_adam_multi_core_checks_change_nothing():
    p, g = pf.zeros(3), pf.ones(3)
    m, v, step = pf.zeros(3), pf.zeros(3), pf.zeros((), dtype=pf.float32)
    ffi = pf._backend.ffi
    ptrs = [ffi.new("void *[]", [p._ptr, p._ptr]), ffi.new("void *[]", [g._ptr, g._ptr]),
            ffi.new("void *[]", [m._ptr, m._ptr]), ffi.new("void *[]", [v._ptr, NULL])]  # fmt: skip
    steps = ffi.new("float *[]", [ffi.cast("float *", step._ptr)] * 2)
    with pytest.raises(ValueError, match="NULL buffer for parameter 1"):
        pf._backend.check(lib.pf_adam_multi(0, 2, *ptrs, NULL, ffi.new("int64_t[]", [3, 3]), steps, 0.1, 0.9, 0.99,
                                            1e-8, 0.0, 0, 1, 0))  # fmt: skip
    assert float(step) == 0.0 and float(p.sum()) == 0.0  # parameter 0 untouched too


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_fused_float32(reduction, weighted):
    """nanoGPT's loss, (B*T, V) logits: ignored rows, class weights, enough rows to go parallel."""
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((600, 65)) * 4).astype("float32")
    t = rng.integers(0, 65, 600)
    t[::7] = -100
    w = rng.uniform(0.5, 2, 65).astype("float32")

    def call(lib_, x, *rest):
        tt = lib_.tensor(t)
        ww = lib_.tensor(w) if weighted else None
        return lib_.nn.functional.cross_entropy(x, tt, ww, reduction=reduction)

    _run(lambda x: call(pf, x), lambda x: call(torch, x), [x], rtol=2e-5, atol=2e-6)


def test_cross_entropy_fused_edges_and_double_backward():
    x = np.random.default_rng(9).standard_normal((5, 4))
    t = np.array([1, -100, 3, 0, 2])
    for lib_ in (pf, torch):  # every row ignored: nan mean, zero gradient
        xx = lib_.tensor(x, requires_grad=True)
        loss = lib_.nn.functional.cross_entropy(xx, lib_.tensor([-100] * 5))
        loss.backward()
        assert np.isnan(float(loss.detach())) and not xx.grad.numpy().any()
    got = []
    for lib_ in (pf, torch):
        xx = lib_.tensor(x, requires_grad=True)
        (g,) = lib_.autograd.grad(lib_.nn.functional.cross_entropy(xx, lib_.tensor(t)), xx, create_graph=True)
        (g * g).sum().backward()
        got.append(xx.grad.numpy())
    np.testing.assert_allclose(got[0], got[1], rtol=1e-10, atol=1e-12)
    with pytest.raises(IndexError, match="target 4 is out of bounds for 4 classes"):
        F.cross_entropy(pf.tensor(x), pf.tensor([1, 4, 0, 0, 0]))
