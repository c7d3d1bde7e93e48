"""RNN, LSTM, GRU and their cells against torch from identical weights (float64): outputs,
final states and every gradient; float64 gradchecks; torch's parameter names, init and errors."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
from pyframe.autograd import gradcheck
from tests._oracle import close, twin
from tests._oracle import rand as _rand

torch = pytest.importorskip("torch")
rand = functools.partial(_rand, scale=0.7)


def flat(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def run_both(t, p, x, h0=None):
    px, tx = pf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    args_p, args_t = (px,), (tx,)
    if h0 is not None:
        hp = tuple(pf.tensor(h, requires_grad=True) for h in h0)
        ht = tuple(torch.tensor(h, requires_grad=True) for h in h0)
        args_p += (hp if len(hp) == 2 else hp[0],)
        args_t += (ht if len(ht) == 2 else ht[0],)
    po, to = p(*args_p), t(*args_t)
    po_l = [a for o in flat(po) for a in flat(o)]
    to_l = [a for o in flat(to) for a in flat(o)]
    assert len(po_l) == len(to_l)
    loss_p, loss_t = 0, 0
    for i, (a, b) in enumerate(zip(po_l, to_l, strict=True)):
        close(a, b)
        w = rand(*b.shape, seed=20 + i)
        loss_p = (a * pf.tensor(w)).sum() + loss_p
        loss_t = (b * torch.tensor(w)).sum() + loss_t
    loss_p.backward()
    loss_t.backward()
    close(px.grad, tx.grad)
    if h0 is not None:
        for a, b in zip(flat(args_p[1]), flat(args_t[1]), strict=True):
            close(a.grad, b.grad)
    for a, b in zip(p.parameters(), t.parameters(), strict=True):
        close(a.grad, b.grad)


CASES = {
    "lstm": (lambda n: n.LSTM(3, 4), (5, 2, 3), True),
    "lstm_2layer_bidir_batch_first": (lambda n: n.LSTM(3, 4, 2, batch_first=True, bidirectional=True), (2, 5, 3), True),
    "lstm_no_bias_unbatched": (lambda n: n.LSTM(3, 4, bias=False), (5, 3), True),
    "gru": (lambda n: n.GRU(3, 4, 2), (6, 2, 3), True),
    "gru_bidir": (lambda n: n.GRU(3, 5, bidirectional=True, batch_first=True), (2, 4, 3), False),
    "rnn_tanh": (lambda n: n.RNN(3, 4, 2), (5, 2, 3), True),
    "rnn_relu_bidir": (lambda n: n.RNN(3, 4, nonlinearity="relu", bidirectional=True), (5, 2, 3), False),
}  # fmt: skip


@pytest.mark.parametrize("name", list(CASES))
def test_recurrent_matches_torch(name):
    build, shape, with_h0 = CASES[name]
    t, p = twin(build)
    x = rand(*shape)
    run_both(t, p, x)
    if with_h0:
        dirs = 2 if t.bidirectional else 1
        n = shape[0] if t.batch_first else shape[1]
        hshape = (t.num_layers * dirs, n, t.hidden_size) if len(shape) == 3 else (t.num_layers * dirs, t.hidden_size)
        h0 = [rand(*hshape, seed=5)] + ([rand(*hshape, seed=6)] if isinstance(t, torch.nn.LSTM) else [])
        t.zero_grad()
        p.zero_grad()
        run_both(t, p, x, h0)


@pytest.mark.parametrize("cell", ["LSTMCell", "GRUCell", "RNNCell"])
@pytest.mark.parametrize("batched", [True, False])
def test_cells_match_torch(cell, batched):
    t, p = twin(lambda n: getattr(n, cell)(3, 4))
    x = rand(2, 3) if batched else rand(3)
    run_both(t, p, x)
    hshape = (2, 4) if batched else (4,)
    h0 = [rand(*hshape, seed=3)] + ([rand(*hshape, seed=4)] if cell == "LSTMCell" else [])
    t.zero_grad()
    p.zero_grad()
    run_both(t, p, x, h0)


def test_lstm_gradcheck_float64():
    m = nn.LSTM(2, 3, bidirectional=True).double()
    w = pf.tensor(rand(4, 1, 6, seed=9))
    x = pf.tensor(rand(4, 1, 2), requires_grad=True)
    assert gradcheck(lambda x: (m(x)[0] * w).sum(), (x,), eps=1e-6, atol=1e-6, rtol=1e-4)
    g = nn.GRUCell(2, 3).double()
    h = pf.tensor(rand(1, 3, seed=2), requires_grad=True)
    assert gradcheck(lambda x, h: g(x, h).sum(), (pf.tensor(rand(1, 2), requires_grad=True), h), eps=1e-6,
                     atol=1e-6, rtol=1e-4)  # fmt: skip


def test_parameter_names_and_init():
    m = nn.LSTM(3, 16, 2, bidirectional=True)
    t = torch.nn.LSTM(3, 16, 2, bidirectional=True)
    assert [k for k, _ in m.named_parameters()] == [k for k, _ in t.named_parameters()]
    bound = 1 / math.sqrt(16)
    for q in m.parameters():
        a = q.detach().numpy()
        assert np.abs(a).max() <= bound and np.abs(a).max() > 0.5 * bound
    assert len(m.all_weights) == 4 and m.all_weights[1][0] is m.weight_ih_l0_reverse
    assert repr(m) == repr(t)
    assert [k for k, _ in nn.GRUCell(3, 4, bias=False).named_parameters()] == ["weight_ih", "weight_hh"]


def test_dropout_between_layers_only_in_training():
    pf.manual_seed(0)
    m = nn.GRU(3, 4, 3, dropout=0.5)
    x = pf.randn(5, 2, 3)
    m.eval()
    with pf.no_grad():
        a, b = m(x)[0], m(x)[0]
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        m.train()
        assert not np.allclose(m(x)[0].numpy(), a.numpy())
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.LSTM(3, 4, dropout=0.2)


def test_bad_input():
    m = nn.LSTM(3, 4)
    with pytest.raises(RuntimeError, match="input_size. Expected 3, got 5"):
        m(pf.randn(2, 1, 5))
    with pytest.raises(RuntimeError, match="2D or 3D"):
        m(pf.randn(2, 1, 1, 3))
    with pytest.raises(RuntimeError, match=r"hidden\[0\] size \[1, 1, 4\], got \[1, 2, 4\]"):
        m(pf.randn(2, 1, 3), (pf.zeros(1, 2, 4), pf.zeros(1, 1, 4)))
    with pytest.raises(TypeError, match="tuple"):
        m(pf.randn(2, 1, 3), pf.zeros(1, 1, 4))
    with pytest.raises(TypeError, match="floating point"):
        m(pf.ones(2, 1, 3, dtype=pf.int64))
    with pytest.raises(ValueError, match="dropout should be"):
        nn.GRU(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be a positive"):
        nn.RNN(3, 0)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(RuntimeError, match="inconsistent input_size"):
        nn.GRUCell(3, 4)(pf.randn(2, 5))
    with pytest.raises(RuntimeError, match="hidden size"):
        nn.GRUCell(3, 4)(pf.randn(2, 3), pf.randn(3, 4))


# ---- packed sequences --------------------------------------------------------------------------

rnn_utils = pytest.importorskip("torch.nn.utils.rnn")


def test_pack_pad_roundtrip_matches_torch():
    from pyframe.nn.utils import rnn as pr

    x = rand(5, 3, 2)
    for lengths, enforce in (([5, 3, 2], True), ([2, 5, 4], False)):
        px = pf.tensor(x, requires_grad=True)
        tx = torch.tensor(x, requires_grad=True)
        pp = pr.pack_padded_sequence(px, lengths, enforce_sorted=enforce)
        tp = rnn_utils.pack_padded_sequence(tx, lengths, enforce_sorted=enforce)
        close(pp.data, tp.data)
        np.testing.assert_array_equal(pp.batch_sizes.numpy(), tp.batch_sizes.numpy())
        if not enforce:
            np.testing.assert_array_equal(pp.sorted_indices.numpy(), tp.sorted_indices.numpy())
            np.testing.assert_array_equal(pp.unsorted_indices.numpy(), tp.unsorted_indices.numpy())
        (pu, pl), (tu, tl) = pr.pad_packed_sequence(pp, True, -1.0, 6), rnn_utils.pad_packed_sequence(tp, True, -1.0, 6)
        close(pu, tu)
        np.testing.assert_array_equal(pl.numpy(), tl.numpy())
        pu.sum().backward()
        tu.sum().backward()
        close(px.grad, tx.grad)
    seqs = [rand(n, 2, seed=n) for n in (2, 4, 3)]
    close(pr.pad_sequence([pf.tensor(s) for s in seqs], batch_first=True, padding_value=7.0),
          rnn_utils.pad_sequence([torch.tensor(s) for s in seqs], batch_first=True, padding_value=7.0))  # fmt: skip
    close(pr.pad_sequence([pf.tensor(s) for s in seqs], padding_side="left"),
          rnn_utils.pad_sequence([torch.tensor(s) for s in seqs], padding_side="left"))  # fmt: skip
    packed = pr.pack_sequence([pf.tensor(s) for s in seqs], enforce_sorted=False)
    for a, b in zip(pr.unpack_sequence(packed), seqs, strict=True):
        np.testing.assert_array_equal(a.numpy(), b)


@pytest.mark.parametrize("kind, bidir, layers", [("LSTM", True, 2), ("GRU", False, 1), ("RNN", True, 1)])
def test_packed_rnn_matches_torch(kind, bidir, layers):
    from pyframe.nn.utils import rnn as pr

    t, p = twin(lambda n: getattr(n, kind)(2, 3, layers, bidirectional=bidir))
    x, lengths = rand(5, 3, 2), [3, 5, 2]
    dirs = 2 if bidir else 1
    h0 = rand(layers * dirs, 3, 3, seed=4)
    px, tx = pf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    hp = (pf.tensor(h0), pf.tensor(h0 * 0.5)) if kind == "LSTM" else pf.tensor(h0)
    ht = (torch.tensor(h0), torch.tensor(h0 * 0.5)) if kind == "LSTM" else torch.tensor(h0)
    po, ph = p(pr.pack_padded_sequence(px, lengths, enforce_sorted=False), hp)
    to, th = t(rnn_utils.pack_padded_sequence(tx, lengths, enforce_sorted=False), ht)
    close(po.data, to.data)
    for a, b in zip(flat(ph), flat(th), strict=True):
        close(a, b)
    (pu, _), (tu, _) = pr.pad_packed_sequence(po), rnn_utils.pad_packed_sequence(to)
    (pu.sum() + flat(ph)[0].sum()).backward()
    (tu.sum() + flat(th)[0].sum()).backward()
    close(px.grad, tx.grad)
    for a, b in zip(p.parameters(), t.parameters(), strict=True):
        close(a.grad, b.grad)


def test_packing_bad_input():
    from pyframe.nn.utils import rnn as pr

    x = pf.randn(4, 3, 2)
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        pr.pack_padded_sequence(x, [2, 4, 3])
    with pytest.raises(ValueError, match="exceeds"):
        pr.pack_padded_sequence(x, [5, 4, 3], enforce_sorted=False)
    with pytest.raises(ValueError, match="expected 3 lengths"):
        pr.pack_padded_sequence(x, [4, 3])
    with pytest.raises(ValueError, match="positive"):
        pr.pack_padded_sequence(x, [4, 3, 0])
    with pytest.raises(ValueError, match="total_length"):
        pr.pad_packed_sequence(pr.pack_padded_sequence(x, [4, 3, 1]), total_length=2)
    with pytest.raises(RuntimeError, match=r"hidden size \[1, 3, 5\]"):
        nn.GRU(2, 5)(pr.pack_padded_sequence(x, [4, 3, 1]), pf.zeros(1, 2, 5))


def test_lstm_double_backward_matches_torch():
    t, p = twin(lambda n: n.LSTM(2, 3))
    x = rand(4, 1, 2)
    px, tx = pf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (gp,) = pf.autograd.grad(p(px)[0].pow(2).sum(), px, create_graph=True)
    (gt,) = torch.autograd.grad(t(tx)[0].pow(2).sum(), tx, create_graph=True)
    close(gp, gt)
    gp.pow(2).sum().backward()
    gt.pow(2).sum().backward()
    close(px.grad, tx.grad)
    for a, b in zip(p.parameters(), t.parameters(), strict=True):
        close(a.grad, b.grad)


def test_lstm_layer_runs_as_one_node_matching_the_step_loop():
    # the C time loop (one node per layer and direction) against the op-by-op step loop, float32 and
    # float64, with gradients reaching only some of out, h_n and c_n and only some inputs
    from pyframe.nn.functional import rnn as F_rnn

    for dt, tol in ((pf.float64, 1e-10), (pf.float32, 2e-5)):
        pf.manual_seed(0)
        L, N, H = 6, 3, 5
        xw = (pf.randn(L, N, 4 * H, dtype=dt) * 2).requires_grad_()
        h0, c0 = pf.randn(N, H, dtype=dt).requires_grad_(), pf.randn(N, H, dtype=dt)
        w = (pf.randn(4 * H, H, dtype=dt) * 0.5).requires_grad_()
        b = pf.randn(4 * H, dtype=dt).requires_grad_()
        out, (hn, cn) = F_rnn._lstm_layer(xw, h0, c0, w, b)
        assert out.grad_fn.name == "LstmBackward0" and hn.grad_fn is out.grad_fn
        ref, (rhn, rcn) = F_rnn._steps("LSTM", xw, (h0, c0), w, b, False)
        for a, r in ((out, ref), (hn, rhn), (cn, rcn)):
            np.testing.assert_allclose(a.detach().numpy(), r.detach().numpy(), rtol=tol, atol=tol)
        wo = pf.randn(L, N, H, dtype=dt)
        for loss, rloss in (((out * wo).sum() + cn.sum(), (ref * wo).sum() + rcn.sum()), (hn.sum(), rhn.sum())):
            got = pf.autograd.grad(loss, (xw, h0, w, b), retain_graph=True)
            want = pf.autograd.grad(rloss, (xw, h0, w, b), retain_graph=True)
            for g, r in zip(got, want, strict=True):
                np.testing.assert_allclose(g.numpy(), r.numpy(), rtol=tol * 10, atol=tol * 10)
        with pf.no_grad():  # inference keeps nothing for backward and gives the same values
            o2, (h2, c2) = F_rnn._lstm_layer(xw, h0, c0, w, b)
        assert o2.grad_fn is None
        np.testing.assert_array_equal(o2.numpy(), out.detach().numpy())


def test_lstm_float32_matches_torch_at_language_model_size():
    t = torch.nn.LSTM(40, 48, 2)
    p = nn.LSTM(40, 48, 2)
    p.load_state_dict({k: pf.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(1).normal(size=(12, 7, 40)).astype("float32")
    px, tx = pf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (po, (ph, pc)), (to, (th, tc)) = p(px), t(tx)
    for a, b in ((po, to), (ph, th), (pc, tc)):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4, atol=1e-5)
    (po.sum() + pc.sum()).backward()
    (to.sum() + tc.sum()).backward()
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-5)
    for a, b in zip(p.parameters(), t.parameters(), strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_lstm_hidden_state_changed_in_place_after_forward_raises():
    m = nn.LSTM(3, 4)
    h0, c0 = pf.zeros(1, 2, 4, requires_grad=True), pf.zeros(1, 2, 4)
    out, _ = m(pf.randn(5, 2, 3), (h0, c0))
    with pf.no_grad():
        c0.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


# float32 layers take the C time loop's packed-weight path on the AVX-512 and AVX2 GEMM paths (16- and 8-unit
# panels): shapes whose hidden size does not fill its panels and whose batch does not fill its row tiles,
# batch 1, one step, two layers, both directions; on every path this CPU has
F32_SHAPES = [(1, 1, 5, 17, 1, False), (6, 1, 9, 33, 2, True), (4, 13, 6, 20, 1, False), (3, 20, 8, 70, 2, False)]
GEMM_PATHS = [p for p in ("avx512", "avx2", "portable") if pf._backend.lib.pf_cpu_supports(p.encode())]


@pytest.mark.parametrize("path", GEMM_PATHS)
@pytest.mark.parametrize(("L", "N", "inp", "H", "layers", "bidir"), F32_SHAPES)
def test_lstm_float32_shapes_match_torch(L, N, inp, H, layers, bidir, path, restore_gemm):
    assert restore_gemm.pf_gemm_select(path.encode()) == 0
    torch.manual_seed(L * 100 + H)
    t = torch.nn.LSTM(inp, H, layers, bidirectional=bidir)
    p = nn.LSTM(inp, H, layers, bidirectional=bidir)
    p.load_state_dict({k: pf.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    rng = np.random.default_rng(H)
    dirs = 2 if bidir else 1
    x = rng.normal(size=(L, N, inp)).astype("float32")
    h0, c0 = (rng.normal(size=(layers * dirs, N, H)).astype("float32") for _ in range(2))
    w_out = rng.normal(size=(L, N, dirs * H)).astype("float32")
    grads = []
    for lib, m in ((pf, p), (torch, t)):
        xs, hs, cs = (lib.tensor(a, requires_grad=True) for a in (x, h0, c0))
        out, (hn, cn) = m(xs, (hs, cs))
        ((out * lib.tensor(w_out)).sum() + hn.sum() + (cn * cn).sum()).backward()
        grads.append([a.detach().numpy() for a in (out, hn, cn, xs.grad, hs.grad, cs.grad)]
                     + [q.grad.numpy() for q in m.parameters()])  # fmt: skip
    for a, b in zip(*grads, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=2e-5)


def test_lstm_weight_changed_in_place_between_calls():
    # the packed weight lives for one call: a second call after an in-place change, through the
    # tensor or a NumPy view of it, sees the new weight forward and backward
    t = torch.nn.LSTM(6, 20)
    p = nn.LSTM(6, 20)
    p.load_state_dict({k: pf.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(3).normal(size=(5, 3, 6)).astype("float32")
    for change in range(3):
        if change == 1:
            with pf.no_grad():
                p.weight_hh_l0.mul_(-0.5)
            with torch.no_grad():
                t.weight_hh_l0.mul_(-0.5)
        elif change == 2:
            p.weight_hh_l0.detach().numpy()[:7] += 0.25
            with torch.no_grad():
                t.weight_hh_l0[:7] += 0.25
        p.zero_grad()
        t.zero_grad()
        po, to = p(pf.tensor(x))[0], t(torch.tensor(x))[0]
        np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=1e-4, atol=1e-5)
        po.pow(2).sum().backward()
        to.pow(2).sum().backward()
        np.testing.assert_allclose(p.weight_hh_l0.grad.numpy(), t.weight_hh_l0.grad.numpy(), rtol=1e-3, atol=1e-4)
