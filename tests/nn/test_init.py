"""pf.nn.init: gains as torch's, bounds and spreads of the random fills, orthogonality,
in-place semantics (same tensor back, no graph, allowed on leaves that require grad)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.init as init


@pytest.fixture(autouse=True)
def _seed(restore_seed):
    pf.manual_seed(2024)


@pytest.mark.parametrize(
    "name, param",
    [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None), ("leaky_relu", None),
     ("leaky_relu", 0.2), ("selu", None)],
)  # fmt: skip
def test_calculate_gain_matches_torch(name, param):
    torch = pytest.importorskip("torch")
    assert init.calculate_gain(name, param) == pytest.approx(torch.nn.init.calculate_gain(name, param))


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="unsupported nonlinearity 'swish'"):
        init.calculate_gain("swish")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def test_fills_return_the_same_leaf_without_graph():
    w = pf.empty(30, 40, requires_grad=True)
    for fn in (init.uniform_, init.normal_, init.zeros_, init.ones_, init.xavier_uniform_, init.kaiming_normal_,
               init.orthogonal_, init.trunc_normal_, init.eye_, lambda t: init.constant_(t, 0.5)):  # fmt: skip
        assert fn(w) is w
        assert w.requires_grad and w.grad_fn is None and w.is_leaf


def test_constant_zeros_ones_eye():
    t = pf.empty(3, 4)
    np.testing.assert_array_equal(init.constant_(t, 2.5).numpy(), np.full((3, 4), 2.5))
    np.testing.assert_array_equal(init.zeros_(t).numpy(), np.zeros((3, 4)))
    np.testing.assert_array_equal(init.ones_(t).numpy(), np.ones((3, 4)))
    np.testing.assert_array_equal(init.eye_(t).numpy(), np.eye(3, 4))
    with pytest.raises(ValueError, match="2 dimensions"):
        init.eye_(pf.empty(2, 2, 2))


def test_dirac_matches_torch():
    torch = pytest.importorskip("torch")
    t = init.dirac_(pf.empty(6, 4, 3, 3), groups=2)
    np.testing.assert_array_equal(t.numpy(), torch.nn.init.dirac_(torch.empty(6, 4, 3, 3), groups=2).numpy())


def test_uniform_and_normal_statistics():
    u = init.uniform_(pf.empty(200, 500), -2.0, 3.0).numpy()
    assert u.min() >= -2.0 and u.max() < 3.0
    assert abs(u.mean() - 0.5) < 0.02 and abs(u.std() - 5 / math.sqrt(12)) < 0.02
    n = init.normal_(pf.empty(200, 500), 1.0, 2.0).numpy()
    assert abs(n.mean() - 1.0) < 0.03 and abs(n.std() - 2.0) < 0.03


def test_random_fills_are_reproducible():
    pf.manual_seed(5)
    a = init.kaiming_uniform_(pf.empty(8, 8)).numpy().copy()
    pf.manual_seed(5)
    b = init.kaiming_uniform_(pf.empty(8, 8)).numpy()
    np.testing.assert_array_equal(a, b)


def test_xavier_bounds_and_std():
    w = init.xavier_uniform_(pf.empty(300, 200), gain=2.0).numpy()
    bound = 2.0 * math.sqrt(6.0 / 500)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.01 * bound
    c = init.xavier_normal_(pf.empty(64, 32, 3, 3)).numpy()  # fan_in 288, fan_out 576
    assert abs(c.std() / math.sqrt(2.0 / (288 + 576)) - 1) < 0.03


def test_kaiming_bounds_and_std():
    w = init.kaiming_uniform_(pf.empty(256, 400)).numpy()  # a=0, leaky_relu, fan_in: bound sqrt(6 / 400)
    bound = math.sqrt(6.0 / 400)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
    w = init.kaiming_uniform_(pf.empty(256, 400), a=math.sqrt(5)).numpy()  # torch's Linear default: 1/sqrt(fan_in)
    assert np.abs(w).max() <= 1 / math.sqrt(400) and np.abs(w).max() > 0.99 / math.sqrt(400)
    c = init.kaiming_normal_(pf.empty(64, 16, 3, 3), mode="fan_out", nonlinearity="relu").numpy()
    assert abs(c.std() / math.sqrt(2.0 / (64 * 9)) - 1) < 0.03
    with pytest.raises(ValueError, match="Mode 'fan_avg' not supported"):
        init.kaiming_normal_(pf.empty(3, 3), mode="fan_avg")
    with pytest.raises(ValueError, match=r"fewer than 2 dimensions \(shape \[5\]\)"):
        init.xavier_uniform_(pf.empty(5))
    with pytest.warns(UserWarning, match="zero-element"):
        init.kaiming_uniform_(pf.empty(0, 3))


def test_trunc_normal_bounds_and_spread():
    t = init.trunc_normal_(pf.empty(400, 500), mean=0.5, std=1.0, a=-1.0, b=1.5).numpy()
    assert t.min() >= -1.0 and t.max() <= 1.5
    # moments of N(0.5, 1) truncated to [-1, 1.5]
    alpha, beta = -1.5, 1.0
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    big_z = (math.erf(beta / math.sqrt(2)) - math.erf(alpha / math.sqrt(2))) / 2
    mean = 0.5 + (phi(alpha) - phi(beta)) / big_z
    var = 1 + (alpha * phi(alpha) - beta * phi(beta)) / big_z - ((phi(alpha) - phi(beta)) / big_z) ** 2
    assert abs(t.mean() - mean) < 0.01 and abs(t.std() - math.sqrt(var)) < 0.01
    with pytest.warns(UserWarning, match="more than 2 std"):  # far tail: inverse CDF, no rejection loop
        tail = init.trunc_normal_(pf.empty(1000), a=3.0, b=4.0).numpy()
    assert tail.min() >= 3.0 and tail.max() <= 4.0
    with pytest.raises(ValueError, match="a < b"):
        init.trunc_normal_(pf.empty(3), a=1.0, b=0.0)


@pytest.mark.parametrize("shape", [(6, 6), (10, 4), (4, 10), (8, 3, 2, 2)])
def test_orthogonal(shape):
    w = init.orthogonal_(pf.empty(*shape), gain=2.0).numpy().reshape(shape[0], -1)
    rows, cols = w.shape
    gram = w.T @ w if rows >= cols else w @ w.T
    np.testing.assert_allclose(gram, 4.0 * np.eye(min(rows, cols)), atol=1e-5)


def test_orthogonal_float64_precision_and_errors():
    w = init.orthogonal_(pf.empty(50, 30, dtype=pf.float64)).numpy()
    np.testing.assert_allclose(w.T @ w, np.eye(30), atol=1e-13)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(pf.empty(4))


def test_generator_argument_is_refused():
    with pytest.raises(NotImplementedError, match="manual_seed"):
        init.uniform_(pf.empty(2), generator=object())


def _arr(t) -> np.ndarray:
    return t.detach().numpy()


def test_default_initialisation():
    pf.manual_seed(0)
    lin = nn.Linear(50, 40)
    bound = 1 / math.sqrt(50)
    for t in (lin.weight, lin.bias):
        a = _arr(t)
        assert a.min() >= -bound and a.max() <= bound and a.std() > bound / 3  # not zeros, not constant
    conv = nn.Conv2d(6, 8, 3, groups=2)
    bound = 1 / math.sqrt(3 * 3 * 3)
    assert conv.weight.shape == (8, 3, 3, 3) and np.abs(_arr(conv.weight)).max() <= bound
    assert np.abs(_arr(conv.bias)).max() <= bound
    emb = nn.Embedding(1000, 8, padding_idx=3)
    w = _arr(emb.weight)
    assert abs(w.mean()) < 0.05 and 0.95 < w.std() < 1.05 and not w[3].any()
    bn = nn.BatchNorm2d(3)
    assert _arr(bn.weight).tolist() == [1, 1, 1] and _arr(bn.bias).tolist() == [0, 0, 0]
    assert _arr(bn.running_var).tolist() == [1, 1, 1] and bn.num_batches_tracked.dtype == pf.int64
    ln = nn.LayerNorm((2, 3))
    assert ln.weight.shape == (2, 3) and _arr(ln.bias).tolist() == [[0, 0, 0]] * 2
    lin.reset_parameters()
    bn.running_mean.fill_(3.0)
    bn.reset_parameters()
    assert _arr(bn.running_mean).tolist() == [0, 0, 0]
    assert nn.Linear(3, 2, dtype=pf.float64).weight.dtype == pf.float64
    emb2 = nn.Embedding.from_pretrained(pf.ones(4, 2))
    assert not emb2.weight.requires_grad and emb2.weight.shape == (4, 2)


def test_sparse_init_zeros_a_share_of_every_column():
    pf.manual_seed(0)
    w = pf.empty(10, 400)
    assert pf.nn.init.sparse_(w, 0.3, std=0.5) is w
    zeros = (w == 0).sum(0).numpy()
    assert (zeros == 3).all()  # ceil(0.3 * 10) per column, nothing else is exactly 0
    rows = (w == 0).sum(1).numpy()
    assert rows.min() > 60 and rows.max() < 190  # the zeros spread over the rows (each expects 120)
    nonzero = w.numpy()[w.numpy() != 0]
    assert abs(nonzero.std() - 0.5) < 0.03 and abs(nonzero.mean()) < 0.04
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        pf.nn.init.sparse_(pf.empty(3), 0.1)
    with pytest.raises(ValueError, match="sparsity must be in"):
        pf.nn.init.sparse_(pf.empty(3, 3), 1.5)


OLD_NAMES = ["uniform", "normal", "constant", "eye", "dirac", "xavier_uniform", "xavier_normal", "kaiming_uniform",
             "kaiming_normal", "orthogonal", "sparse"]  # fmt: skip


@pytest.mark.parametrize("old", OLD_NAMES)
def test_deprecated_init_names_warn_and_fill_as_the_new_ones(old):
    init = pf.nn.init
    shape = (2, 2, 3) if old == "dirac" else (4, 4)
    args = {"constant": (0.5,), "sparse": (0.5,)}.get(old, ())
    pf.manual_seed(3)
    with pytest.warns(FutureWarning, match=rf"`nn.init.{old}` is now deprecated in favor of `nn.init.{old}_`"):
        a = getattr(init, old)(pf.empty(*shape), *args)
    pf.manual_seed(3)
    b = getattr(init, old + "_")(pf.empty(*shape), *args)
    assert a.tolist() == b.tolist() and getattr(init, old).__name__ == old
