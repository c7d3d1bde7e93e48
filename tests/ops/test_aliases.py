"""torch's top-level aliases and small compositions (pyframe/_aliases.py): the cases their conformance
entries do not reach (signed zeros, NaNs, the in-place forms' identity, copies that do not alias)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe as pf


def test_signbit_sees_negative_zero():
    assert pf.signbit(pf.tensor([-0.0, 0.0, -1.0, 2.0])).tolist() == [True, False, True, False]
    assert pf.copysign(pf.tensor([1.0, 2.0]), pf.tensor([-0.0, 0.0])).tolist() == [-1.0, 2.0]


def test_fmax_fmin_ignore_nan():
    a, b = pf.tensor([math.nan, 1.0, math.nan]), pf.tensor([2.0, math.nan, math.nan])
    assert pf.fmax(a, b).tolist()[:2] == [2.0, 1.0] and math.isnan(pf.fmax(a, b).tolist()[2])
    assert pf.fmin(a, b).tolist()[:2] == [2.0, 1.0]
    with pytest.raises(TypeError):
        pf.fmax(a, 1.0)


def test_inplace_forms_write_into_the_tensor():
    x = pf.tensor([1.0, 2.0, 3.0])
    assert x.eq_(pf.tensor([1.0, 0.0, 3.0])) is x and x.tolist() == [1.0, 0.0, 1.0]
    y = pf.tensor([1.0, 2.0, 3.0])
    assert y.cumsum_(0) is y and y.tolist() == [1.0, 3.0, 6.0]


def test_copies_do_not_alias():
    x = pf.arange(6.0).reshape(2, 3)
    t = pf.t_copy(x)
    t[0, 0] = 100.0
    assert x[0, 0].item() == 0.0


@pytest.mark.parametrize("offset", [-2, -1, 0, 1, 2])
def test_diag_embed_against_torch(offset):
    torch = pytest.importorskip("torch")
    a = np.arange(24.0).reshape(2, 3, 4)
    for dims in ((-2, -1), (0, 2), (1, 0)):
        got = pf.diag_embed(pf.tensor(a), offset, *dims).numpy()
        np.testing.assert_array_equal(got, torch.diag_embed(torch.tensor(a), offset, *dims).numpy())


def test_pdist_and_windows_of_points():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_allclose(pf.pdist(pf.tensor(a)).numpy(), torch.pdist(torch.tensor(a)).numpy(), rtol=1e-12)
    y = np.random.default_rng(1).normal(size=(3, 6))
    for fn in ("trapezoid", "cumulative_trapezoid"):
        np.testing.assert_allclose(getattr(pf, fn)(pf.tensor(y), dx=0.5).numpy(),
                                   getattr(torch, fn)(torch.tensor(y), dx=0.5).numpy(), rtol=1e-12)  # fmt: skip


def test_legacy_constructors():
    assert pf.Tensor([1, 2]).dtype is pf.float32 and pf.Tensor([1, 2]).tolist() == [1.0, 2.0]
    assert pf.Tensor(2, 3).shape == (2, 3) and pf.Tensor().shape == (0,)
    assert pf.LongTensor([1, 2]).dtype is pf.int64 and pf.FloatTensor(3).shape == (3,)
    assert isinstance(pf.ones(2), pf.FloatTensor) and not isinstance(pf.ones(2), pf.LongTensor)
    assert isinstance(pf.arange(3), pf.LongTensor) and isinstance(pf.ones(1), pf.Tensor)
    v = pf.autograd.Variable(pf.ones(2), requires_grad=True)
    assert v.requires_grad and v.is_leaf
    with pytest.raises(TypeError):
        pf.nn.Parameter.__new__(pf.Tensor, 1)  # only Tensor itself takes torch's legacy arguments


def test_legacy_loss_reductions_against_torch():
    torch = pytest.importorskip("torch")
    x, t = np.random.default_rng(0).normal(size=(3, 4)), np.array([0, 1, 3])
    for sa, r in ((False, None), (None, False), (True, True)):
        with pytest.warns(UserWarning):
            ours = pf.nn.functional.nll_loss(pf.tensor(x), pf.tensor(t), size_average=sa, reduce=r)
        theirs = torch.nn.functional.nll_loss(torch.tensor(x), torch.tensor(t), size_average=sa, reduce=r)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy())


def test_fill_depends_on_input_with_zero_gradient_and_zero_is_a_function():
    x = pf.ones(3, requires_grad=True)
    y = pf.fill(x, 2.0)
    assert y.tolist() == [2.0] * 3 and y.requires_grad
    y.sum().backward()
    assert x.grad.tolist() == [0.0] * 3
    v = pf.tensor(3.0, requires_grad=True)
    w = pf.fill(pf.ones(2), v)
    (w * pf.tensor([1.0, 2.0])).sum().backward()
    assert w.tolist() == [3.0, 3.0] and v.grad.item() == 3.0
    with pytest.raises(RuntimeError, match="0-d value"):
        pf.fill(pf.ones(2), pf.ones(2))
    z = pf.ones(2, 2)
    assert pf.zero_(z) is z and z.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_top_level_forms_of_methods():
    x = pf.tensor([-1.0, 0.5, 3.0])
    assert pf.clamp_(x, 0, 2) is x and x.tolist() == [0.0, 0.5, 2.0]
    assert pf.fill_(pf.zeros(2), 7).tolist() == [7.0, 7.0] and pf.negative_(pf.ones(1)).tolist() == [-1.0]
    assert pf.is_same_size(x, pf.ones(3)) and pf.is_signed(x) and not pf.is_conj(x) and pf.get_device(x) == -1
    assert pf.matrix_power(pf.eye(2) * 2, 3).tolist() == [[8.0, 0.0], [0.0, 8.0]]
    v = pf.tensor([1.0, 2.0, 3.0])
    assert pf.vander(v).tolist() == [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    assert pf.vander(v, 2, increasing=True).tolist() == [[1, 1], [1, 2], [1, 3]]
    a, b, c = pf.randn(2, 3, dtype=pf.float64), pf.randn(3, 4, dtype=pf.float64), pf.randn(4, 2, dtype=pf.float64)
    assert pf.allclose(pf.chain_matmul(a, b, c), a @ b @ c)
    pf.set_warn_always(True)
    assert pf.is_warn_always_enabled()
    pf.set_warn_always(False)
