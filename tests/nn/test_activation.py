"""The added activations, distances and losses against torch (float64 forward and gradient),
module names/reprs/parameters as torch's, and bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.functional as F
from pyframe.autograd import gradcheck

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def rand(*shape, seed=0, scale=2.0):
    return np.random.default_rng(seed).standard_normal(shape) * scale


def compare(name, args, kwargs=None, grad=(0,), pf_fn=None, torch_fn=None, rtol=1e-9, atol=1e-10):
    kwargs = kwargs or {}
    pf_fn = pf_fn or getattr(F, name)
    torch_fn = torch_fn or getattr(TF, name)
    ps = [pf.tensor(a, requires_grad=i in grad) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    ts = [torch.tensor(a, requires_grad=i in grad) if isinstance(a, np.ndarray) else a for i, a in enumerate(args)]
    po, to = pf_fn(*ps, **kwargs), torch_fn(*ts, **kwargs)
    np.testing.assert_allclose(po.detach().numpy(), to.detach().numpy(), rtol=rtol, atol=atol, err_msg=name)
    cot = rand(*to.shape, seed=42)
    po.backward(pf.tensor(cot))
    to.backward(torch.tensor(cot))
    for i in grad:
        np.testing.assert_allclose(ps[i].grad.numpy(), ts[i].grad.numpy(), rtol=rtol, atol=atol, err_msg=name)


X = rand(3, 4, 5)
ACTIVATIONS = [
    ("mish", {}), ("selu", {}), ("celu", {"alpha": 0.7}), ("hardswish", {}), ("hardsigmoid", {}), ("softsign", {}),
    ("tanhshrink", {}), ("softshrink", {"lambd": 0.8}), ("hardshrink", {}), ("glu", {"dim": 1}),
    ("threshold", {"threshold": 0.3, "value": -2.0}), ("rrelu", {}),
]  # fmt: skip


@pytest.mark.parametrize("name, kw", ACTIVATIONS)
def test_activation_matches_torch(name, kw):
    kw = dict(kw)
    args = (X, kw.pop("threshold"), kw.pop("value")) if name == "threshold" else (X,)
    # torch's float64 celu/hardsigmoid backwards use float32 constants (1/alpha, 1/6)
    rtol = 1e-7 if name in ("celu", "hardsigmoid") else 1e-9
    compare(name, args, kw, rtol=rtol)


@pytest.mark.parametrize("n", [1, 4])
def test_prelu_matches_torch(n):
    compare("prelu", (X, rand(n, seed=1, scale=0.3)), grad=(0, 1))
    t, p = torch.nn.PReLU(n), nn.PReLU(n)
    assert [k for k, _ in t.named_parameters()] == [k for k, _ in p.named_parameters()]
    np.testing.assert_allclose(p.weight.detach().numpy(), t.weight.detach().numpy())
    assert repr(t) == repr(p)


def test_activation_modules_match_torch():
    x = pf.tensor(X[:, :, :4])
    tx = torch.tensor(X[:, :, :4])
    for build in (lambda n: n.Mish(), lambda n: n.SELU(), lambda n: n.CELU(2.0), lambda n: n.Hardswish(),
                  lambda n: n.Softshrink(0.3), lambda n: n.Hardshrink(), lambda n: n.Threshold(0.1, 20),
                  lambda n: n.GLU(), lambda n: n.Softmax2d(), lambda n: n.Softsign(), lambda n: n.Tanhshrink(),
                  lambda n: n.Hardsigmoid(inplace=True), lambda n: n.RReLU(0.1, 0.3)):  # fmt: skip
        p, t = build(nn), build(torch.nn)
        assert repr(p) == repr(t)
        np.testing.assert_allclose(p.eval()(x.clone()).numpy(), t.eval()(tx.clone()).numpy(), rtol=1e-9, atol=1e-12)


def test_rrelu_training_slopes_in_range():
    pf.manual_seed(0)
    x = pf.full((1000,), -1.0, dtype=pf.float64)
    y = F.rrelu(x, 0.1, 0.3, training=True).numpy()
    assert np.all((y <= -0.1) & (y >= -0.3)) and y.std() > 0.03


def test_activation_gradcheck():
    x = pf.tensor(rand(2, 6, seed=3, scale=1.0), requires_grad=True)
    for fn in (F.mish, F.selu, F.softsign, lambda v: F.glu(v, -1), lambda v: F.celu(v, 0.5)):
        assert gradcheck(lambda v, fn=fn: fn(v).sum(), (x,), eps=1e-6, atol=1e-6, rtol=1e-4)


A, B = rand(4, 6, seed=1), rand(4, 6, seed=2)
SIGNS = np.array([1.0, -1.0, -1.0, 1.0])


def test_distances_match_torch():
    compare("pairwise_distance", (A, B), grad=(0, 1))
    compare("pairwise_distance", (A, B), {"p": 1.0, "keepdim": True}, grad=(0, 1))
    compare("cosine_similarity", (A, B), grad=(0, 1))
    compare("cosine_similarity", (A, B[:1]), {"dim": -1}, grad=(0, 1))
    assert repr(nn.CosineSimilarity()) == repr(torch.nn.CosineSimilarity())
    np.testing.assert_allclose(nn.PairwiseDistance(p=3)(pf.tensor(A), pf.tensor(B)).numpy(),
                               torch.nn.PairwiseDistance(p=3)(torch.tensor(A), torch.tensor(B)).numpy())  # fmt: skip


LOSSES = [
    ("soft_margin_loss", (A, np.sign(B)), {}, (0,)),
    ("margin_ranking_loss", (A[:, 0], B[:, 0], SIGNS), {"margin": 0.5}, (0, 1)),
    ("hinge_embedding_loss", (A, np.sign(B)), {"margin": 1.5, "reduction": "sum"}, (0,)),
    ("cosine_embedding_loss", (A, B, SIGNS), {"margin": 0.1}, (0, 1)),
    ("cosine_embedding_loss", (A[0], B[0], np.array(-1.0)), {"reduction": "none"}, (0, 1)),
    ("triplet_margin_loss", (A, B, rand(4, 6, seed=3)), {"swap": True}, (0, 1, 2)),
    ("triplet_margin_loss", (A, B, rand(4, 6, seed=3)), {"p": 1, "reduction": "none"}, (0, 1, 2)),
    ("multilabel_soft_margin_loss", (A, (B > 0).astype(np.float64)), {}, (0,)),
    ("multi_margin_loss", (A, np.array([0, 5, 2, 2])), {}, (0,)),
    ("multi_margin_loss", (A, np.array([1, 0, 3, 4])), {"p": 2, "margin": 0.7, "reduction": "sum"}, (0,)),
    ("poisson_nll_loss", (A, np.abs(B) * 3), {}, (0,)),
    ("poisson_nll_loss", (np.abs(A) + 0.1, np.abs(B) * 3), {"log_input": False, "full": True}, (0,)),
    ("gaussian_nll_loss", (A, B, np.abs(rand(4, 6, seed=5)) + 0.1), {}, (0, 2)),
    ("gaussian_nll_loss", (A, B, np.abs(rand(4, seed=5)) + 0.1), {"full": True, "reduction": "none"}, (0, 2)),
]


@pytest.mark.parametrize("name, args, kw, grad", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_matches_torch(name, args, kw, grad):
    compare(name, args, kw, grad=grad)


def test_loss_modules_match_torch():
    x, y, w = pf.tensor(A), pf.tensor(np.array([0, 5, 2, 2])), pf.tensor(np.abs(rand(6, seed=7)))
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


def test_bad_input():
    x = pf.tensor(X)
    with pytest.raises(ValueError, match="Halving dimension must be even"):
        F.glu(x, -1)
    with pytest.raises(ValueError, match="lambda must be greater or equal to 0"):
        F.softshrink(x, -1.0)
    with pytest.raises(ValueError, match="mismatch of parameter numbers"):
        F.prelu(x, pf.ones(3))
    with pytest.raises(ValueError, match="alpha cannot be 0"):
        F.celu(x, 0.0)
    with pytest.raises(TypeError, match="floating point"):
        F.mish(pf.ones(3, dtype=pf.int64))
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
