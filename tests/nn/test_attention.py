"""Attention against torch from identical weights: F.scaled_dot_product_attention (masks, causal, scale, GQA;
the fused C kernel in float32, on strided heads, its double backward and checks), nn.MultiheadAttention;
float64 gradchecks and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from pyframe._backend import lib
from pyframe.autograd import gradcheck
from tests._oracle import both, close, compare, rand, twin

torch = pytest.importorskip("torch")
TF = torch.nn.functional


BOOL_MASK = np.random.default_rng(5).random((4, 6)) < 0.7


BOOL_MASK[2] = False  # a query row with no allowed key: zeros, as torch


FLOAT_MASK = np.where(BOOL_MASK, 0.0, -np.inf) + rand(4, 6, seed=9) * 0.1


SDPA_CASES = {
    "plain": {},
    "bool_mask": {"attn_mask": BOOL_MASK},
    "float_mask": {"attn_mask": FLOAT_MASK},
    "causal": {"is_causal": True},
    "scale": {"scale": 0.3},
}


@pytest.mark.parametrize("name", list(SDPA_CASES))
def test_sdpa_matches_torch(name):
    kw = dict(SDPA_CASES[name])
    (pq, tq), (pk, tk), (pv, tv) = (
        both(
            rand(2, 3, n, 5, seed=i),
        )
        for i, n in enumerate((4, 6, 6))
    )
    if "attn_mask" in kw:
        kw_p = {**kw, "attn_mask": pf.tensor(kw["attn_mask"])}
        kw_t = {**kw, "attn_mask": torch.tensor(kw["attn_mask"])}
    else:
        kw_p = kw_t = kw
    po = F.scaled_dot_product_attention(pq, pk, pv, **kw_p)
    to = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **kw_t)
    close(po, to)
    assert np.isfinite(po.detach().numpy()).all()
    cot = rand(*to.shape, seed=11)
    po.backward(pf.tensor(cot))
    to.backward(torch.tensor(cot))
    for p, t in ((pq, tq), (pk, tk), (pv, tv)):
        close(p.grad, t.grad)


def test_sdpa_gqa_and_broadcast_batch():
    q, k, v = rand(2, 4, 3, 5), rand(2, 2, 7, 5, seed=1), rand(2, 2, 7, 5, seed=2)
    po = F.scaled_dot_product_attention(pf.tensor(q), pf.tensor(k), pf.tensor(v), enable_gqa=True)
    to = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k), torch.tensor(v), enable_gqa=True
    )
    close(po, to)
    # 3-d inputs, key batch broadcast
    po = F.scaled_dot_product_attention(pf.tensor(q[0]), pf.tensor(k[0, :1]), pf.tensor(v[0, :1]))
    to = torch.nn.functional.scaled_dot_product_attention(torch.tensor(q[0]), torch.tensor(k[0, :1]),
                                                          torch.tensor(v[0, :1]))  # fmt: skip
    close(po, to)


def test_sdpa_gradcheck_float64():
    q, k, v = (pf.tensor(rand(1, 2, 3, 4, seed=i), requires_grad=True) for i in range(3))
    mask = pf.tensor(BOOL_MASK[:3, :3])
    w = pf.tensor(rand(1, 2, 3, 4, seed=8))
    fn = lambda q, k, v: (F.scaled_dot_product_attention(q, k, v, attn_mask=mask) * w).sum()  # noqa: E731
    assert gradcheck(fn, (q, k, v), eps=1e-6, atol=1e-6, rtol=1e-4)


def test_sdpa_dropout_is_seeded_and_scaled():
    q, k, v = (pf.tensor(rand(2, 8, 4, seed=i)) for i in range(3))
    pf.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    pf.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    full = F.scaled_dot_product_attention(q, k, v)
    assert not np.allclose(a.numpy(), full.numpy())
    # dropout_p=1: every weight dropped
    assert np.all(F.scaled_dot_product_attention(q, k, v, dropout_p=1.0).numpy() == 0)


def _composed_with_mask(q, k, v, keep, p, causal):
    """softmax(q k^T / sqrt(E), causal) with dropout mask ``keep`` (kept weights scaled by 1 / (1 - p)), times v."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        allowed = pf.ones(q.shape[-2], k.shape[-2], dtype=pf.bool).tril()
        scores = pf.where(allowed, scores, -math.inf)
    w = pf.where(keep, F.softmax(scores, -1) / (1 - p), 0.0)
    return w @ v


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L, S", [(70, 70), (150, 90), (5, 130)])
def test_sdpa_fused_dropout_drops_what_dropout_draws(causal, L, S):
    # the fused kernel draws its mask from the counters a bool tensor of the weights' shape would take, so the
    # composition with that mask (drawn by bernoulli_ from the same generator state) gives the same values and
    # gradients; rows in blocks of 64, fewer and more keys than queries
    q = pf.tensor(rand(2, 3, L, 16, seed=1), requires_grad=True)
    k = pf.tensor(rand(2, 3, S, 16, seed=2), requires_grad=True)
    v = pf.tensor(rand(2, 3, S, 8, seed=3), requires_grad=True)
    g = pf.tensor(rand(2, 3, L, 8, seed=4))
    pf.manual_seed(11)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=causal)
    grads = pf.autograd.grad(out, (q, k, v), g)
    pf.manual_seed(11)
    keep = pf.empty(2, 3, L, S, dtype=pf.bool).bernoulli_(0.7)
    assert 0.6 < keep.double().mean().item() < 0.8
    want = _composed_with_mask(q, k, v, keep, 0.3, causal)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-11, atol=1e-13)
    for got, exp in zip(grads, pf.autograd.grad(want, (q, k, v), g), strict=True):
        np.testing.assert_allclose(got.numpy(), exp.numpy(), rtol=1e-10, atol=1e-12)
    # the generator moved on by the weights' count, as dropout's draw moves it
    after = pf.rand(3)
    pf.manual_seed(11)
    pf.empty(2, 3, L, S, dtype=pf.bool).bernoulli_(0.7)
    np.testing.assert_array_equal(after.numpy(), pf.rand(3).numpy())


def test_sdpa_fused_dropout_gradcheck_and_double_backward():
    q, k, v = (pf.tensor(rand(1, 2, 6, 4, seed=i), requires_grad=True) for i in range(3))
    w = pf.tensor(rand(1, 2, 6, 4, seed=8))

    def fn(q, k, v):  # the same mask every call
        pf.manual_seed(5)
        return (F.scaled_dot_product_attention(q, k, v, dropout_p=0.4, is_causal=True) * w).sum()

    assert gradcheck(fn, (q, k, v), eps=1e-6, atol=1e-6, rtol=1e-4)
    # create_graph differentiates the composition with the fused call's mask: first-order values agree
    first = pf.autograd.grad(fn(q, k, v), (q, k, v))
    second = pf.autograd.grad(fn(q, k, v), (q, k, v), create_graph=True)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
    # and its second order is the composition's with that mask
    sum((t * t).sum() for t in second).backward()
    got = [t.grad.numpy().copy() for t in (q, k, v)]
    pf.manual_seed(5)
    keep = pf.empty(1, 2, 6, 6, dtype=pf.bool).bernoulli_(0.6)
    qc, kc, vc = (t.detach().requires_grad_() for t in (q, k, v))
    grads = pf.autograd.grad((_composed_with_mask(qc, kc, vc, keep, 0.4, True) * w).sum(), (qc, kc, vc),
                             create_graph=True)  # fmt: skip
    sum((t * t).sum() for t in grads).backward()
    for a, b in zip(got, (qc.grad, kc.grad, vc.grad), strict=True):
        np.testing.assert_allclose(a, b.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "args, kw, exc, match",
    [
        (((2, 4, 5), (2, 6, 3), (2, 6, 5)), {}, ValueError, "last dim"),
        (((2, 4, 5), (2, 6, 5), (2, 7, 5)), {}, ValueError, "sequence length"),
        (((5,), (6, 5), (6, 5)), {}, ValueError, "at least 2 dims"),
        (((4, 5), (6, 5), (6, 5)), {"dropout_p": 1.5}, ValueError, "dropout_p"),
        (((4, 5), (6, 5), (6, 5)), {"is_causal": True, "attn_mask": "bool"}, ValueError, "not both"),
        (((4, 5), (6, 5), (6, 5)), {"attn_mask": "int"}, TypeError, "attn_mask must be"),
        (((4, 5), (6, 5), (6, 5)), {"attn_mask": "wrong"}, ValueError, "does not broadcast"),
        (((3, 4, 5), (2, 6, 5), (2, 6, 5)), {}, ValueError, "do not broadcast"),
    ],
)
def test_sdpa_bad_input(args, kw, exc, match):
    q, k, v = (pf.tensor(rand(*s)) for s in args)
    masks = {
        "bool": pf.ones(4, 6, dtype=pf.bool),
        "int": pf.ones(4, 6, dtype=pf.int64),
        "wrong": pf.zeros(5, 6, dtype=pf.float64),
    }
    kw = {n: (masks[a] if n == "attn_mask" else a) for n, a in kw.items()}
    with pytest.raises(exc, match=match):
        F.scaled_dot_product_attention(q, k, v, **kw)
    with pytest.raises(TypeError, match="floating point"):
        F.scaled_dot_product_attention(pf.ones(2, 2, dtype=pf.int64), pf.ones(2, 2), pf.ones(2, 2))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("L, S", [(32, 32), (5, 7), (7, 3)])
def test_sdpa_fused_float32(causal, L, S):
    rng = np.random.default_rng(L * S)
    q = rng.standard_normal((2, 3, L, 8)).astype("float32")
    k = rng.standard_normal((2, 3, S, 8)).astype("float32")
    v = rng.standard_normal((2, 3, S, 6)).astype("float32")
    compare(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=causal),
            lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=causal), q, k, v,
            rtol=2e-5, atol=2e-5, seed=1)  # fmt: skip


@pytest.mark.parametrize("causal, scale", [(True, None), (False, 0.3)])
def test_sdpa_fused_reads_strided_heads_and_scale(causal, scale):
    """nanoGPT's layout: q, k, v are head-transposed views of one projection, not copied."""
    x = np.random.default_rng(3).standard_normal((2, 16, 3 * 12))

    def attn(lib, x, causal, scale):
        q, k, v = (t.view(2, 16, 3, 4).transpose(1, 2) for t in x.split(12, dim=2))
        return lib.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale)

    compare(
        lambda x: attn(pf, x, causal, scale), lambda x: attn(torch, x, causal, scale), x, rtol=1e-10, atol=1e-12, seed=1
    )


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
        pf._backend.check(lib.pf_attention(q._d(), k._d(), v._d(), out._d(), pf.empty(1, 4, 5)._d(), 1.0, 1, 0.0, 0, 0,
                                           pf._backend.NULL))  # fmt: skip
    with pytest.raises(ValueError, match=r"attention weights has shape \[1, 4, 4\]"):
        pf._backend.check(lib.pf_attention(q._d(), k._d(), v._d(), out.double()._d(),
                                           pf.empty(1, 4, 4, dtype=pf.float64)._d(), 1.0, 1, 0.0, 0, 0,
                                           pf._backend.NULL))  # fmt: skip
    # with dropout the kernel keeps its mask: a contiguous bool tensor of the weights' shape, checked
    out, w = out.double(), pf.empty(1, 4, 5, dtype=pf.float64)
    with pytest.raises(ValueError, match="needs a mask tensor"):
        pf._backend.check(lib.pf_attention(q._d(), k._d(), v._d(), out._d(), w._d(), 1.0, 1, 0.5, 0, 0,
                                           pf._backend.NULL))  # fmt: skip
    for bad in (pf.empty(1, 4, 4, dtype=pf.bool), pf.empty(1, 4, 5), pf.empty(1, 5, 4, dtype=pf.bool).mT):
        with pytest.raises(ValueError, match="contiguous bool tensor of the weights' shape"):
            pf._backend.check(lib.pf_attention(q._d(), k._d(), v._d(), out._d(), w._d(), 1.0, 1, 0.5, 0, 0, bad._d()))


MHA_CASES = {
    "self": (lambda n: n.MultiheadAttention(8, 2), {}),
    "batch_first_masks": (lambda n: n.MultiheadAttention(8, 4, batch_first=True), {"masks": True}),
    "no_weights_avg": (lambda n: n.MultiheadAttention(8, 2), {"need_weights": False}),
    "per_head_weights": (lambda n: n.MultiheadAttention(8, 2), {"average_attn_weights": False}),
    "kdim_vdim": (lambda n: n.MultiheadAttention(8, 2, kdim=6, vdim=3), {"cross": True}),
    "bias_kv_zero_attn": (lambda n: n.MultiheadAttention(8, 2, add_bias_kv=True, add_zero_attn=True), {"masks": True}),
    "no_bias": (lambda n: n.MultiheadAttention(8, 2, bias=False), {}),
}  # fmt: skip


@pytest.mark.parametrize("name", list(MHA_CASES))
def test_multihead_attention_matches_torch(name):
    build, opts = MHA_CASES[name]
    t, p = twin(build)
    bf = t.batch_first
    n, length, s = 3, 4, 5
    x = rand(*((n, length, 8) if bf else (length, n, 8)))
    px, tx = both(x)
    kw_p, kw_t = {}, {}
    for key in ("need_weights", "average_attn_weights"):
        if key in opts:
            kw_p[key] = kw_t[key] = opts[key]
    if opts.get("cross"):
        (pk, tk), (pv, tv) = both(rand(s, n, 6, seed=1), False), both(rand(s, n, 3, seed=2), False)
    else:
        pk, tk, pv, tv, s = px, tx, px, tx, length
    if opts.get("masks"):
        am = np.random.default_rng(1).random((length, s)) < 0.3
        am[:, 0] = False  # every query keeps one key
        kpm = np.zeros((n, s), dtype=bool)
        kpm[1, -2:] = True
        kw_p.update(attn_mask=pf.tensor(am), key_padding_mask=pf.tensor(kpm))
        kw_t.update(attn_mask=torch.tensor(am), key_padding_mask=torch.tensor(kpm))
    po, pw = p(px, pk, pv, **kw_p)
    to, tw = t(tx, tk, tv, **kw_t)
    close(po, to)
    if tw is None:
        assert pw is None
    else:
        close(pw, tw)
    cot = rand(*to.shape, seed=4)
    po.backward(pf.tensor(cot))
    to.backward(torch.tensor(cot))
    close(px.grad, tx.grad)
    for tp, pp in zip(t.parameters(), p.parameters(), strict=True):
        close(pp.grad, tp.grad)


def test_multihead_attention_unbatched_and_float_mask():
    t, p = twin(lambda n: n.MultiheadAttention(6, 3))
    x = rand(4, 6)
    mask = np.triu(np.full((4, 4), -np.inf), 1)
    po, pw = p(pf.tensor(x), pf.tensor(x), pf.tensor(x), attn_mask=pf.tensor(mask))
    to, tw = t(torch.tensor(x), torch.tensor(x), torch.tensor(x), attn_mask=torch.tensor(mask))
    close(po, to)
    close(pw, tw)
    gen = nn.Transformer.generate_square_subsequent_mask(4)
    np.testing.assert_array_equal(gen.numpy(), torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())


def test_multihead_attention_init_and_bad_input():
    pf.manual_seed(0)
    m = nn.MultiheadAttention(16, 4)
    assert [k for k, _ in m.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                   "out_proj.bias"]  # fmt: skip
    bound = math.sqrt(6 / (16 + 48))
    w = m.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert np.all(m.in_proj_bias.detach().numpy() == 0) and np.all(m.out_proj.bias.detach().numpy() == 0)
    with pytest.raises(ValueError, match="divisible"):
        nn.MultiheadAttention(10, 3)
    x = pf.randn(4, 2, 16)
    with pytest.raises(ValueError, match="embedding dimension"):
        m(pf.randn(4, 2, 8), pf.randn(4, 2, 8), pf.randn(4, 2, 8))
    with pytest.raises(ValueError, match="2D attn_mask"):
        m(x, x, x, attn_mask=pf.zeros(3, 3))
    with pytest.raises(ValueError, match="key_padding_mask"):
        m(x, x, x, key_padding_mask=pf.zeros(4, 2, dtype=pf.bool))
    with pytest.raises(RuntimeError, match="is_causal"):
        m(x, x, x, is_causal=True)


def test_multihead_attention_reset_parameters_is_the_init():
    """``_reset_parameters`` (torch's name) applies the same initialisation ``__init__`` gives the
    parameters before registering them: xavier-uniform projections, zero biases, xavier-normal
    ``bias_k``/``bias_v``."""
    pf.manual_seed(0)
    e = 64
    m = nn.MultiheadAttention(e, 4, add_bias_kv=True)
    with pf.no_grad():
        for p in m.parameters():
            p.fill_(3.0)
    m._reset_parameters()
    bound = math.sqrt(6.0 / (e + 3 * e))
    w = m.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    for b in (m.bias_k, m.bias_v):
        assert abs(b.detach().numpy().std() - math.sqrt(2.0 / (2 * e))) < 0.05
    assert (m.out_proj.weight.detach().numpy() == 3.0).all()  # out_proj keeps Linear's own init, as torch's


def test_sdpa_refuses_a_mask_with_more_batch_dims_than_the_scores():
    q = pf.ones(2, 3, 4)
    with pytest.raises(pf.ShapeError, match="attn_mask"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=pf.zeros(5, 2, 3, 3))  # would give a (5, 2, 3, 4) output
    with pytest.raises(pf.ShapeError, match="attn_mask"):
        F.scaled_dot_product_attention(q[0], q[0], q[0], attn_mask=pf.ones(2, 3, 3, dtype=pf.bool))
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=pf.zeros(1, 3, 3))  # broadcasting down is fine
    assert out.shape == (2, 3, 4)


def test_out_proj_is_torchs_nondynamically_quantizable_linear_class():
    # one class under torch's path: a model saved whole names it, and safe_globals([that path's class]) must match
    mha = nn.MultiheadAttention(4, 2)
    assert type(mha.out_proj) is nn.modules.linear.NonDynamicallyQuantizableLinear


def test_sdpa_output_is_laid_out_like_the_query_as_torchs():
    # torch's CPU kernels give a dense result whose dims keep the query's memory order: the nanoGPT form (q, k, v
    # chunks of one projection, heads split by view + transpose) then allows out.transpose(1, 2).view(...)
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    y = pf.randn(2, 5, 36)
    ty = torch.from_numpy(y.numpy().copy())
    q, k, v = (c.view(2, 5, 3, 4).transpose(1, 2) for c in y.chunk(3, -1))
    tq, tk, tv = (c.view(2, 5, 3, 4).transpose(1, 2) for c in ty.chunk(3, -1))
    for kwargs in ({}, {"is_causal": True}, {"attn_mask": pf.ones(5, 5).bool()}):
        tkw = {n: torch.from_numpy(m.numpy().copy()) if n == "attn_mask" else m for n, m in kwargs.items()}
        out, ref = F.scaled_dot_product_attention(q, k, v, **kwargs), tf.scaled_dot_product_attention(tq, tk, tv, **tkw)
        assert out.stride() == ref.stride()
        np.testing.assert_allclose(out.transpose(1, 2).view(2, 5, 12).numpy(), ref.transpose(1, 2).reshape(2, 5, 12),
                                   rtol=1e-5, atol=1e-6)  # fmt: skip
        contiguous = F.scaled_dot_product_attention(q.contiguous(), k, v, **kwargs)
        assert contiguous.stride() == tf.scaled_dot_product_attention(tq.contiguous(), tk, tv, **tkw).stride()
    q3 = pf.randn(3, 2, 5, 4)
    tq3 = torch.from_numpy(q3.numpy().copy()).transpose(0, 1)
    q3 = q3.transpose(0, 1)
    assert (
        F.scaled_dot_product_attention(q3, q3, q3).stride() == tf.scaled_dot_product_attention(tq3, tq3, tq3).stride()
    )


def test_sdpa_kernel_and_causal_biases_match_torch():
    torch = pytest.importorskip("torch")
    from pyframe.nn.attention import SDPBackend, _allowed, sdpa_kernel
    from pyframe.nn.attention.bias import CausalBias, causal_lower_right, causal_upper_left

    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
        assert _allowed() == (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION)
    assert SDPBackend.MATH in _allowed() and len(_allowed()) == 5
    with pytest.raises(TypeError, match="SDPBackend"), sdpa_kernel("math"):
        pass
    from torch.nn.attention import bias as tbias

    q, k, v = pf.randn(2, 2, 3, 4), pf.randn(2, 2, 7, 4), pf.randn(2, 2, 7, 4)
    tq, tk, tv = (torch.from_numpy(x.numpy().copy()) for x in (q, k, v))
    for ours, theirs in ((causal_upper_left, tbias.causal_upper_left), (causal_lower_right, tbias.causal_lower_right)):
        b, tb = ours(3, 7), theirs(3, 7)
        assert isinstance(b, CausalBias) and isinstance(b, pf.Tensor)
        assert np.array_equal(b.numpy(), tb._materialize().numpy())
        out = F.scaled_dot_product_attention(q, k, v, b)
        ref = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, tb)
        np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dropout_p", [0.0, 0.3])
def test_sdpa_fused_gradients_are_laid_out_like_their_inputs(dropout_p):
    # nanoGPT's heads are x.view(b, L, h, e).transpose(1, 2): each gradient comes back (b, L, h, e)-major, so the
    # views' backward to x reshapes it without a copy; values equal those of contiguous inputs (same mask)
    x = pf.randn(2, 6, 3 * 8, dtype=pf.float64)
    grads = []

    def run(contiguous):
        xx = x.detach().requires_grad_()
        heads = [c.view(2, 6, 2, 4).transpose(1, 2) for c in xx.split(8, dim=2)]
        if contiguous:
            heads = [h.contiguous() for h in heads]
        got = []
        for h in heads:
            h.register_hook(lambda g: got.append(g))
        pf.manual_seed(5)
        out = F.scaled_dot_product_attention(*heads, dropout_p=dropout_p, is_causal=True)
        (out * pf.arange(out.numel(), dtype=pf.float64).view(out.shape)).sum().backward()
        grads.append(got)
        return heads, xx.grad

    gx, gx_ref = run(False)[1], run(True)[1]
    for g in grads[0]:
        assert g.transpose(1, 2).is_contiguous()
    for g in grads[1]:
        assert g.is_contiguous()
    for g, ref in zip(grads[0], grads[1], strict=True):
        np.testing.assert_allclose(g.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(gx.numpy(), gx_ref.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype, tol", [("float32", 2e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("T", [1, 5, 33])
def test_sdpa_inference_layout_and_values(dtype, tol, T):
    # nanoGPT generating under no_grad: head-transposed views of one projection; torch's values and torch's
    # result layout (so ``y.transpose(1, 2).view(B, T, C)`` needs no copy), with and without an explicit scale
    x = np.random.default_rng(T).standard_normal((1, T, 3 * 12)).astype(dtype)
    outs = []
    for lib_ in (pf, torch):
        with lib_.no_grad():
            q, k, v = (t.view(1, T, 3, 4).transpose(1, 2) for t in lib_.from_numpy(x).split(12, dim=2))
            y = lib_.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            y2 = lib_.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.25)
            outs.append((y, y2, y.transpose(1, 2).view(1, T, 12)))
    for a, b in zip(*outs, strict=True):
        assert tuple(a.shape) == tuple(b.shape) and tuple(a.stride()) == tuple(b.stride())
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)


def test_sdpa_argument_checks_still_apply_to_the_common_call():
    q = pf.zeros(1, 2, 3, 4)
    with pytest.raises(ValueError, match="dropout_p"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=True)
    with pytest.raises(TypeError, match="scale"):
        F.scaled_dot_product_attention(q, q, q, scale=True)
    with pytest.raises(Exception, match="must equal"):
        F.scaled_dot_product_attention(q, pf.zeros(1, 2, 3, 5), q)
    with pytest.raises(TypeError, match="one dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)
    with pytest.raises(TypeError, match="floating point"):
        F.scaled_dot_product_attention(q.long(), q.long(), q.long())


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
@pytest.mark.parametrize("causal", [False, True])
def test_half_precision_scores_do_not_overflow(dt, causal):
    """Scores past float16's 65504 stay finite: the product and softmax run in float32, as torch's CPU kernels."""
    rng = np.random.default_rng(3)
    q, k, v = rng.normal(0, 300, (1, 2, 3, 8)), rng.normal(0, 300, (1, 2, 5, 8)), rng.normal(0, 3, (1, 2, 5, 8))
    pq, pk, pv = (pf.tensor(a, dtype=getattr(pf, dt), requires_grad=True) for a in (q, k, v))
    tq, tk, tv = (torch.tensor(a, dtype=getattr(torch, dt), requires_grad=True) for a in (q, k, v))
    got = F.scaled_dot_product_attention(pq, pk, pv, is_causal=causal)
    want = TF.scaled_dot_product_attention(tq, tk, tv, is_causal=causal)
    assert got.dtype is getattr(pf, dt) and np.isfinite(got.detach().float().numpy()).all()
    np.testing.assert_allclose(got.detach().float().numpy(), want.detach().float().numpy(), rtol=2e-2, atol=2e-2)
    got.sum().backward()
    want.sum().backward()
    np.testing.assert_allclose(pv.grad.float().numpy(), tv.grad.float().numpy(), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("path", ["avx2", "portable"])
@pytest.mark.parametrize("causal, scale", [(False, None), (True, None), (True, -0.2)])
@pytest.mark.parametrize("L, S, p", [(70, 70, 0.3), (150, 90, 0.0), (5, 130, 0.3), (256, 256, 0.2)])
def test_sdpa_float32_row_passes_on_each_kernel_set(restore_gemm, restore_seed, path, causal, scale, L, S, p):
    # float32's softmax and its backward run as AVX2 row passes on an AVX2 machine (forced here on any x86
    # machine that has AVX2): the composition in float64 with the same dropout mask, rows that see a multiple
    # of 8 keys and rows that end in a partial vector; the same bits at 1 and 2 threads
    if not restore_gemm.pf_cpu_supports(path.encode()):
        pytest.skip(f"this CPU cannot run the {path} kernels")
    assert restore_gemm.pf_gemm_select(path.encode()) == 0
    rng = np.random.default_rng(L + S)
    q, k = (pf.tensor(rng.standard_normal((2, 3, n, 16)).astype("float32"), requires_grad=True) for n in (L, S))
    v = pf.tensor(rng.standard_normal((2, 3, S, 8)).astype("float32"), requires_grad=True)
    g = pf.tensor(rng.standard_normal((2, 3, L, 8)).astype("float32"))
    runs, before = [], pf.get_num_threads()
    for threads in (1, 2):
        pf.set_num_threads(threads)
        pf.manual_seed(11)
        out = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=causal, scale=scale)
        runs.append([out.detach().numpy(), *(t.numpy() for t in pf.autograd.grad(out, (q, k, v), g))])
    pf.set_num_threads(before)
    for a, b in zip(*runs, strict=True):
        np.testing.assert_array_equal(a, b)
    pf.manual_seed(11)
    keep = pf.empty(2, 3, L, S, dtype=pf.bool).bernoulli_(1 - p) if p else pf.ones(2, 3, L, S, dtype=pf.bool)
    qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
    sc = 1 / math.sqrt(16) if scale is None else scale
    scores = qd @ kd.transpose(-2, -1) * sc
    if causal:
        scores = pf.where(pf.ones(L, S, dtype=pf.bool).tril(), scores, -math.inf)
    want = pf.where(keep, F.softmax(scores, -1) / (1 - p), 0.0) @ vd
    np.testing.assert_allclose(runs[0][0], want.detach().numpy(), rtol=1e-4, atol=2e-5)
    for got, exp in zip(runs[0][1:], pf.autograd.grad(want, (qd, kd, vd), g.double()), strict=True):
        np.testing.assert_allclose(got, exp.numpy(), rtol=1e-4, atol=5e-5)
