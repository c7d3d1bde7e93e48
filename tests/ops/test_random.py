"""multinomial, bernoulli, randperm, normal: distributions, generators, gradients as torch's, bad input."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe


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
