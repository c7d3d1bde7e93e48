"""Attention against torch from identical weights: F.scaled_dot_product_attention (masks,
causal, scale, GQA), nn.MultiheadAttention, nn.TransformerEncoder(Layer); float64 gradchecks
and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from pyframe.autograd import gradcheck

torch = pytest.importorskip("torch")


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def both(arr, grad=False):
    return pf.tensor(arr, requires_grad=grad), torch.tensor(arr, requires_grad=grad)


def close(p, t, rtol=1e-9, atol=1e-10):
    np.testing.assert_allclose(p.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


def twin(build):
    """The same module in torch and pyframe, float64, torch's parameters copied into pyframe's."""
    torch.manual_seed(0)
    t, p = build(torch.nn).double(), build(nn).double()
    tsd, psd = t.state_dict(), p.state_dict()
    assert list(tsd) == list(psd)
    with pf.no_grad():
        for k in tsd:
            assert tuple(tsd[k].shape) == tuple(psd[k].shape), k
            psd[k].copy_(pf.tensor(tsd[k].numpy().copy()))
    return t, p


# ---- scaled_dot_product_attention ------------------------------------------------------------

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
    (pq, tq), (pk, tk), (pv, tv) = (both(rand(2, 3, n, 5, seed=i), True) for i, n in enumerate((4, 6, 6)))
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


# ---- MultiheadAttention ----------------------------------------------------------------------

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
    px, tx = both(x, True)
    kw_p, kw_t = {}, {}
    for key in ("need_weights", "average_attn_weights"):
        if key in opts:
            kw_p[key] = kw_t[key] = opts[key]
    if opts.get("cross"):
        (pk, tk), (pv, tv) = both(rand(s, n, 6, seed=1)), both(rand(s, n, 3, seed=2))
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


# ---- TransformerEncoder ----------------------------------------------------------------------


@pytest.mark.parametrize("norm_first, activation", [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_matches_torch(norm_first, activation):
    def build(n):
        layer = n.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True,
                                          norm_first=norm_first, activation=activation)  # fmt: skip
        return n.TransformerEncoder(layer, 2, norm=n.LayerNorm(8), enable_nested_tensor=False)

    t, p = twin(build)
    t.eval()
    p.eval()
    px, tx = both(rand(2, 5, 8), True)
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    kpm = np.zeros((2, 5))
    kpm[0, -1] = -np.inf
    po = p(px, mask=mask, src_key_padding_mask=pf.tensor(kpm))
    to = t(tx, mask=torch.tensor(mask.numpy()), src_key_padding_mask=torch.tensor(kpm))
    close(po, to)
    po.sum().backward()
    to.sum().backward()
    close(px.grad, tx.grad)
    for tp, pp in zip(t.parameters(), p.parameters(), strict=True):
        close(pp.grad, tp.grad)


def test_transformer_encoder_layer_dropout_trains():
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    enc = nn.TransformerEncoder(layer, 3)
    assert len(enc.layers) == 3 and enc.layers[0] is not enc.layers[1]
    x = pf.randn(5, 2, 8)
    y = enc(x)
    assert tuple(y.shape) == (5, 2, 8)
    y.sum().backward()
    assert all(q.grad is not None for q in enc.parameters())
    with pytest.raises(RuntimeError, match="activation"):
        nn.TransformerEncoderLayer(8, 2, activation="swish")


@pytest.mark.parametrize("batch_first, norm_first", [(False, False), (True, True)])
def test_full_transformer_matches_torch(batch_first, norm_first):
    def build(n):
        return n.Transformer(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=2, dim_feedforward=12,
                             dropout=0.0, batch_first=batch_first, norm_first=norm_first)  # fmt: skip

    t, p = twin(build)
    src, tgt = rand(2, 5, 8) if batch_first else rand(5, 2, 8), rand(2, 4, 8, seed=1) if batch_first else rand(
        4, 2, 8, seed=1)  # fmt: skip
    mask = nn.Transformer.generate_square_subsequent_mask(4, dtype=pf.float64)
    kpm = np.zeros((2, 5), dtype=bool)
    kpm[1, -2:] = True
    (ps, ts), (pt, tt) = both(src, True), both(tgt, True)
    po = p(ps, pt, tgt_mask=mask, src_key_padding_mask=pf.tensor(kpm), memory_key_padding_mask=pf.tensor(kpm))
    to = t(ts, tt, tgt_mask=torch.tensor(mask.numpy()), src_key_padding_mask=torch.tensor(kpm),
           memory_key_padding_mask=torch.tensor(kpm))  # fmt: skip
    close(po, to)
    po.sum().backward()
    to.sum().backward()
    close(ps.grad, ts.grad)
    close(pt.grad, tt.grad)
    for tp, pp in zip(t.parameters(), p.parameters(), strict=True):
        close(pp.grad, tp.grad)
    with pytest.raises(RuntimeError, match="d_model"):
        p(pf.randn(*src.shape[:-1], 6).double(), pf.randn(*tgt.shape[:-1], 6).double())
