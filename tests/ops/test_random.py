"""The random generator and random ops: manual_seed, rng state, independence from the thread count, rand/randn/
randint and uniform_/normal_ (ranges and moments), multinomial, bernoulli, randperm, normal: distributions,
generators, gradients as torch's, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    DTYPES,
    FLOATS,
    npy,
)


def test_multinomial_with_replacement_follows_the_weights():
    w = pyframe.tensor([0.0, 1.0, 3.0, 0.0])
    s = pyframe.multinomial(w, 4000, replacement=True, generator=pyframe.Generator().manual_seed(1))
    counts = np.bincount(s.numpy(), minlength=4)
    assert s.dtype == pyframe.int64 and s.shape == (4000,)
    assert counts[0] == 0 and counts[3] == 0 and 2.6 < counts[2] / counts[1] < 3.4


def test_multinomial_without_replacement_and_rows():
    w = pyframe.rand(5, 10) + 0.01
    s = w.multinomial(10)
    assert s.shape == (5, 10) and all(sorted(row) == list(range(10)) for row in s.tolist())
    g1, g2 = pyframe.Generator().manual_seed(3), pyframe.Generator().manual_seed(3)
    assert pyframe.multinomial(w, 3, generator=g1).tolist() == pyframe.multinomial(w, 3, generator=g2).tolist()
    # the GPT generate() idiom: sample one token from softmax probabilities
    probs = pyframe.softmax(pyframe.randn(2, 7), dim=-1)
    assert pyframe.multinomial(probs, num_samples=1).shape == (2, 1)


def test_multinomial_bad_input():
    with pytest.raises(ValueError, match="non-negative"):
        pyframe.multinomial(pyframe.tensor([-1.0, 2.0]), 1)
    with pytest.raises(ValueError, match="non-negative"):
        pyframe.multinomial(pyframe.tensor([float("nan"), 2.0]), 1)
    with pytest.raises(ValueError, match="positive finite sum"):
        pyframe.multinomial(pyframe.tensor([0.0, 0.0]), 1, True)
    with pytest.raises(ValueError, match="without replacement"):
        pyframe.multinomial(pyframe.tensor([1.0, 2.0]), 3)
    with pytest.raises(ValueError, match="non-zero categories"):
        pyframe.multinomial(pyframe.tensor([1.0, 0.0, 0.0]), 2)
    with pytest.raises(TypeError, match="floating"):
        pyframe.multinomial(pyframe.tensor([1, 2]), 1)
    with pytest.raises(ValueError, match="num_samples"):
        pyframe.multinomial(pyframe.tensor([1.0, 2.0]), 0)
    with pytest.raises(ValueError, match="1-d or 2-d"):
        pyframe.multinomial(pyframe.ones(2, 2, 2), 1)


def test_bernoulli():
    p = pyframe.full((20000,), 0.3)
    b = pyframe.bernoulli(p)
    assert b.dtype == pyframe.float32 and set(np.unique(b.numpy())) <= {0.0, 1.0} and 0.28 < b.mean().item() < 0.32
    assert pyframe.bernoulli(pyframe.zeros(5)).sum().item() == 0 and pyframe.bernoulli(pyframe.ones(5)).sum() == 5
    x = pyframe.empty(10000).bernoulli_(0.75)
    assert 0.72 < x.mean().item() < 0.78
    q = pyframe.full((3,), 0.5, requires_grad=True)
    out = pyframe.bernoulli(q)
    out.sum().backward()
    assert out.grad_fn.name == "BernoulliBackward0" and q.grad.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pyframe.bernoulli(pyframe.tensor([1.5]))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pyframe.ones(2).bernoulli_(2.0)


def test_randperm():
    p = pyframe.randperm(50)
    assert p.dtype == pyframe.int64 and sorted(p.tolist()) == list(range(50)) and p.tolist() != list(range(50))
    g = lambda: pyframe.Generator().manual_seed(9)  # noqa: E731
    assert pyframe.randperm(20, generator=g()).tolist() == pyframe.randperm(20, generator=g()).tolist()
    assert pyframe.randperm(0).tolist() == [] and pyframe.randperm(4, dtype=pyframe.float32).dtype == pyframe.float32
    with pytest.raises(ValueError, match="non-negative"):
        pyframe.randperm(-1)


def test_normal_forms():
    pyframe.manual_seed(0)
    a = pyframe.normal(2.0, 3.0, size=(20000,))
    assert abs(a.mean().item() - 2.0) < 0.1 and abs(a.std().item() - 3.0) < 0.1
    m = pyframe.tensor([0.0, 100.0])
    b = pyframe.normal(m, 0.0)
    assert b.tolist() == [0.0, 100.0]
    c = pyframe.normal(m, pyframe.tensor([[1.0, 1.0]] * 3))
    assert c.shape == (3, 2)
    d = pyframe.normal(5.0, pyframe.zeros(4))
    assert d.tolist() == [5.0] * 4
    mean = pyframe.zeros(3, requires_grad=True)
    std = pyframe.ones(3, requires_grad=True)
    pyframe.normal(mean, std).sum().backward()
    assert mean.grad.tolist() == [0.0] * 3 and std.grad.tolist() == [0.0] * 3  # as torch
    with pytest.raises(ValueError, match="std"):
        pyframe.normal(m, -1.0)
    with pytest.raises(TypeError, match="size"):
        pyframe.normal(0.0, 1.0)


def test_manual_seed_reproducibility(restore_seed):
    pyframe.manual_seed(42)
    a = [pyframe.rand(100), pyframe.randn(3, 7), pyframe.randint(0, 1000, (50,))]
    pyframe.manual_seed(42)
    b = [pyframe.rand(100), pyframe.randn(3, 7), pyframe.randint(0, 1000, (50,))]
    for x, y in zip(a, b, strict=True):
        np.testing.assert_array_equal(npy(x), npy(y))
    pyframe.manual_seed(43)
    assert not np.array_equal(npy(pyframe.rand(100)), npy(a[0]))
    # consecutive draws differ, and one long draw equals the concatenation of short ones
    pyframe.manual_seed(7)
    long = npy(pyframe.rand(1000))
    pyframe.manual_seed(7)
    parts = np.concatenate([npy(pyframe.rand(n)) for n in (1, 2, 997)])
    np.testing.assert_array_equal(long, parts)
    assert pyframe.initial_seed() == 7


def test_rng_state_round_trip(restore_seed):
    for seed in (1, 12345, -1, 2**63 + 5):
        pyframe.manual_seed(seed)
        pyframe.rand(5)
        state = pyframe.get_rng_state()
        a = npy(pyframe.randn(10))
        pyframe.set_rng_state(state)
        np.testing.assert_array_equal(npy(pyframe.randn(10)), a, err_msg=f"seed {seed}")


@pytest.mark.parametrize("draw", ["rand", "randn", "randint", "rand16", "randn64", "uniform_strided"])
def test_draws_do_not_depend_on_thread_count(draw, restore_threads, restore_seed):
    def make():
        pyframe.manual_seed(2024)
        if draw == "rand":
            return pyframe.rand(1_000_000)
        if draw == "randn":
            return pyframe.randn(1000, 1000)
        if draw == "randint":
            return pyframe.randint(-50, 50, (1_000_000,))
        if draw == "rand16":
            return pyframe.rand(1_000_000, dtype=pyframe.float16)
        if draw == "randn64":
            return pyframe.randn(1_000_001, dtype=pyframe.float64)
        t = pyframe.zeros(1000, 2000)[:, ::2]
        return t.uniform_(-2, 3)

    pyframe.set_num_threads(1)
    one = npy(make())
    pyframe.set_num_threads(2)
    two = npy(make())
    np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("dtype", FLOATS)
def test_uniform_range_and_moments(dtype, restore_seed):
    pyframe.manual_seed(0)
    x = npy(pyframe.rand(1_000_000, dtype=DTYPES[dtype])).astype(np.float64)
    assert x.min() >= 0.0 and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 3e-3 and abs(x.var() - 1 / 12) < 3e-3
    hist = np.histogram(x, bins=10, range=(0, 1))[0] / x.size
    assert np.all(np.abs(hist - 0.1) < 0.01)
    y = npy(pyframe.empty(200_000, dtype=DTYPES[dtype]).uniform_(-3, -1)).astype(np.float64)
    assert y.min() >= -3 and y.max() < -1 and abs(y.mean() + 2) < 0.02


@pytest.mark.parametrize("dtype", FLOATS)
def test_normal_moments(dtype, restore_seed):
    pyframe.manual_seed(1)
    z = npy(pyframe.randn(1_000_000, dtype=DTYPES[dtype])).astype(np.float64)
    assert abs(z.mean()) < 5e-3 and abs(z.std() - 1) < 5e-3
    assert abs(np.mean(z**3)) < 0.02 and abs(np.mean(z**4) - 3) < 0.05  # symmetric, normal tails
    assert abs(np.mean(np.abs(z) < 1) - 0.6827) < 0.005
    w = npy(pyframe.zeros(300_000, dtype=DTYPES[dtype]).normal_(3.0, 0.5)).astype(np.float64)
    assert abs(w.mean() - 3) < 0.01 and abs(w.std() - 0.5) < 0.01
    assert np.all(np.isfinite(z))


@pytest.mark.parametrize(("low", "high"), [(0, 2), (-5, -2), (0, 10), (-(2**40), 2**40), (7, 8)])
def test_randint_bounds(low, high, restore_seed):
    pyframe.manual_seed(3)
    r = pyframe.randint(low, high, (100_000,))
    assert r.dtype == pyframe.int64
    a = npy(r)
    assert a.min() >= low and a.max() < high
    if high - low <= 10:
        assert set(np.unique(a)) == set(range(low, high))  # every value appears
        counts = np.bincount(a - low) / a.size
        assert np.all(np.abs(counts - 1 / (high - low)) < 0.01)


def test_randint_signatures_and_dtypes(restore_seed):
    assert pyframe.randint(5, (3,)).shape == (3,)
    assert pyframe.randint(5, size=(2, 2)).shape == (2, 2)
    assert pyframe.randint(2, 5, size=(4,)).min().item() >= 2
    r = pyframe.randint(0, 100, (1000,), dtype=pyframe.int32)
    assert r.dtype == pyframe.int32 and r.min().item() >= 0 and r.max().item() < 100
    f = pyframe.randint(0, 4, (1000,), dtype=pyframe.float32)
    assert f.dtype == pyframe.float32 and set(npy(f).tolist()) == {0.0, 1.0, 2.0, 3.0}


def test_random_factories_shapes_dtypes_and_grad():
    assert pyframe.rand(2, 3).dtype == pyframe.float32
    assert pyframe.rand((2, 3)).shape == (2, 3)
    assert pyframe.randn(4, dtype=pyframe.float64).dtype == pyframe.float64
    assert pyframe.randn(2, requires_grad=True).requires_grad
    assert pyframe.rand(0).shape == (0,) and pyframe.randn().shape == ()
    with pytest.raises(TypeError, match="float"):
        pyframe.rand(3, dtype=pyframe.int64)
    with pytest.raises(TypeError, match="float"):
        pyframe.randn(3, dtype=pyframe.bool)


def test_random_fill_of_a_strided_view_leaves_the_rest(restore_seed):
    t = pyframe.zeros(10, 6)
    t[:, ::2].uniform_(1, 2)
    t[:, 1::2][::2].normal_(5, 0.1)
    a = npy(t)
    assert ((a[:, ::2] >= 1) & (a[:, ::2] < 2)).all()
    assert (np.abs(a[::2, 1::2] - 5) < 1).all()
    assert (a[1::2, 1::2] == 0).all()


def _moments(x, mean, var, n):
    """mean within 5 standard errors; variance within 10% (n = 100,000 draws per column)."""
    assert np.all(np.abs(x.mean(0) - mean) <= 5 * np.sqrt(np.asarray(var) / n)), (x.mean(0), mean)
    np.testing.assert_allclose(x.var(0), var, rtol=0.1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_poisson_binomial_gamma_moments(restore_seed, dtype):
    from pyframe.ops.random import _standard_gamma

    pyframe.manual_seed(5)
    dt, n = getattr(pyframe, dtype), 100_000
    rates = [0.0, 0.7, 4.0, 15.0, 250.0]  # multiplication below 10, PTRS above, 0 exactly
    x = npy(pyframe.poisson(pyframe.tensor(rates, dtype=dt).expand(n, 5).contiguous()))
    assert x.dtype == np.dtype(dtype) and (x == np.round(x)).all() and (x[:, 0] == 0).all()
    _moments(x[:, 1:], rates[1:], rates[1:], n)
    count, prob = [4.0, 30.0, 200.0, 50.0], [0.2, 0.5, 0.9, 0.0]  # inversion, BTRS, BTRS of 1 - p, p = 0
    x = npy(pyframe.binomial(pyframe.tensor(count, dtype=dt).expand(n, 4).contiguous(), pyframe.tensor(prob, dtype=dt)))
    assert (x >= 0).all() and (x <= np.array(count)).all() and (x[:, 3] == 0).all()
    c, p = np.array(count[:3]), np.array(prob[:3])
    _moments(x[:, :3], c * p, c * p * (1 - p), n)
    alpha = [0.2, 1.0, 3.5, 40.0]  # the boosted branch below 1
    x = npy(_standard_gamma(pyframe.tensor(alpha, dtype=dt).expand(n, 4).contiguous()))
    assert (x > 0).all()
    _moments(x, alpha, alpha, n)


def test_parameterised_draws_reject_bad_parameters_and_repeat_by_seed(restore_seed):
    with pytest.raises(ValueError, match="non-negative"):
        pyframe.poisson(pyframe.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="probabilities in"):
        pyframe.binomial(pyframe.tensor([3.0]), pyframe.tensor([1.5]))
    with pytest.raises(ValueError, match="integers"):
        pyframe.binomial(pyframe.tensor([2.5]), pyframe.tensor([0.5]))
    with pytest.raises(TypeError, match="floating"):
        pyframe.poisson(pyframe.tensor([1, 2]))
    pyframe.manual_seed(9)
    a = npy(pyframe.poisson(pyframe.full((1000,), 30.0)))
    pyframe.manual_seed(9)
    assert (npy(pyframe.poisson(pyframe.full((1000,), 30.0))) == a).all()


def test_standard_gamma_gradient_matches_torch():
    torch = pytest.importorskip("torch")
    from pyframe.ops.random import _standard_gamma, _standard_gamma_grad

    alpha = np.array([0.3, 0.3, 1.5, 1.5, 6.0, 20.0, 20.0, 50.0])
    x = np.array([0.05, 2.0, 0.5, 3.0, 4.0, 19.0, 30.0, 60.0])  # all three of torch's regimes
    expected = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    np.testing.assert_allclose(
        npy(_standard_gamma_grad(pyframe.tensor(alpha), pyframe.tensor(x))), expected, rtol=1e-12
    )
    a = pyframe.tensor([2.0, 5.0], dtype=pyframe.float64, requires_grad=True)
    g = _standard_gamma(a)
    g.sum().backward()
    np.testing.assert_allclose(npy(a.grad), npy(_standard_gamma_grad(a.detach(), g.detach())))


@pytest.mark.parametrize(
    "method, args, mean, var",
    [
        ("exponential_", (2.0,), 0.5, 0.25),
        ("geometric_", (0.25,), 4.0, 12.0),
        ("log_normal_", (0.0, 0.5), 1.1331, 0.3647),
    ],
)
def test_inplace_samplers(restore_seed, method, args, mean, var):
    pyframe.manual_seed(2)
    n = 100_000
    x = npy(getattr(pyframe.empty(n, dtype=pyframe.float64), method)(*args))
    assert abs(x.mean() - mean) <= 5 * np.sqrt(var / n) + 1e-3
    np.testing.assert_allclose(x.var(), var, rtol=0.1)
    c = npy(pyframe.empty(n, dtype=pyframe.float64).cauchy_(1.0, 2.0))
    assert abs(np.median(c) - 1.0) < 0.05  # the median is the location (no mean to compare)
    with pytest.raises(ValueError, match="lambd > 0"):
        pyframe.empty(3).exponential_(-1.0)


def test_random_module_and_fork_rng(restore_seed):
    import pyframe.random as prandom

    assert prandom.manual_seed is pyframe.manual_seed and prandom.get_rng_state is pyframe.get_rng_state
    prandom.manual_seed(5)
    assert prandom.initial_seed() == 5
    with prandom.fork_rng():
        inside = pyframe.rand(3)
    after = pyframe.rand(3)
    assert pyframe.equal(inside, after)  # the draws inside did not advance the generator
    with prandom.fork_rng(enabled=False):
        pyframe.rand(3)
    assert not pyframe.equal(pyframe.rand(3), after)
    with pytest.raises(pyframe.DeviceError, match="devices=\\[0\\]"), prandom.fork_rng(devices=[0]):
        pass
    with prandom.fork_rng(devices=[]):
        pass


def test_like_factories_take_device_and_layout():
    x = pyframe.ones(2, 3, dtype=pyframe.float64)
    for fn in (pyframe.rand_like, pyframe.randn_like):
        y = fn(x, device="cpu", layout=pyframe.strided)
        assert y.shape == (2, 3) and y.dtype == pyframe.float64
        assert fn(x, requires_grad=True).requires_grad
        with pytest.raises(ValueError, match="layout"):
            fn(x, layout="sparse")
        with pytest.raises(TypeError, match="unexpected"):
            fn(x, colour="red")
    r = pyframe.randint_like(x, 3, 10, device="cpu")
    assert r.dtype == pyframe.float64 and bool(((r >= 3) & (r < 10)).all())
    assert pyframe.normal(0.0, 1.0, (4,), layout=pyframe.strided).shape == (4,)
    with pytest.raises(ValueError, match="layout"):
        pyframe.normal(0.0, 1.0, (4,), layout="sparse")
