"""torch's top-level forms of nn.functional ops (torch.batch_norm, torch.embedding, torch.kl_div...): torch's
argument orders and integer reductions, against torch."""

import numpy as np
import pytest

import pyframe

torch = pytest.importorskip("torch")


def _pair(*shape, positive=False, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape)
    a = np.abs(a) + 0.1 if positive else a
    return pyframe.tensor(a), torch.tensor(a)


def _close(got, want):
    if isinstance(want, tuple):
        for g, w in zip(got, want, strict=True):
            _close(g, w)
        return
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_normalizations_in_torchs_order():
    (x, tx), (w, tw), (b, tb) = _pair(4, 3, 5), _pair(3, seed=1), _pair(3, seed=2)
    (m, tm), (v, tv) = _pair(3, seed=3), _pair(3, positive=True, seed=4)
    _close(pyframe.batch_norm(x, w, b, m.clone(), v.clone(), True, 0.1, 1e-5, True),
           torch.batch_norm(tx, tw, tb, tm.clone(), tv.clone(), True, 0.1, 1e-5, True))  # fmt: skip
    _close(pyframe.batch_norm(x, w, b, m, v, False, 0.1, 1e-5, False),
           torch.batch_norm(tx, tw, tb, tm, tv, False, 0.1, 1e-5, False))  # fmt: skip
    _close(pyframe.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, True),
           torch.instance_norm(tx, tw, tb, None, None, True, 0.1, 1e-5, True))  # fmt: skip
    (lw, tlw), (lb, tlb) = _pair(5, seed=5), _pair(5, seed=6)
    _close(pyframe.layer_norm(x, [5], lw, lb, 1e-5), torch.layer_norm(tx, [5], tlw, tlb, 1e-5))
    _close(pyframe.group_norm(x, 3, w, b), torch.group_norm(tx, 3, tw, tb))
    _close(pyframe.rms_norm(x, [5], lw), torch.rms_norm(tx, [5], tlw))


def test_embedding_weight_first_and_padding_gets_no_gradient():
    w = pyframe.randn(5, 3, dtype=pyframe.float64, requires_grad=True)
    tw = torch.tensor(w.detach().numpy(), requires_grad=True)
    idx = [[0, 2, 2], [4, 1, 0]]
    out, tout = pyframe.embedding(w, pyframe.tensor(idx), 2), torch.embedding(tw, torch.tensor(idx), 2)
    _close(out, tout)
    out.sum().backward()
    tout.sum().backward()
    _close(w.grad, tw.grad)
    assert w.grad[2].abs().sum().item() == 0


def test_losses_take_integer_reductions():
    (x, tx), (y, ty) = _pair(4, 3), _pair(4, 3, seed=1)
    sgn = np.sign(np.random.default_rng(2).standard_normal(4))
    s, ts = pyframe.tensor(sgn), torch.tensor(sgn)
    (p, tp) = _pair(4, 3, positive=True, seed=3)
    for r in (0, 1, 2):
        _close(pyframe.kl_div(x, y.softmax(-1), r), torch.kl_div(tx, ty.softmax(-1), r))
        _close(pyframe.kl_div(x, y, r, log_target=True), torch.kl_div(tx, ty, r, log_target=True))
        _close(pyframe.binary_cross_entropy_with_logits(x, y.sigmoid(), None, p[0], r),
               torch.binary_cross_entropy_with_logits(tx, ty.sigmoid(), None, tp[0], r))  # fmt: skip
        _close(pyframe.cosine_embedding_loss(x, y, s, 0.1, r), torch.cosine_embedding_loss(tx, ty, ts, 0.1, r))
        _close(pyframe.margin_ranking_loss(x[:, 0], y[:, 0], s, 0.2, r),
               torch.margin_ranking_loss(tx[:, 0], ty[:, 0], ts, 0.2, r))  # fmt: skip
        _close(pyframe.hinge_embedding_loss(x, s[:, None].expand(4, 3), 1.0, r),
               torch.hinge_embedding_loss(tx, ts[:, None].expand(4, 3), 1.0, r))  # fmt: skip
        _close(
            pyframe.poisson_nll_loss(x, p, True, False, 1e-8, r), torch.poisson_nll_loss(tx, tp, True, False, 1e-8, r)
        )
        _close(pyframe.triplet_margin_loss(x, y, p, 1.0, 2, 1e-6, False, r),
               torch.triplet_margin_loss(tx, ty, tp, 1.0, 2, 1e-6, False, r))  # fmt: skip
    with pytest.raises(ValueError, match="reduction"):
        pyframe.kl_div(x, y, 3)


def test_ctc_loss_and_pooling_with_indices():
    lp = np.log(np.random.default_rng(0).dirichlet(np.ones(5), size=(6, 2)))
    tgt, il, tl = [[1, 2, 2], [3, 1, 0]], [6, 5], [3, 2]
    for r in (0, 1, 2):
        _close(pyframe.ctc_loss(pyframe.tensor(lp), pyframe.tensor(tgt), il, tl, 0, r, False),
               torch.ctc_loss(torch.tensor(lp), torch.tensor(tgt), il, tl, 0, r, False))  # fmt: skip
    x, tx = _pair(2, 3, 8)
    _close(pyframe.adaptive_max_pool1d(x, 3)[0], torch.adaptive_max_pool1d(tx, 3)[0])
    assert pyframe.adaptive_max_pool1d(x, 3)[1].tolist() == torch.adaptive_max_pool1d(tx, 3)[1].tolist()
    v, i = pyframe.max_pool1d_with_indices(x, 3, 2, 1)
    tv, ti = torch.max_pool1d_with_indices(tx, 3, 2, 1)
    _close(v, tv)
    assert i.tolist() == ti.tolist()


def test_activations_and_dropout_forms():
    x, tx = _pair(3, 4)
    _close(pyframe.selu(x), torch.selu(tx))
    _close(pyframe.celu(x, 0.5), torch.celu(tx, 0.5))
    _close(pyframe.threshold(x, 0.1, -2.0), torch.threshold(tx, 0.1, -2.0))
    _close(pyframe.rrelu(x), torch.rrelu(tx))  # eval: the mean slope
    y, ty = x.clone(), tx.clone()
    pyframe.selu_(y), torch.selu_(ty)
    _close(y, ty)
    y, ty = x.clone(), tx.clone()
    pyframe.threshold_(y, 0.0, 1.0), torch.threshold_(ty, 0.0, 1.0)
    _close(y, ty)
    assert pyframe.dropout(x, 0.5, False) is x or pyframe.dropout(x, 0.5, False).equal(x)
    d = pyframe.dropout(pyframe.ones(2000, dtype=pyframe.float64), 0.5, True)
    assert set(d.unique().tolist()) <= {0.0, 2.0} and 800 < int(d.eq(0).sum()) < 1200
    f = pyframe.feature_dropout(pyframe.ones(50, 40, 6, dtype=pyframe.float64), 0.5, True)
    per_channel = f.amax(-1).eq(f.amin(-1))  # whole (sample, channel) slices zeroed or scaled together
    assert bool(per_channel.all()) and set(f.unique().tolist()) <= {0.0, 2.0}
    with pytest.raises(TypeError, match="generator"):
        pyframe.rrelu(x, generator=pyframe.Generator())


def test_functional_inplace_spellings_and_with_indices():
    F, tF = pyframe.nn.functional, torch.nn.functional
    for name, args in (("elu_", (0.5,)), ("hardtanh_", (-0.5, 0.5)), ("leaky_relu_", (0.1,)), ("celu_", (0.7,)),
                       ("selu_", ()), ("rrelu_", ()), ("threshold_", (0.2, -1.0))):  # fmt: skip
        x, tx = _pair(3, 4)
        assert getattr(F, name)(x, *args) is x
        getattr(tF, name)(tx, *args)
        _close(x, tx)
    x, tx = _pair(2, 3, 6, 6)
    cases = ((1, x.reshape(2, 3, 36), tx.reshape(2, 3, 36)), (2, x, tx), (3, x[:, None], tx[:, None]))
    for d, xs, txs in cases:
        got = getattr(F, f"adaptive_max_pool{d}d_with_indices")(xs, 2)
        want = getattr(tF, f"adaptive_max_pool{d}d_with_indices")(txs, 2)
        _close(got[0], want[0])
        assert got[1].tolist() == want[1].tolist()
    _close(F.pdist(x[0, 0]), tF.pdist(tx[0, 0]))
    _close(F.channel_shuffle(x, 3), tF.channel_shuffle(tx, 3))
