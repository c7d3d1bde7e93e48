"""The ops' lean paths (contiguous inputs, one C call, no descriptors) against torch and
against the general strided path they bypass: same values, same errors."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe

torch = pytest.importorskip("torch")


def _pair(shape, seed=0):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return pyframe.tensor(a), torch.tensor(a)


@pytest.mark.parametrize(
    ("shapes", "dim"),
    [
        ([(40, 50), (40, 50)], 0),
        ([(4, 5), (4, 3), (4, 0), (4, 7)], 1),
        ([(2, 3, 4), (2, 1, 4)], 1),
        ([(2, 3, 4), (2, 3, 1)], -1),
        ([(0,), (3,)], 0),
        ([(2, 0, 3), (2, 0, 3)], 2),
        ([(2, 5), (3, 5)], 0),
        ([(3,), (4,)], 0),
        ([(1, 2, 3), (0, 2, 3)], 0),
    ],
)
def test_cat_of_contiguous_inputs_matches_torch(shapes, dim):
    pf_parts, t_parts = zip(*(_pair(s, i) for i, s in enumerate(shapes)), strict=True)
    got = pyframe.cat(list(pf_parts), dim)
    assert tuple(got.shape) == tuple(torch.cat(t_parts, dim).shape)
    np.testing.assert_array_equal(got.numpy(), torch.cat(t_parts, dim).numpy())
    # a transposed input takes the general path: same result
    if len(shapes[0]) == 2 and shapes[0][0] == shapes[0][1]:
        return
    strided = [p.transpose(0, -1).contiguous().transpose(0, -1) for p in pf_parts]
    np.testing.assert_array_equal(pyframe.cat(strided, dim).numpy(), got.numpy())


def test_cat_lean_path_keeps_checks_and_gradients():
    a, b = pyframe.randn(2, 3), pyframe.randn(3, 3)
    with pytest.raises(RuntimeError, match="sizes of tensors must match"):
        pyframe.cat([a, b], 1)
    with pytest.raises(TypeError, match="expected Tensors"):
        pyframe.cat((a, 1.0))
    w = pyframe.randn(2, 3, requires_grad=True)
    out = pyframe.cat([a, w], 0)
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.ones((2, 3), np.float32))
    mixed = pyframe.cat([a, a.double()], 0)
    assert mixed.dtype == pyframe.float64
    with pyframe.no_grad():  # two inputs joined inline: no graph under no_grad, one with grad
        assert not pyframe.cat((a, w), 0).requires_grad
    assert pyframe.cat((a, w), 0).grad_fn is not None
    with pytest.raises(RuntimeError, match="sizes of tensors must match"):
        pyframe.cat((a, pyframe.randn(2, 4)), 0)


@pytest.mark.parametrize("shape", [(40, 50), (3, 1), (2, 7), (5, 300), (1, 2000), (2, 3, 17)])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_rows_match_torch(shape, log):
    x, tx = _pair(shape)
    x[0, ..., 0] = float("nan")
    tx[0, ..., 0] = float("nan")
    if shape[0] > 1:
        x[1] = float("-inf")
        tx[1] = float("-inf")
    f = "log_softmax" if log else "softmax"
    got, want = getattr(x, f)(-1).numpy(), getattr(tx, f)(-1).numpy()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None, -1, 1])
def test_sum_and_mean_lean_paths_match_torch(dim, keepdim):
    x, tx = _pair((6, 33))
    for name in ("sum", "mean"):
        kw = {} if dim is None and not keepdim else {"dim": dim, "keepdim": keepdim}
        if dim is None and keepdim:
            kw = {"dim": None, "keepdim": True}
        got, want = getattr(x, name)(**kw), getattr(tx, name)(**kw)
        assert tuple(got.shape) == tuple(want.shape), (name, kw)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_reshape_cache_refuses_what_torch_refuses():
    x = pyframe.randn(40, 50)
    assert tuple(x.reshape(40, 50).shape) == (40, 50)  # (40, 50) is a known shape now
    with pytest.raises(TypeError):
        x.reshape(40.0, 50)
    with pytest.raises(TypeError):
        x.reshape(True, 2000)
    assert tuple(x.reshape(-1, 50).shape) == (40, 50)
    assert tuple(x.reshape((2000,)).shape) == (2000,)
    with pytest.raises(RuntimeError, match="invalid for input"):
        x.reshape(41, 50)


@pytest.mark.parametrize("n", [0, 1, 5, 17, 2000])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dot_of_vectors_is_the_double_sum_of_products(n, dtype):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    got = pyframe.tensor(a) @ pyframe.tensor(b)
    assert got.shape == () and got.dtype == getattr(pyframe, dtype)
    want = np.float64(a.astype(np.float64) @ b.astype(np.float64)).astype(dtype)
    np.testing.assert_allclose(got.item(), want, rtol=1e-6)
    np.testing.assert_allclose(got.item(), (torch.tensor(a) @ torch.tensor(b)).item(), rtol=1e-4, atol=1e-4)
    m = pyframe.tensor(np.stack([a, b], 1))  # strided columns
    np.testing.assert_allclose((m[:, 0] @ m[:, 1]).item(), got.item(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        pyframe.tensor(a) @ pyframe.randn(n + 1, dtype=got.dtype)


def test_index_select_rows_match_numpy_and_check_bounds():
    x = pyframe.randn(5, 3, 2)
    idx = pyframe.tensor([4, -1, 0, 4])
    np.testing.assert_array_equal(x[idx].numpy(), x.numpy()[[4, -1, 0, 4]])
    np.testing.assert_array_equal(pyframe.index_select(x, 0, idx).numpy(), x.numpy()[[4, -1, 0, 4]])
    for bad in (5, -6):
        with pytest.raises(IndexError, match="out of bounds"):
            x[pyframe.tensor([0, bad])]
    assert tuple(pyframe.randn(0, 3)[pyframe.tensor([], dtype=pyframe.int64)].shape) == (0, 3)
    w = pyframe.randn(5, 3, requires_grad=True)
    w[idx].sum().backward()
    np.testing.assert_array_equal(w.grad.numpy()[:, 0], [1, 0, 0, 0, 3])


def test_lean_binary_recording_keeps_the_inplace_check_and_both_gradients():
    w = pyframe.randn(5, requires_grad=True)
    v = pyframe.randn(5, requires_grad=True)
    y = w * v
    assert "MulBackward0" in repr(y.grad_fn)
    y.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), v.detach().numpy())
    np.testing.assert_allclose(v.grad.numpy(), w.detach().numpy())
    x = pyframe.randn(5)
    z = w * x
    with pyframe.no_grad():
        x.add_(1.0)  # mul saved x: its backward must refuse the changed value
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
