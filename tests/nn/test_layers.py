"""Layers and losses: outputs and gradients against torch with the same weights (copied through
NumPy), running statistics, default initialisation, and constructor errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe
import pyframe.nn as nn

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is the oracle")


def arr(t) -> np.ndarray:
    return t.detach().numpy()


def lib_of(nn_mod):
    return torch if nn_mod is getattr(torch, "nn", None) else pyframe


def twin(build):
    """The same layer in torch and pyframe: torch's floating parameters randomised, then every
    parameter and buffer copied into pyframe's."""
    t, p = build(torch.nn), build(nn)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for q in t.parameters():
            q.copy_(torch.randn(q.shape, generator=gen) * 0.5 + 0.1)
    with pyframe.no_grad():
        tsd, psd = t.state_dict(), p.state_dict()
        assert list(tsd) == list(psd)
        for k in tsd:
            assert tuple(tsd[k].shape) == tuple(psd[k].shape), k
            psd[k].copy_(pyframe.from_numpy(tsd[k].numpy().copy()))
    return t, p


def close(got, expected, rtol=1e-4, atol=1e-5):
    if expected is None:
        assert got is None
        return
    np.testing.assert_allclose(arr(got).astype(np.float64), expected.detach().numpy().astype(np.float64),
                               rtol=rtol, atol=atol)  # fmt: skip


def compare(build, *inputs, train=True, steps=1, rtol=1e-4, atol=1e-5, grad_inputs=True):
    """Forward (``steps`` times) and backward through both twins; compares outputs, the
    gradients of the floating inputs and of every parameter, and the buffers."""
    t, p = twin(build)
    t.train(train)
    p.train(train)
    rng = np.random.default_rng(3)
    for _ in range(steps):
        t_in, p_in = [], []
        for x in inputs:
            x = x() if callable(x) else x
            tx = torch.from_numpy(x.copy())
            px = pyframe.from_numpy(x.copy())
            if grad_inputs and x.dtype.kind == "f":
                tx.requires_grad_()
                px.requires_grad_()
            t_in.append(tx)
            p_in.append(px)
        to, po = t(*t_in), p(*p_in)
        close(po, to, rtol, atol)
        if to.requires_grad:
            g = rng.standard_normal(tuple(to.shape)).astype(x.dtype if x.dtype.kind == "f" else np.float32)
            to.backward(torch.from_numpy(g.copy()))
            po.backward(pyframe.from_numpy(g.copy()))
            for tx, px in zip(t_in, p_in, strict=True):
                close(px.grad, tx.grad, rtol, atol)
            for (name, tq), pq in zip(t.named_parameters(), p.parameters(), strict=True):
                assert (tq.grad is None) == (pq.grad is None), name
                close(pq.grad, tq.grad, rtol, atol)
            t.zero_grad()
            p.zero_grad()
    for tb, pb in zip(t.buffers(), p.buffers(), strict=True):
        close(pb, tb, rtol, atol)
    return t, p


def randn(*shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed + sum(shape)).standard_normal(shape).astype(dtype)


# ---- layers -------------------------------------------------------------------------------------------------

LAYERS = {
    "linear": (lambda n: n.Linear(5, 3), [randn(4, 5)]),
    "linear_3d_nobias": (lambda n: n.Linear(5, 3, bias=False), [randn(2, 4, 5)]),
    "linear_1d_f64": (lambda n: n.Linear(4, 2).double(), [randn(4, dtype=np.float64)]),
    "conv": (lambda n: n.Conv2d(3, 4, 3), [randn(2, 3, 7, 7)]),
    "conv_strided_grouped": (lambda n: n.Conv2d(4, 6, (3, 2), stride=2, padding=1, dilation=(1, 2), groups=2),
                             [randn(2, 4, 9, 8)]),
    "conv_same_nobias": (lambda n: n.Conv2d(3, 2, 3, padding="same", bias=False), [randn(1, 3, 5, 6)]),
    "conv_unbatched": (lambda n: n.Conv2d(2, 3, 2, stride=(1, 2)), [randn(2, 5, 5)]),
    "maxpool": (lambda n: n.MaxPool2d(2), [randn(2, 3, 6, 6)]),
    "maxpool_padded": (lambda n: n.MaxPool2d(3, stride=2, padding=1, dilation=1), [randn(1, 2, 7, 7)]),
    "maxpool_dilated": (lambda n: n.MaxPool2d((2, 3), stride=(1, 2), dilation=2), [randn(1, 2, 7, 9)]),
    "avgpool": (lambda n: n.AvgPool2d(2), [randn(2, 3, 6, 6)]),
    "avgpool_padded": (lambda n: n.AvgPool2d(3, stride=2, padding=1), [randn(1, 2, 7, 7)]),
    "avgpool_no_pad_count": (lambda n: n.AvgPool2d(3, stride=2, padding=1, count_include_pad=False),
                             [randn(1, 2, 7, 7)]),
    "layernorm": (lambda n: n.LayerNorm(6), [randn(3, 6)]),
    "layernorm_2d": (lambda n: n.LayerNorm((4, 6), eps=1e-3), [randn(2, 4, 6)]),
    "layernorm_plain": (lambda n: n.LayerNorm(6, elementwise_affine=False), [randn(3, 6)]),
    "layernorm_nobias": (lambda n: n.LayerNorm(6, bias=False), [randn(3, 6)]),
    "flatten": (lambda n: n.Flatten(), [randn(2, 3, 4)]),
    "flatten_range": (lambda n: n.Flatten(0, 1), [randn(2, 3, 4)]),
    "relu": (lambda n: n.ReLU(), [randn(3, 4)]),
    "gelu": (lambda n: n.GELU(), [randn(3, 4)]),
    "gelu_tanh": (lambda n: n.GELU(approximate="tanh"), [randn(3, 4)]),
    "tanh": (lambda n: n.Tanh(), [randn(3, 4)]),
    "sigmoid": (lambda n: n.Sigmoid(), [randn(3, 4)]),
    "softmax": (lambda n: n.Softmax(dim=1), [randn(3, 4)]),
    "softmax_last": (lambda n: n.Softmax(dim=-1), [randn(2, 3, 4)]),
    "identity": (lambda n: n.Identity(54, unused=True), [randn(3, 4)]),
    "relu6": (lambda n: n.ReLU6(), [randn(3, 4) * 5]),
    "hardtanh": (lambda n: n.Hardtanh(-0.5, 0.8), [randn(3, 4)]),
    "leaky_relu": (lambda n: n.LeakyReLU(0.2), [randn(3, 4)]),
    "elu": (lambda n: n.ELU(alpha=0.7), [randn(3, 4)]),
    "silu": (lambda n: n.SiLU(), [randn(3, 4)]),
    "softplus": (lambda n: n.Softplus(beta=2.0, threshold=1.0), [randn(3, 4)]),
    "logsigmoid": (lambda n: n.LogSigmoid(), [randn(3, 4)]),
    "log_softmax": (lambda n: n.LogSoftmax(dim=1), [randn(3, 4)]),
    "softmin": (lambda n: n.Softmin(dim=0), [randn(3, 4)]),
    "groupnorm": (lambda n: n.GroupNorm(2, 4), [randn(3, 4, 5)]),
    "groupnorm_nobias": (lambda n: n.GroupNorm(2, 4, bias=False), [randn(3, 4, 5)]),
    "groupnorm_plain": (lambda n: n.GroupNorm(1, 4, eps=1e-3, affine=False), [randn(2, 4, 3, 3)]),
    "adaptive_avgpool": (lambda n: n.AdaptiveAvgPool2d((2, 3)), [randn(2, 3, 6, 6)]),
    "adaptive_avgpool_uneven": (lambda n: n.AdaptiveAvgPool2d(3), [randn(1, 2, 5, 7)]),
    "unflatten": (lambda n: n.Unflatten(1, (2, 3)), [randn(4, 6, 2)]),
    "dropout_eval": (lambda n: n.Dropout(0.3), [randn(3, 4)], {"train": False}),
    "dropout_p0": (lambda n: n.Dropout(0.0), [randn(3, 4)]),
    "mlp": (lambda n: n.Sequential(n.Linear(6, 8), n.ReLU(), n.Linear(8, 3), n.Tanh()), [randn(5, 6)]),
    "cnn": (lambda n: n.Sequential(n.Conv2d(1, 4, 3, padding=1), n.BatchNorm2d(4), n.ReLU(), n.MaxPool2d(2),
                                   n.Flatten(), n.Linear(4 * 3 * 3, 2)), [randn(2, 1, 6, 6)]),
}  # fmt: skip


@needs_torch
@pytest.mark.parametrize("name", list(LAYERS))
def test_layer_matches_torch(name):
    build, inputs, *kwargs = LAYERS[name]
    compare(build, *inputs, **(kwargs[0] if kwargs else {}))


@needs_torch
def test_embedding_matches_torch():
    idx = np.array([[1, 2, 0, 9], [2, 2, 5, 1]], dtype=np.int64)
    compare(lambda n: n.Embedding(10, 4), idx)
    compare(lambda n: n.Embedding(10, 4, padding_idx=2), idx)
    emb = nn.Embedding(10, 4, padding_idx=2)
    emb(pyframe.from_numpy(idx)).sum().backward()
    assert emb.padding_idx == 2 and float(emb.weight.grad[2].abs().sum()) == 0
    assert float(emb.weight.grad[1].sum()) == 8.0
    assert nn.Embedding(10, 4, padding_idx=-1).padding_idx == 9


@needs_torch
@pytest.mark.parametrize("dims", [(6, 4), (6, 4, 3)])
@pytest.mark.parametrize(
    "kwargs",
    [{}, {"momentum": None}, {"affine": False}, {"track_running_stats": False}, {"momentum": 0.3, "eps": 1e-3}],
)
def test_batchnorm1d_matches_torch(dims, kwargs):
    x = lambda: randn(*dims, seed=np.random.randint(1000))  # noqa: E731 - a fresh batch per step
    t, p = compare(lambda n: n.BatchNorm1d(4, **kwargs), x, steps=3)
    if kwargs.get("track_running_stats", True):
        assert int(p.num_batches_tracked) == 3
    compare(lambda n: n.BatchNorm1d(4, **kwargs), randn(*dims), train=False)


@needs_torch
def test_batchnorm2d_train_then_eval_matches_torch():
    t, p = twin(lambda n: n.BatchNorm2d(3))
    for step in range(3):
        x = randn(4, 3, 5, 5, seed=step)
        close(p(pyframe.from_numpy(x)), t(torch.from_numpy(x)))
    close(p.running_mean, t.running_mean)
    close(p.running_var, t.running_var)
    t.eval()
    p.eval()
    x = randn(2, 3, 5, 5, seed=9)
    close(p(pyframe.from_numpy(x)), t(torch.from_numpy(x)))
    assert int(p.num_batches_tracked) == 3
    compare(lambda n: n.BatchNorm2d(3, bias=False), randn(2, 3, 4, 4))


def test_batchnorm_checks_input_dims():
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3)(pyframe.zeros(2, 3, 4, 5))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(pyframe.zeros(2, 3))


def test_batchnorm_loads_old_checkpoints_without_num_batches_tracked():
    bn = nn.BatchNorm1d(2)
    sd = {k: v for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    assert bn.load_state_dict(sd).missing_keys == []  # no _metadata: treated as version 1
    sd_new = bn.state_dict()
    del sd_new["num_batches_tracked"]
    with pytest.raises(RuntimeError, match="num_batches_tracked"):
        bn.load_state_dict(sd_new)  # version 2 metadata: really missing


# ---- losses ----------------------------------------------------------------------------------------------------

LOGITS = randn(5, 4)
CLASSES = np.array([0, 3, 1, 1, 2], dtype=np.int64)
CLASSES_IGNORED = np.array([0, -100, 1, 1, 2], dtype=np.int64)
PROBS = np.abs(randn(5, 4, seed=4)) / np.abs(randn(5, 4, seed=4)).sum(1, keepdims=True)
BINARY = (randn(5, 4, seed=5) > 0).astype(np.float32)
LOG_PROBS = LOGITS - np.log(np.exp(LOGITS).sum(1, keepdims=True))
CLASS_WEIGHT = np.array([0.5, 1.0, 2.0, 1.5], dtype=np.float32)


def _with_weight(lib_nn, cls, key="weight", value=CLASS_WEIGHT, **kwargs):
    return cls(**{key: lib_of(lib_nn).from_numpy(value.copy())}, **kwargs)


LOSSES = {
    "mse": (lambda n: n.MSELoss(), [LOGITS, randn(5, 4, seed=7)]),
    "mse_sum": (lambda n: n.MSELoss(reduction="sum"), [LOGITS, randn(5, 4, seed=7)]),
    "mse_none": (lambda n: n.MSELoss(reduction="none"), [LOGITS, randn(5, 4, seed=7)]),
    "ce": (lambda n: n.CrossEntropyLoss(), [LOGITS, CLASSES]),
    "ce_weight_ignore": (lambda n: _with_weight(n, n.CrossEntropyLoss, ignore_index=-100), [LOGITS, CLASSES_IGNORED]),
    "ce_smoothing_sum": (lambda n: n.CrossEntropyLoss(label_smoothing=0.1, reduction="sum"), [LOGITS, CLASSES]),
    "ce_probs": (lambda n: n.CrossEntropyLoss(), [LOGITS, PROBS]),
    "ce_none": (lambda n: n.CrossEntropyLoss(reduction="none", ignore_index=3), [LOGITS, CLASSES]),
    "nll": (lambda n: n.NLLLoss(), [LOG_PROBS, CLASSES]),
    "nll_weight": (lambda n: _with_weight(n, n.NLLLoss), [LOG_PROBS, CLASSES_IGNORED]),
    "bce_logits": (lambda n: n.BCEWithLogitsLoss(), [LOGITS, BINARY]),
    "bce_logits_pos_weight": (lambda n: _with_weight(n, n.BCEWithLogitsLoss, "pos_weight"), [LOGITS, BINARY]),
    "bce_logits_weight_sum": (lambda n: _with_weight(n, n.BCEWithLogitsLoss, reduction="sum"), [LOGITS, BINARY]),
    "bce": (lambda n: n.BCELoss(), [1 / (1 + np.exp(-LOGITS)), BINARY]),
    "bce_weight": (lambda n: _with_weight(n, n.BCELoss, value=PROBS, reduction="none"), [PROBS, BINARY]),
    "l1": (lambda n: n.L1Loss(), [LOGITS, randn(5, 4, seed=7)]),
    "smooth_l1": (lambda n: n.SmoothL1Loss(beta=0.5), [LOGITS, randn(5, 4, seed=7)]),
    "huber": (lambda n: n.HuberLoss(delta=0.7, reduction="sum"), [LOGITS, randn(5, 4, seed=7)]),
    "kl_div": (lambda n: n.KLDivLoss(reduction="batchmean"), [LOG_PROBS, PROBS]),
    "kl_div_log_target": (lambda n: n.KLDivLoss(reduction="sum", log_target=True), [LOG_PROBS, np.log(PROBS)]),
}  # fmt: skip


@needs_torch
@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_matches_torch(name):
    build, (x, target) = LOSSES[name]
    t, p = twin(build)
    tx, px = torch.from_numpy(x.copy()).requires_grad_(), pyframe.from_numpy(x.copy()).requires_grad_()
    to, po = t(tx, torch.from_numpy(target.copy())), p(px, pyframe.from_numpy(target.copy()))
    close(po, to)
    to.sum().backward()
    po.sum().backward()
    close(px.grad, tx.grad)


def test_loss_weights_are_buffers():
    w = pyframe.ones(3)
    ce = nn.CrossEntropyLoss(weight=w)
    assert ce.weight is w and list(ce.state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    bce = nn.BCEWithLogitsLoss(pos_weight=w)
    assert list(bce.state_dict()) == ["pos_weight"] and bce.weight is None
    assert ce.double().weight.dtype == pyframe.float64


def test_legacy_reduction_arguments():
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning):
        assert nn.NLLLoss(reduce=False).reduction == "none"


# ---- dropout -------------------------------------------------------------------------------------------------


def test_dropout_train_and_eval():
    pyframe.manual_seed(7)
    drop = nn.Dropout(0.25)
    x = pyframe.ones(200, 50, requires_grad=True)
    y = drop(x)
    kept = arr(y) != 0
    assert 0.7 < kept.mean() < 0.8
    np.testing.assert_allclose(arr(y)[kept], 1 / 0.75, rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(arr(x.grad), np.where(kept, 1 / 0.75, 0.0), rtol=1e-6)
    drop.eval()
    assert drop(x) is x or np.array_equal(arr(drop(x)), arr(x))
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout(1.5)


# ---- initialisation and constructor checks --------------------------------------------------------------------


def test_default_initialisation():
    pyframe.manual_seed(0)
    lin = nn.Linear(50, 40)
    bound = 1 / math.sqrt(50)
    for t in (lin.weight, lin.bias):
        a = arr(t)
        assert a.min() >= -bound and a.max() <= bound and a.std() > bound / 3  # not zeros, not constant
    conv = nn.Conv2d(6, 8, 3, groups=2)
    bound = 1 / math.sqrt(3 * 3 * 3)
    assert conv.weight.shape == (8, 3, 3, 3) and np.abs(arr(conv.weight)).max() <= bound
    assert np.abs(arr(conv.bias)).max() <= bound
    emb = nn.Embedding(1000, 8, padding_idx=3)
    w = arr(emb.weight)
    assert abs(w.mean()) < 0.05 and 0.95 < w.std() < 1.05 and not w[3].any()
    bn = nn.BatchNorm2d(3)
    assert arr(bn.weight).tolist() == [1, 1, 1] and arr(bn.bias).tolist() == [0, 0, 0]
    assert arr(bn.running_var).tolist() == [1, 1, 1] and bn.num_batches_tracked.dtype == pyframe.int64
    ln = nn.LayerNorm((2, 3))
    assert ln.weight.shape == (2, 3) and arr(ln.bias).tolist() == [[0, 0, 0]] * 2
    lin.reset_parameters()
    bn.running_mean.fill_(3.0)
    bn.reset_parameters()
    assert arr(bn.running_mean).tolist() == [0, 0, 0]
    assert nn.Linear(3, 2, dtype=pyframe.float64).weight.dtype == pyframe.float64
    emb2 = nn.Embedding.from_pretrained(pyframe.ones(4, 2))
    assert not emb2.weight.requires_grad and emb2.weight.shape == (4, 2)


@pytest.mark.parametrize(
    "build",
    [
        lambda: nn.Conv2d(3, 4, 3, groups=2),
        lambda: nn.Conv2d(4, 3, 3, groups=2),
        lambda: nn.Conv2d(4, 4, 3, groups=0),
        lambda: nn.Conv2d(4, 4, 3, padding="full"),
        lambda: nn.Conv2d(4, 4, 3, stride=2, padding="same"),
        lambda: nn.Conv2d(4, 4, 3, padding_mode="mirror"),
        lambda: nn.Embedding(4, 2, padding_idx=4),
        lambda: nn.Embedding(4, 2, _weight=pyframe.ones(3, 2)),
        lambda: nn.GroupNorm(3, 4),
        lambda: nn.Hardtanh(1.0, 0.0),
    ],
)
def test_constructor_errors(build):
    with pytest.raises((ValueError, AssertionError)):
        build()


@needs_torch
def test_reprs_of_layers_match_torch():
    builds = [
        lambda n: n.Conv2d(3, 4, 3, padding="same", bias=False),
        lambda n: n.Conv2d(3, 4, (1, 3), stride=(2, 1), padding=(0, 1), dilation=2, groups=1),
        lambda n: n.MaxPool2d((2, 3), stride=1, padding=1, dilation=2),
        lambda n: n.AvgPool2d(3, count_include_pad=False),
        lambda n: n.BatchNorm1d(5, affine=False, track_running_stats=False),
        lambda n: n.LayerNorm([3, 4], elementwise_affine=False),
        lambda n: n.Embedding(5, 2),
        lambda n: n.Dropout(p=0.1, inplace=True),
        lambda n: n.Softmax(),
        lambda n: n.ReLU(),
        lambda n: n.ReLU6(inplace=True),
        lambda n: n.Hardtanh(),
        lambda n: n.LeakyReLU(0.1, inplace=True),
        lambda n: n.ELU(),
        lambda n: n.SiLU(),
        lambda n: n.Softplus(),
        lambda n: n.LogSoftmax(dim=-1),
        lambda n: n.Softmin(1),
        lambda n: n.LogSigmoid(),
        lambda n: n.GroupNorm(2, 4, affine=False),
        lambda n: n.AdaptiveAvgPool2d((None, 3)),
        lambda n: n.Unflatten(-1, (2, 2)),
        lambda n: n.KLDivLoss(),
        lambda n: n.HuberLoss(),
        lambda n: n.BCELoss(),
    ]
    for build in builds:
        assert repr(build(nn)) == repr(build(torch.nn))
