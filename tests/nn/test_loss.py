"""Losses against torch (float64 forward and gradients; cross_entropy's fused C kernel in float32 too):
regression, classification (weights, ignore_index, label smoothing, probability targets), binary,
KL, margin and ranking losses, functional and modules; gradchecks and bad input."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from pyframe.autograd import gradcheck
from tests._oracle import close_or_none, compare, compare_named, f64, leaf, lib_of, rand, randn, twin_random
from tests._tables import reprs_test

torch = pytest.importorskip("torch")
TF = torch.nn.functional
rand2 = functools.partial(rand, scale=2.0)


REDUCTIONS = ["mean", "sum", "none"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "name, kw", [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}), ("huber_loss", {"delta": 0.7})]
)
def test_regression_losses_match_torch(rng, name, kw, reduction):
    compare(
        lambda x, t: getattr(F, name)(x, t, reduction=reduction, **kw),
        lambda x, t: getattr(TF, name)(x, t, reduction=reduction, **kw),
        f64(rng, 3, 4), f64(rng, 3, 4),
    )  # fmt: skip


def _class_case(rng, shape, c, ignore=True):
    x = f64(rng, *shape[:1], c, *shape[1:], lo=-3, hi=3)
    t = rng.integers(0, c, size=shape)
    if ignore:
        t.flat[1] = -100
    return x, t


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(5,), (2, 3, 2)])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_and_cross_entropy_match_torch(rng, reduction, shape, weighted):
    x, t = _class_case(rng, shape, 4)
    w = f64(rng, 4, lo=0.2, hi=2.0) if weighted else None
    pw, tw = (pf.tensor(w), torch.tensor(w)) if weighted else (None, None)
    tt, ptt = torch.tensor(t), pf.tensor(t)
    compare(lambda x: F.nll_loss(x, ptt, pw, reduction=reduction),
            lambda x: TF.nll_loss(x, tt, tw, reduction=reduction), x)  # fmt: skip
    for ls in (0.0, 0.2):
        compare(
            lambda x, ls=ls: F.cross_entropy(x, ptt, pw, reduction=reduction, label_smoothing=ls),
            lambda x, ls=ls: TF.cross_entropy(x, tt, tw, reduction=reduction, label_smoothing=ls),
            x,
        )  # fmt: skip


def test_cross_entropy_ignore_index_and_unbatched(rng):
    x, t = _class_case(rng, (6,), 3, ignore=False)
    pt_, tt = pf.tensor(t), torch.tensor(t)
    compare(lambda x: F.cross_entropy(x, pt_, ignore_index=1), lambda x: TF.cross_entropy(x, tt, ignore_index=1), x)
    compare(lambda x: F.cross_entropy(x, pf.tensor(2)), lambda x: TF.cross_entropy(x, torch.tensor(2)), f64(rng, 5))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probability_targets(rng, reduction):
    x = f64(rng, 3, 4, 2)
    p = rng.dirichlet(np.ones(4), size=(3, 2)).transpose(0, 2, 1).copy()
    w = f64(rng, 4, lo=0.5, hi=1.5)
    for ls, weight in ((0.0, None), (0.1, w)):
        compare(
            lambda x, p, ls=ls, weight=weight: F.cross_entropy(
                x, p, None if weight is None else pf.tensor(weight), reduction=reduction, label_smoothing=ls),
            lambda x, p, ls=ls, weight=weight: TF.cross_entropy(
                x, p, None if weight is None else torch.tensor(weight), reduction=reduction, label_smoothing=ls),
            x, p,
        )  # fmt: skip


def test_classification_losses_gradcheck(rng):
    x, t = _class_case(rng, (2, 3), 4)
    t_ = pf.tensor(t)
    w = pf.tensor(f64(rng, 4, lo=0.5, hi=1.5))
    xl = leaf(x)
    assert gradcheck(lambda x: F.cross_entropy(x, t_, w, label_smoothing=0.1), [xl])
    assert gradcheck(lambda x: F.nll_loss(F.log_softmax(x, 1), t_, reduction="sum"), [xl])
    p = leaf(rng.uniform(0.05, 0.95, size=(3, 4)))
    y = leaf(rng.uniform(0, 1, size=(3, 4)))
    assert gradcheck(lambda p, y: F.binary_cross_entropy(p, y), [p, y])
    z, pw = leaf(f64(rng, 3, 4, lo=-3, hi=3)), leaf(f64(rng, 4, lo=0.5, hi=2))
    assert gradcheck(lambda z, y, pw: F.binary_cross_entropy_with_logits(z, y, pos_weight=pw), [z, y, pw])
    assert gradcheck(lambda x: F.mse_loss(x, y, reduction="sum") + F.l1_loss(x, y), [p])


def test_nll_loss_bad_input():
    with pytest.raises(IndexError, match="target 4 is out of bounds for 4 classes"):
        F.nll_loss(pf.randn(2, 4), pf.tensor([0, 4]))
    with pytest.raises(ValueError, match=r"expected target of shape \[2\] for input of shape \[2, 4\]"):
        F.nll_loss(pf.randn(2, 4), pf.tensor([0, 1, 2]))
    with pytest.raises(TypeError, match="int64"):
        F.nll_loss(pf.randn(2, 4), pf.tensor([0.5, 1.0]))
    with pytest.raises(ValueError, match="'avg' is not a valid value for reduction"):
        F.cross_entropy(pf.randn(2, 4), pf.tensor([0, 1]), reduction="avg")
    with pytest.raises(ValueError, match="'avg' is not a valid value"):
        F.mse_loss(pf.randn(2), pf.randn(2), reduction="avg")


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

    compare(lambda x: call(pf, x), lambda x: call(torch, x), x, rtol=2e-5, atol=2e-6, seed=1)


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


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_matches_torch(rng, reduction):
    p, t, w = rng.uniform(0.01, 0.99, size=(3, 4)), rng.uniform(0, 1, size=(3, 4)), f64(rng, 4, lo=0.5, hi=2)
    compare(lambda p, t: F.binary_cross_entropy(p, t, pf.tensor(w), reduction=reduction),
            lambda p, t: TF.binary_cross_entropy(p, t, torch.tensor(w), reduction=reduction), p, t)  # fmt: skip
    edge = np.array([0.0, 1.0, 1e-30, 0.5])  # logs clamp at -100; the gradient stays finite
    target = np.array([1.0, 0.0, 1.0, 0.5])
    compare(lambda p: F.binary_cross_entropy(p, pf.tensor(target)),
            lambda p: TF.binary_cross_entropy(p, torch.tensor(target)), edge)  # fmt: skip


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_bce_with_logits_matches_torch(rng, reduction):
    x, t = f64(rng, 3, 4, lo=-5, hi=5), rng.uniform(0, 1, size=(3, 4))
    x[0, :3] = [0.0, 60.0, -60.0]  # exact gradient at 0; stable far out
    w, pw = f64(rng, 3, 1, lo=0.5, hi=2), f64(rng, 4, lo=0.5, hi=3)
    compare(lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction),
            lambda x, t: TF.binary_cross_entropy_with_logits(x, t, reduction=reduction), x, t)  # fmt: skip
    compare(  # torch has no gradient for pos_weight (gradcheck covers pyframe's)
        lambda x, t: F.binary_cross_entropy_with_logits(
            x, t, pf.tensor(w), reduction=reduction, pos_weight=pf.tensor(pw)),
        lambda x, t: TF.binary_cross_entropy_with_logits(
            x, t, torch.tensor(w), reduction=reduction, pos_weight=torch.tensor(pw)),
        x, t,
    )  # fmt: skip


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_bce_with_logits_fused_path_matches_torch(dtype):
    """Without pos_weight, and a target that needs no gradient, the loss is one C pass and its gradient one more:
    float32 and float64 over far logits (+-100, where exp overflows), 0, NaN and a strided input, and create_graph."""
    rng = np.random.default_rng(3)
    x = np.concatenate([[0.0, 100.0, -100.0, 30.0, -30.0, np.nan, 1e-30], rng.uniform(-12, 12, 993)]).astype(dtype)
    t = rng.uniform(0, 1, 1000).astype(dtype)
    t[:3] = [1.0, 0.0, 1.0]
    for reduction in ("none", "mean", "sum"):
        px, tx = pf.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        py = F.binary_cross_entropy_with_logits(px, pf.tensor(t), reduction=reduction)
        ty = TF.binary_cross_entropy_with_logits(tx, torch.tensor(t), reduction=reduction)
        rtol = 2e-6 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(py.detach().numpy(), ty.detach().numpy(), rtol=rtol, atol=rtol, equal_nan=True)
        py.sum().backward()
        ty.sum().backward()
        np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=rtol, equal_nan=True)
    strided = pf.tensor(np.stack([x, x], 1))[:, 1]
    np.testing.assert_array_equal(
        F.binary_cross_entropy_with_logits(strided, pf.tensor(t), reduction="none").numpy(),
        F.binary_cross_entropy_with_logits(pf.tensor(x), pf.tensor(t), reduction="none").numpy())  # fmt: skip
    xs, ts = x[7:40].astype(np.float64), t[7:40].astype(np.float64)
    px, tx = pf.tensor(xs, requires_grad=True), torch.tensor(xs, requires_grad=True)
    (pg,) = pf.autograd.grad(F.binary_cross_entropy_with_logits(px, pf.tensor(ts)), px, create_graph=True)
    (tg,) = torch.autograd.grad(TF.binary_cross_entropy_with_logits(tx, torch.tensor(ts)), tx, create_graph=True)
    np.testing.assert_allclose(pf.autograd.grad(pg.sum(), px)[0].numpy(), torch.autograd.grad(tg.sum(), tx)[0].numpy())


def test_binary_losses_bad_input():
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.binary_cross_entropy(pf.tensor([0.5, 1.5]), pf.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"target size \(\[3\]\) that is different to the input size \(\[2\]\)"):
        F.binary_cross_entropy_with_logits(pf.randn(2), pf.rand(3))


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none"])
def test_kl_div_matches_torch(rng, reduction):
    """Input log-probabilities; targets probabilities."""
    lp = np.log(rng.dirichlet(np.ones(4), size=3))
    q = rng.dirichlet(np.ones(4), size=3)
    compare(lambda a, b: F.kl_div(a, b, reduction=reduction), lambda a, b: TF.kl_div(a, b, reduction=reduction), lp, q)
    q[0, 0] = 0.0  # torch's target gradient is nan at 0; pyframe's is 0 (the limit): compare the input's only
    compare(lambda a: F.kl_div(a, pf.tensor(q), reduction=reduction),
            lambda a: TF.kl_div(a, torch.tensor(q), reduction=reduction), lp)  # fmt: skip


A, B = rand2(4, 6, seed=1), rand2(4, 6, seed=2)


SIGNS = np.array([1.0, -1.0, -1.0, 1.0])


MARGIN_LOSSES = [
    ("soft_margin_loss", (A, np.sign(B)), {}, (0,)),
    ("margin_ranking_loss", (A[:, 0], B[:, 0], SIGNS), {"margin": 0.5}, (0, 1)),
    ("hinge_embedding_loss", (A, np.sign(B)), {"margin": 1.5, "reduction": "sum"}, (0,)),
    ("cosine_embedding_loss", (A, B, SIGNS), {"margin": 0.1}, (0, 1)),
    ("cosine_embedding_loss", (A[0], B[0], np.array(-1.0)), {"reduction": "none"}, (0, 1)),
    ("triplet_margin_loss", (A, B, rand2(4, 6, seed=3)), {"swap": True}, (0, 1, 2)),
    ("triplet_margin_loss", (A, B, rand2(4, 6, seed=3)), {"p": 1, "reduction": "none"}, (0, 1, 2)),
    ("multilabel_soft_margin_loss", (A, (B > 0).astype(np.float64)), {}, (0,)),
    ("multi_margin_loss", (A, np.array([0, 5, 2, 2])), {}, (0,)),
    ("multi_margin_loss", (A, np.array([1, 0, 3, 4])), {"p": 2, "margin": 0.7, "reduction": "sum"}, (0,)),
    ("poisson_nll_loss", (A, np.abs(B) * 3), {}, (0,)),
    ("poisson_nll_loss", (np.abs(A) + 0.1, np.abs(B) * 3), {"log_input": False, "full": True}, (0,)),
    ("gaussian_nll_loss", (A, B, np.abs(rand2(4, 6, seed=5)) + 0.1), {}, (0, 2)),
    ("gaussian_nll_loss", (A, B, np.abs(rand2(4, seed=5)) + 0.1), {"full": True, "reduction": "none"}, (0, 2)),
]


@pytest.mark.parametrize("name, args, kw, grad", MARGIN_LOSSES, ids=[c[0] for c in MARGIN_LOSSES])
def test_margin_loss_matches_torch(name, args, kw, grad):
    compare_named(name, args, kw, grad=grad)


def test_margin_loss_modules_match_torch():
    x, y, w = pf.tensor(A), pf.tensor(np.array([0, 5, 2, 2])), pf.tensor(np.abs(rand2(6, seed=7)))
    tx, ty, tw = torch.tensor(A), torch.tensor(np.array([0, 5, 2, 2])), torch.tensor(w.numpy())
    for build, pa, ta in (
        (lambda n, w: n.MultiMarginLoss(weight=w), (x, y), (tx, ty)),
        (lambda n, w: n.MultiLabelSoftMarginLoss(weight=w), (x, pf.tensor(B > 0).to(pf.float64)),
         (tx, torch.tensor(B > 0).double())),
        (lambda n, w: n.TripletMarginLoss(margin=0.5), (x, x * 0.5, x * -1.0), (tx, tx * 0.5, tx * -1.0)),
        (lambda n, w: n.GaussianNLLLoss(full=True), (x, x * 0.3, pf.tensor(np.ones(4))), (tx, tx * 0.3,
                                                                                        torch.ones(4, dtype=tx.dtype))),
        (lambda n, w: n.PoissonNLLLoss(), (x, x.abs()), (tx, tx.abs())),
        (lambda n, w: n.SoftMarginLoss(reduction="sum"), (x, x.sign()), (tx, tx.sign())),
    ):  # fmt: skip
        p, t = build(nn, w), build(torch.nn, tw)
        np.testing.assert_allclose(p(*pa).numpy(), t(*ta).numpy(), rtol=1e-9, atol=1e-12)


def test_margin_loss_bad_input():
    with pytest.raises(ValueError, match="same dimension"):
        F.margin_ranking_loss(pf.tensor(A), pf.tensor(B[:, 0]), pf.tensor(SIGNS))
    with pytest.raises(ValueError, match="same number of dimensions"):
        F.triplet_margin_loss(pf.tensor(A), pf.tensor(B), pf.tensor(A[0]))
    with pytest.raises(ValueError, match="var has negative"):
        F.gaussian_nll_loss(pf.tensor(A), pf.tensor(B), pf.tensor(-np.ones((4, 6))))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(pf.tensor(A), pf.tensor(B), pf.ones(3))
    with pytest.raises(IndexError, match="target values"):
        F.multi_margin_loss(pf.tensor(A), pf.tensor(np.array([0, 6, 1, 1])))
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match="reduction"):
        F.soft_margin_loss(pf.tensor(A), pf.tensor(B), reduction="avg")


LOGITS = randn(5, 4)


CLASSES = np.array([0, 3, 1, 1, 2], dtype=np.int64)


CLASSES_IGNORED = np.array([0, -100, 1, 1, 2], dtype=np.int64)


PROBS = np.abs(randn(5, 4, seed=4)) / np.abs(randn(5, 4, seed=4)).sum(1, keepdims=True)


BINARY = (randn(5, 4, seed=5) > 0).astype(np.float32)


LOG_PROBS = LOGITS - np.log(np.exp(LOGITS).sum(1, keepdims=True))


CLASS_WEIGHT = np.array([0.5, 1.0, 2.0, 1.5], dtype=np.float32)


def _with_weight(lib_nn, cls, key="weight", value=CLASS_WEIGHT, **kwargs):
    return cls(**{key: lib_of(lib_nn).from_numpy(value.copy())}, **kwargs)


LOSS_MODULES = {
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


@pytest.mark.parametrize("name", list(LOSS_MODULES))
def test_loss_module_matches_torch(name):
    build, (x, target) = LOSS_MODULES[name]
    t, p = twin_random(build)
    tx, px = torch.from_numpy(x.copy()).requires_grad_(), pf.from_numpy(x.copy()).requires_grad_()
    to, po = t(tx, torch.from_numpy(target.copy())), p(px, pf.from_numpy(target.copy()))
    close_or_none(po, to)
    to.sum().backward()
    po.sum().backward()
    close_or_none(px.grad, tx.grad)


def test_loss_weights_are_buffers():
    w = pf.ones(3)
    ce = nn.CrossEntropyLoss(weight=w)
    assert ce.weight is w and list(ce.state_dict()) == ["weight"]
    assert list(nn.CrossEntropyLoss().state_dict()) == []
    bce = nn.BCEWithLogitsLoss(pos_weight=w)
    assert list(bce.state_dict()) == ["pos_weight"] and bce.weight is None
    assert ce.double().weight.dtype == pf.float64


def test_legacy_reduction_arguments():
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert nn.MSELoss(size_average=False).reduction == "sum"
    with pytest.warns(UserWarning):
        assert nn.NLLLoss(reduce=False).reduction == "none"


def _legacy_cases():
    """(name, arguments as NumPy) of every functional loss that takes torch's deprecated size_average/reduce."""
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.1, 0.9, (4, 3)), rng.uniform(0, 1, (4, 3))
    sign, cls = np.sign(rng.normal(size=(4, 3))), rng.integers(0, 3, 4)
    return [
        ("mse_loss", (x, y)), ("l1_loss", (x, y)), ("smooth_l1_loss", (x, y)), ("binary_cross_entropy", (x, y)),
        ("binary_cross_entropy_with_logits", (x, y)), ("kl_div", (np.log(x), y)), ("poisson_nll_loss", (x, y)),
        ("soft_margin_loss", (x, sign)), ("hinge_embedding_loss", (x, sign)), ("nll_loss", (np.log(x), cls)),
        ("cross_entropy", (x, cls)), ("multilabel_soft_margin_loss", (x, (y > 0.5) * 1.0)),
        ("multi_margin_loss", (x, cls)), ("margin_ranking_loss", (x[:, 0], y[:, 0], sign[:, 0])),
        ("cosine_embedding_loss", (x, y, sign[:, 0])), ("triplet_margin_loss", (x, y, x[::-1].copy())),
        ("multilabel_margin_loss", (x, np.array([[0, 2, -1], [1, -1, 0], [2, 1, 0], [-1, 0, 0]]))),
    ]  # fmt: skip


@pytest.mark.parametrize(("size_average", "reduce"), [(False, None), (None, False), (True, True), (False, True)])
@pytest.mark.parametrize(("name", "args"), _legacy_cases(), ids=[c[0] for c in _legacy_cases()])
def test_legacy_reduction_arguments_of_every_functional_loss(name, args, size_average, reduce):
    """size_average/reduce stand for a reduction as in torch (they were ignored by some losses, refused by others)."""
    torch = pytest.importorskip("torch")
    results = []
    for lib in (pf, torch):
        fn = getattr(lib.nn.functional, name)
        tensors = [lib.tensor(a) for a in args]
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            results.append(fn(*tensors, size_average=size_average, reduce=reduce).numpy())
    np.testing.assert_allclose(*results, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
def test_elementwise_weight_as_torch(name, reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    x, y, w = rng.normal(size=(3, 5)), rng.normal(size=(3, 5)), rng.uniform(0.5, 2, (3, 5))
    ours = getattr(F, name)(pf.tensor(x), pf.tensor(y), reduction=reduction, weight=pf.tensor(w))
    theirs = getattr(torch.nn.functional, name)(torch.tensor(x), torch.tensor(y), reduction=reduction,
                                                 weight=torch.tensor(w))  # fmt: skip
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        getattr(F, name)(pf.tensor(x), pf.tensor(y), weight=pf.ones(5))


def test_size_average_is_the_third_positional_argument_as_in_torch():
    x, y = pf.tensor([1.0, 2.0]), pf.tensor([0.0, 0.0])
    with pytest.warns(UserWarning, match="reduction='sum'"):
        assert F.mse_loss(x, y, False).item() == 5.0
    with pytest.warns(UserWarning, match="reduction='none'"):
        assert F.l1_loss(x, y, None, False).tolist() == [1.0, 2.0]


test_reprs_match_torch = reprs_test(
    lambda n: n.KLDivLoss(),
    lambda n: n.HuberLoss(),
    lambda n: n.BCELoss(),
)


CTC = [  # T, N, C, target lengths, input lengths, padded targets
    (12, 3, 5, [3, 0, 5], [12, 9, 11], True),
    (10, 2, 4, [4, 2], [10, 3], False),  # sample 1 cannot fit: infinite loss
    (6, 2, 3, [2, 6], [6, 6], True),  # repeated labels need blanks between them
]  # fmt: skip


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("zero_infinity", [False, True])
@pytest.mark.parametrize("case", CTC)
def test_ctc_loss_matches_torch(dtype, reduction, zero_infinity, case):
    t, n, c, tls, ils, padded = case
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((t, n, c))
    lp = (logits - np.log(np.exp(logits).sum(-1, keepdims=True))).astype(dtype)
    labels = [rng.integers(1, c, size=k) for k in tls]
    labels[-1][: len(labels[-1]) // 2] = labels[-1][0]  # runs of one label
    targets = np.zeros((n, max(tls)), np.int64) if padded else np.concatenate(labels).astype(np.int64)
    if padded:
        for i, lab in enumerate(labels):
            targets[i, : len(lab)] = lab
    res = []
    for lib_, fns in ((pf, F), (torch, TF)):
        x = lib_.tensor(lp, requires_grad=True)
        loss = fns.ctc_loss(x, lib_.tensor(targets), lib_.tensor(ils), lib_.tensor(tls), reduction=reduction,
                            zero_infinity=zero_infinity)  # fmt: skip
        cot = np.linspace(0.5, 1.5, loss.numel()).reshape(tuple(loss.shape)).astype(dtype)
        loss.backward(lib_.tensor(cot))
        res.append((loss.detach().numpy(), np.nan_to_num(x.grad.numpy(), nan=7.0)))
    tol = 1e-5 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=tol, atol=tol)
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=tol, atol=tol)


def test_ctc_loss_gradcheck_module_and_bad_input():
    rng = np.random.default_rng(2)
    x = leaf(rng.standard_normal((7, 2, 4)))
    targets, ils, tls = pf.tensor([[1, 2, 2], [3, 1, 0]]), pf.tensor([7, 6]), pf.tensor([3, 2])
    assert gradcheck(lambda x: F.ctc_loss(x.log_softmax(-1), targets, ils, tls), (x,), eps=1e-6, atol=1e-6)
    loss = nn.CTCLoss(blank=0, reduction="sum")(x.log_softmax(-1), targets, [7, 6], (3, 2))
    ref = torch.nn.CTCLoss(reduction="sum")(torch.tensor(x.detach().numpy()).log_softmax(-1),
                                            torch.tensor([[1, 2, 2], [3, 1, 0]]), [7, 6], [3, 2])  # fmt: skip
    np.testing.assert_allclose(loss.item(), ref.item(), rtol=1e-10)
    unbatched = F.ctc_loss(x[:, 0].log_softmax(-1), targets[0], [7], [3], reduction="none")
    assert unbatched.shape == () and abs(unbatched.item() - F.ctc_loss(
        x.log_softmax(-1), targets, ils, tls, reduction="none")[0].item()) < 1e-12  # fmt: skip
    with pytest.raises(ValueError, match="input length 8 of sample 0 must be in"):
        F.ctc_loss(x, targets, [8, 6], tls)
    with pytest.raises(IndexError, match="target 4 of sample 1 is out of range for 4 classes"):
        F.ctc_loss(x, pf.tensor([[1, 2, 2], [4, 1, 0]]), ils, tls)
    with pytest.raises(TypeError, match="targets must be integers"):
        F.ctc_loss(x, targets.double(), ils, tls)


def _adaptive_twins(**kwargs):
    t = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], **kwargs)
    p = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], **kwargs)
    rng = np.random.default_rng(0)
    with torch.no_grad():
        for q in t.parameters():
            q.copy_(torch.tensor(rng.standard_normal(tuple(q.shape))))
    p.load_state_dict({k: pf.tensor(v.numpy()) for k, v in t.state_dict().items()})
    assert repr(p) == repr(t)
    return t, p


@pytest.mark.parametrize("kwargs", [{}, {"div_value": 2.0, "head_bias": True}])
def test_adaptive_log_softmax_matches_torch(kwargs):
    t, p = _adaptive_twins(**kwargs)
    x = np.random.default_rng(1).standard_normal((6, 8)).astype(np.float32)
    target = np.array([0, 4, 9, 2, 7, 5])
    tx, px = torch.tensor(x, requires_grad=True), pf.tensor(x, requires_grad=True)
    tout, pout = t(tx, torch.tensor(target)), p(px, pf.tensor(target))
    assert pout._fields == ("output", "loss")
    for a, b in ((pout.output, tout.output), (pout.loss, tout.loss), (p.log_prob(px), t.log_prob(tx))):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)
    assert p.predict(px).tolist() == t.predict(tx).tolist()
    tout.loss.backward()
    pout.loss.backward()
    np.testing.assert_allclose(px.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (name, tq), pq in zip(t.named_parameters(), p.parameters(), strict=True):
        np.testing.assert_allclose(pq.grad.numpy(), tq.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)
    one, tone = p(px[0], pf.tensor(target[0])), t(tx[0], torch.tensor(target[0]))  # unbatched
    assert one.output.shape == () and abs(one.loss.item() - tone.loss.item()) < 1e-5


def test_adaptive_log_softmax_checks_its_arguments():
    with pytest.raises(ValueError, match="length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 10, [])
    with pytest.raises(ValueError, match="unique, positive integers"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 10, [5, 3])
    with pytest.raises(ValueError, match="unique, positive integers"):
        nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3, 10])
    m = nn.AdaptiveLogSoftmaxWithLoss(4, 10, [3])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\]"):
        m(pf.ones(2, 4), pf.tensor([1, 10]))
    with pytest.raises(RuntimeError, match="same size in the batch dimension"):
        m(pf.ones(3, 4), pf.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="multi-target not supported"):
        m(pf.ones(2, 4), pf.tensor([[1], [2]]))
    with pytest.raises(RuntimeError, match="0D target tensor expects 1D input"):
        m(pf.ones(2, 4), pf.tensor(1))


def test_nll_loss2d_is_nll_loss_and_warns():
    x = np.random.default_rng(0).standard_normal((2, 3, 2, 2))
    target = np.array([[[0, 1], [2, 0]], [[1, 1], [0, 2]]])
    with pytest.warns(FutureWarning, match="NLLLoss2d` has been deprecated"):
        m = nn.NLLLoss2d(ignore_index=2)
    assert isinstance(m, nn.NLLLoss)
    got = m(F.log_softmax(pf.tensor(x), 1), pf.tensor(target))
    want = torch.nn.NLLLoss(ignore_index=2)(torch.log_softmax(torch.tensor(x), 1), torch.tensor(target))
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)


def test_multi_margin_loss_of_0d_and_1d_inputs_has_the_targets_shape():
    for shape_x, target in (((), torch.tensor(0)), ((3,), torch.tensor([1])), ((3,), torch.tensor(2))):
        x = torch.randn(shape_x, dtype=torch.float64)
        for reduction in ("none", "mean", "sum"):
            want = torch.nn.functional.multi_margin_loss(x, target, reduction=reduction)
            got = F.multi_margin_loss(pf.tensor(x.numpy()), pf.tensor(target.numpy()), reduction=reduction)
            assert tuple(got.shape) == tuple(want.shape)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    with pytest.raises(IndexError, match=r"target values must be in \[0, 0\]"):
        F.multi_margin_loss(pf.tensor(0.5), pf.tensor(1))


def test_triplet_margin_with_distance_loss_matches_torch():
    a, p, n = (randn(4, 5, dtype=np.float64, seed=k) for k in range(3))

    def cosine(x, y, L=torch):
        return 1.0 - L.nn.functional.cosine_similarity(x, y)

    for kw in ({}, {"swap": True, "margin": 0.5}, {"reduction": "none"}):
        compare(
            lambda *t, kw=kw: F.triplet_margin_with_distance_loss(*t, **kw),
            lambda *t, kw=kw: torch.nn.functional.triplet_margin_with_distance_loss(*t, **kw),
            a,
            p,
            n,
        )
        compare(lambda *t, kw=kw: nn.TripletMarginWithDistanceLoss(
                    distance_function=lambda x, y: cosine(x, y, pf), **kw)(*t),
                lambda *t, kw=kw: torch.nn.TripletMarginWithDistanceLoss(distance_function=cosine, **kw)(*t),
                a, p, n)  # fmt: skip
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        F.triplet_margin_with_distance_loss(pf.ones(2), pf.ones(2), pf.ones(2), margin=0.0)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        F.triplet_margin_with_distance_loss(pf.ones(2, 2), pf.ones(2), pf.ones(2))


def test_triplet_margin_loss_with_a_nan_distance_passes_torchs_gradient():
    """torch clamps with clamp_min, whose gradient is 0 where the hinge is NaN (relu's would pass it)."""
    torch = pytest.importorskip("torch")
    a, p, n = [[-0.0, -0.0]], [[-3.84590623, -0.0]], [[-3.39563038, float("nan")]]
    grads = []
    for lib in (pf, torch):
        ts = [lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in (a, p, n)]
        lib.nn.functional.triplet_margin_loss(*ts, reduction="none").sum().backward()
        grads.append([t.grad.detach().numpy() for t in ts])
    for got, want in zip(*grads, strict=True):
        np.testing.assert_array_equal(got, want)
