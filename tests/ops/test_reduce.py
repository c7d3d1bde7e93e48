"""Reductions and softmax against NumPy over dims, keepdim, layouts and dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from tests._helpers import (
    DTYPES,
    FLOATS,
    INTS,
    NUMERIC,
    TOL,
    assert_matches,
    npy,
    pf,
    random_array,
)
from tests.ops_db import REDUCTIONS, Red, draw

# 3-d views of shape (2, 3, 4), or larger along the last dim
LAYOUTS = {
    "contiguous": ((2, 3, 4), lambda t: t),
    "strided": ((2, 6, 4), lambda t: t[:, ::2]),
    "transposed": ((4, 3, 2), lambda t: t.T),
    "expanded": (
        (1, 3, 4),
        lambda t: t.expand(2, 3, 4) if isinstance(t, pyframe.Tensor) else np.broadcast_to(t, (2, 3, 4)),
    ),  # fmt: skip
    "long": ((2, 3, 700), lambda t: t),
    "long_strided": (
        (3, 2, 1400),
        lambda t: t[:, :, 1::2].transpose(0, 1) if isinstance(t, pyframe.Tensor) else t[:, :, 1::2].swapaxes(0, 1),
    ),  # fmt: skip
}
DIMS = [None, 0, 1, 2, -1, -3, (0, 2), (-1, 0), (0, 1, 2), (1,), ()]


def _expected_dtype(red: Red, dtype: str) -> str:
    if red.result == "sum":
        return dtype if dtype in FLOATS else "int64"
    if red.result == "bool":
        return "bool"
    return dtype


def _axis(red: Red, dim):
    if dim == () and red.name not in ("any", "all"):
        return None  # torch: an empty dim list reduces every dim, except for any/all (none)
    return dim


CASES = [
    pytest.param(red, dt, layout, id=f"{red.name}-{dt}-{layout}")
    for red in REDUCTIONS
    for dt in red.dtypes
    for layout in LAYOUTS
]


@pytest.mark.filterwarnings("ignore:Degrees of freedom")
@pytest.mark.parametrize(("red", "dtype", "layout"), CASES)
def test_reduction_matches_numpy(red: Red, dtype: str, layout: str, rng):
    shape, view = LAYOUTS[layout]
    base = draw(rng, shape, dtype, red.domain)
    a, t = view(base), view(pf(base))
    out_dt = _expected_dtype(red, dtype)
    if out_dt in FLOATS:
        ref_in = a.astype(np.float64)
    elif out_dt == "int64" or (dtype in INTS and red.result == "same"):
        ref_in = a.astype(np.int64)
    else:
        ref_in = a
    for dim in DIMS:
        if red.name in ("logsumexp", "prod") and dim == ():
            continue  # torch rejects these
        for keepdim in (False, True):
            what = f"{red.name}({dtype}, {layout}, dim={dim}, keepdim={keepdim})"
            with np.errstate(all="ignore"):
                expected = np.asarray(red.ref(ref_in, _axis(red, dim), keepdim))
            got = red.fn(t, dim, keepdim)
            if out_dt in TOL:
                # summation error grows with the number and size of the terms
                scale = np.max(np.abs(ref_in)) * (a.size / max(expected.size, 1))
                atol = TOL[out_dt][0] * 4 * scale + TOL[out_dt][1]
                assert_matches(got, expected, out_dt, atol=atol, what=what)
            else:
                assert_matches(got, expected, out_dt, what=what)


# ---- max / min / argmax / argmin ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_max_min_argmax_argmin(dtype, layout, rng):
    shape, view = LAYOUTS[layout]
    base = rng.integers(-3, 4, size=shape).astype(DTYPES[dtype].np)  # many ties: the first index wins
    a, t = view(base), view(pf(base))
    assert_matches(t.max(), np.max(a), dtype, what="max()")
    assert_matches(pyframe.min(t), np.min(a), dtype, what="min()")
    assert_matches(t.argmax(), np.argmax(a), "int64", what="argmax()")
    assert_matches(t.argmin(), np.argmin(a), "int64", what="argmin()")
    for dim in (0, 1, 2, -1, -2):
        for keepdim in (False, True):
            what = f"dim={dim}, keepdim={keepdim}"
            for name, npval, nparg in (("max", np.max, np.argmax), ("min", np.min, np.argmin)):
                r = getattr(t, name)(dim, keepdim)
                assert isinstance(r, tuple) and len(r) == 2
                values, indices = r
                assert values is r.values and indices is r.indices and r[0] is values
                exp_idx = nparg(a, axis=dim, keepdims=keepdim)
                assert_matches(values, npval(a, axis=dim, keepdims=keepdim), dtype, what=f"{name} values {what}")
                assert_matches(indices, exp_idx, "int64", what=f"{name} indices {what}")
                r2 = getattr(pyframe, name)(t, dim=dim, keepdim=keepdim)
                np.testing.assert_array_equal(npy(r2.indices), exp_idx)
            assert_matches(t.argmax(dim, keepdim), np.argmax(a, axis=dim, keepdims=keepdim), "int64", what=what)
            assert_matches(pyframe.argmin(t, dim=dim, keepdim=keepdim), np.argmin(a, axis=dim, keepdims=keepdim),
                           "int64", what=what)  # fmt: skip


def test_max_result_is_a_named_tuple_like_torch():
    r = pyframe.tensor([[1.0, 5.0], [7.0, 2.0]]).max(dim=1)
    assert r._fields == ("values", "indices")
    assert r.values.tolist() == [5.0, 7.0]
    assert r.indices.tolist() == [1, 0]
    assert r.indices.dtype == pyframe.int64
    assert "values=" in repr(r) and "indices=" in repr(r)


def test_max_of_two_tensors_is_maximum():
    a = pyframe.tensor([1.0, 5.0])
    b = pyframe.tensor([3.0, 2.0])
    assert pyframe.max(a, b).tolist() == [3.0, 5.0]
    assert pyframe.min(a, b).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("dtype", FLOATS)
def test_max_min_propagate_nan(dtype):
    x = pyframe.tensor([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], dtype=dtype)
    assert np.isnan(x.max().item()) and np.isnan(x.min().item())
    v, i = x.max(1)
    assert np.isnan(v[0].item()) and v[1].item() == 6.0
    assert i.tolist() == [1, 2]
    assert x.argmax().item() == 1 and x.argmin().item() == 1
    assert np.isnan(x.amax(1)[0].item())
    assert np.isnan(x.sum().item())


def test_max_bool():
    x = pyframe.tensor([[False, True], [False, False]])
    assert x.max().item() is True
    assert x.amax(1).tolist() == [True, False]
    assert x.amin(0).tolist() == [False, False]


# ---- dtypes, 0-d and empty inputs ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", INTS + ("bool",))
def test_integer_sum_and_prod_are_int64(dtype):
    x = pyframe.ones(3, 4, dtype=dtype)
    assert x.sum().dtype == pyframe.int64
    assert x.sum(1).dtype == pyframe.int64
    assert x.prod().dtype == pyframe.int64
    assert x.sum().item() == 12
    assert x.sum(0).tolist() == [3, 3, 3, 3]


def test_int32_sum_does_not_overflow():
    x = pyframe.full((4,), 2**30, dtype=pyframe.int32)
    assert x.sum().item() == 2**32


def test_sum_dtype_argument():
    x = pyframe.tensor([1, 2, 3])
    s = x.sum(dtype=pyframe.float64)
    assert s.dtype == pyframe.float64 and s.item() == 6.0
    h = pyframe.full((3000,), 1.0, dtype=pyframe.float16)
    assert h.sum().item() == 3000.0  # float16 accumulates in float32, as torch
    assert h.sum().dtype == pyframe.float16


@pytest.mark.parametrize("dtype", INTS + ("bool",))
def test_mean_var_std_norm_of_integers_raise(dtype):
    x = pyframe.ones(3, dtype=dtype)
    for fn in (pyframe.mean, pyframe.var, pyframe.std, pyframe.norm):
        with pytest.raises((TypeError, RuntimeError), match=f"(?i)floating.*{DTYPES[dtype].name}|dtype"):
            fn(x)
    assert x.mean(dtype=pyframe.float32).item() == 1.0


def test_zero_d_reductions():
    x = pyframe.tensor(2.5)
    for dim in (None, 0, -1):
        assert x.sum(dim).item() == 2.5 and x.sum(dim).shape == ()
        assert x.mean(dim).item() == 2.5
    assert x.max().item() == 2.5
    v, i = x.max(0)
    assert v.item() == 2.5 and i.item() == 0 and v.shape == () and i.shape == ()
    assert x.argmax().item() == 0
    assert x.sum(0, keepdim=True).shape == ()
    assert pyframe.softmax(x, 0).item() == 1.0
    with pytest.raises(IndexError, match="range"):
        x.sum(1)


def test_empty_reductions():
    x = pyframe.zeros(0, 3)
    assert x.sum().item() == 0.0
    assert x.sum(0).tolist() == [0.0, 0.0, 0.0]
    assert x.prod(0).tolist() == [1.0, 1.0, 1.0]
    assert x.any().item() is False and x.all().item() is True
    assert np.isnan(x.mean().item())
    assert x.sum(1).shape == (0,)
    assert x.max(1).values.shape == (0,)
    with pytest.raises((IndexError, RuntimeError), match="max"):
        x.max(0)
    with pytest.raises((IndexError, RuntimeError), match="numel|empty|zero"):
        x.max()
    with pytest.raises((IndexError, RuntimeError), match="argmax"):
        x.argmax()


def test_var_of_single_element_is_nan_and_biased_is_zero():
    x = pyframe.tensor([3.0])
    assert np.isnan(x.var().item())
    assert x.var(unbiased=False).item() == 0.0


def test_repeated_dim_raises():
    x = pyframe.ones(2, 3)
    with pytest.raises(RuntimeError, match="multiple times"):
        x.sum((0, -2))
    with pytest.raises(IndexError, match=r"range of \[-2, 1\].*2"):
        x.sum(2)


def test_sum_is_accurate_for_many_small_terms():
    x = pyframe.full((1_000_000,), 0.1)
    np.testing.assert_allclose(x.sum().item(), 100_000.0, rtol=1e-5)
    np.testing.assert_allclose(x.mean().item(), 0.1, rtol=1e-5)
    np.testing.assert_allclose(pyframe.full((1000, 1000), 0.1).sum(0).numpy(), 100.0, rtol=1e-5)


def test_var_is_stable_with_a_large_offset():
    rng = np.random.default_rng(0)
    a = (1e4 + rng.standard_normal(100_000)).astype(np.float32)
    np.testing.assert_allclose(pf(a).var().item(), np.var(a.astype(np.float64), ddof=1), rtol=1e-3)


# ---- softmax / log_softmax -------------------------------------------------------------------------------


def _np_softmax(a, axis):
    e = np.exp(a - np.max(a, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_softmax_log_softmax(dtype, layout, rng):
    shape, view = LAYOUTS[layout]
    base = random_array(rng, shape, dtype) * 3
    a, t = view(base).astype(np.float64), view(pf(base))
    for dim in (0, 1, 2, -1, -2):
        sm = _np_softmax(a, dim)
        assert_matches(pyframe.softmax(t, dim), sm, dtype, atol=TOL[dtype][1] * 2, what=f"softmax dim={dim}")
        assert_matches(t.log_softmax(dim), np.log(sm), dtype, atol=TOL[dtype][0] * 10, what=f"log_softmax {dim}")
        assert_matches(t.softmax(dim=dim), sm, dtype, atol=TOL[dtype][1] * 2, what=f"Tensor.softmax dim={dim}")


def test_softmax_extreme_values_and_dtype_argument():
    x = pyframe.tensor([[1000.0, 0.0, -1000.0], [-np.inf, 0.0, 0.0]])
    np.testing.assert_allclose(npy(pyframe.softmax(x, 1)), [[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]], atol=1e-7)
    np.testing.assert_allclose(npy(pyframe.log_softmax(x, 1)), [[0.0, -1000.0, -2000.0], [-np.inf, -np.log(2),
                               -np.log(2)]], rtol=1e-6)  # fmt: skip
    i = pyframe.tensor([1, 2, 3])
    out = pyframe.softmax(i, 0, dtype=pyframe.float64)
    assert out.dtype == pyframe.float64
    np.testing.assert_allclose(npy(out), _np_softmax(np.array([1.0, 2, 3]), 0), rtol=1e-12)
    with pytest.raises((TypeError, RuntimeError), match="int64"):
        pyframe.softmax(i, 0)


def test_softmax_on_empty_and_size_one_dims():
    assert pyframe.softmax(pyframe.zeros(0, 3), 1).shape == (0, 3)
    assert pyframe.softmax(pyframe.zeros(2, 1), 1).tolist() == [[1.0], [1.0]]
    assert pyframe.log_softmax(pyframe.zeros(2, 1), 1).tolist() == [[0.0], [0.0]]


def test_logsumexp_handles_infinities():
    x = pyframe.tensor([[-np.inf, -np.inf], [np.inf, 1.0], [1000.0, 1000.0]])
    got = npy(pyframe.logsumexp(x, 1))
    assert got[0] == -np.inf and got[1] == np.inf
    np.testing.assert_allclose(got[2], 1000.0 + np.log(2), rtol=1e-6)


def test_argmax_argmin_keepdim_without_dim_keeps_every_dim():
    x = pyframe.tensor([[1.0, 9.0, 3.0], [4.0, 0.0, 6.0]])
    assert x.argmax(keepdim=True).shape == (1, 1) and x.argmax(keepdim=True).item() == 1
    assert pyframe.argmin(x, keepdim=True).shape == (1, 1) and x.argmin().item() == 4


def test_max_min_results_print_like_torch_return_types():
    x = pyframe.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert repr(x.max(0, keepdim=True)) == (
        "pyframe.return_types.max(\nvalues=tensor([[3., 4.]]),\nindices=tensor([[1, 1]]))"
    )
    assert repr(x.min(dim=-1)) == "pyframe.return_types.min(\nvalues=tensor([1., 3.]),\nindices=tensor([0, 0]))"


def _pair(shape, seed=0):
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return pyframe.tensor(a), torch.tensor(a)


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


@pytest.mark.parametrize("shape", [(700, 2000), (3, 1), (2, 7), (5, 300), (2, 3, 17), (4, 0)])
@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_backward_rows_match_torch(shape, log, dtype):
    """The one-pass C gradient of contiguous rows (softmax and log_softmax, float32 and float64), against torch's;
    a strided gradient and a softmax over an inner dim take the composition, and double backward too."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    a, g = rng.standard_normal(shape) * 4, rng.standard_normal(shape)
    f = "log_softmax" if log else "softmax"
    # torch sums a float32 row in float32 (pyframe in double): g - exp(y) sum(g) cancels to that sum's error
    tol = {"rtol": 1e-5, "atol": 2e-5} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-13}
    x, tx = pyframe.tensor(a.astype(dtype), requires_grad=True), torch.tensor(a.astype(dtype), requires_grad=True)
    getattr(x, f)(-1).backward(pyframe.tensor(g.astype(dtype)))
    getattr(tx, f)(-1).backward(torch.tensor(g.astype(dtype)))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), **tol)
    if len(shape) == 3:  # over dim 1 (not the rows' dim), and a transposed gradient
        x.grad = tx.grad = None
        getattr(x, f)(1).backward(pyframe.tensor(g.astype(dtype)))
        getattr(tx, f)(1).backward(torch.tensor(g.astype(dtype)))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), **tol)
        x.grad = tx.grad = None
        gt = g.astype(dtype).transpose(1, 0, 2).copy()
        getattr(x, f)(-1).backward(pyframe.tensor(gt).transpose(0, 1))
        getattr(tx, f)(-1).backward(torch.tensor(gt).transpose(0, 1))
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), **tol)
    if shape == (5, 300) and dtype == "float64":  # create_graph: the gradient is itself differentiable
        (gx,) = pyframe.autograd.grad(getattr(x, f)(-1).pow(2).sum(), x, create_graph=True)
        (tgx,) = torch.autograd.grad(getattr(tx, f)(-1).pow(2).sum(), tx, create_graph=True)
        (gg,) = pyframe.autograd.grad(gx.sin().sum(), x)
        (tgg,) = torch.autograd.grad(tgx.sin().sum(), tx)
        np.testing.assert_allclose(gg.numpy(), tgg.numpy(), rtol=1e-8, atol=1e-9)  # through cancelling terms


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


def test_float16_std_var_norm_round_once():
    torch = pytest.importorskip("torch")
    for values in ([60000.0, 0.0], [1.0, 2.0, 4.0], [30000.0, -30000.0, 100.0]):
        x, tx = pyframe.tensor(values, dtype=pyframe.float16), torch.tensor(values, dtype=torch.float16)
        assert x.std().item() == tx.std().item()
        assert x.var().item() == tx.var().item()
    assert pyframe.tensor([60000.0, 0.0], dtype=pyframe.float16).std().item() == 42432.0
    big = [3e38, 0.0, 0.0, 0.0, 0.0]  # found by the fuzzer: the float32 variance overflows, the std does not
    assert pyframe.tensor(big).std().item() == torch.tensor(big).std().item()
    assert pyframe.tensor([300.0, 400.0], dtype=pyframe.float16).norm().item() == 500.0


def test_zero_norm_counts_nonzeros_with_a_zero_gradient():
    x = pyframe.tensor([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0]], requires_grad=True)
    y = pyframe.norm(x, 0, dim=-1)
    assert y.tolist() == [2.0, 1.0] and y.requires_grad  # a function of x, as torch's
    y.sum().backward()
    assert x.grad.tolist() == [[0.0] * 3] * 2
    d = pyframe.cdist(x.unsqueeze(0), x.unsqueeze(0) + 1.0, p=0.0)
    assert d.requires_grad and d.shape == (1, 2, 2)
    assert pyframe.pdist(pyframe.ones(1, 3, requires_grad=True)).requires_grad  # empty, still a function of it


def test_two_norm_of_a_whole_tensor_outside_autograd():
    # one pass of pf_dot (clip_grad_norm_'s norms): the same value as the squares-and-sum path, for float32 and
    # float64, empty, 0-d, strided (the general path) and beyond float32's squares (computed again in float64)
    rng = np.random.default_rng(0)
    for dt in (pyframe.float32, pyframe.float64):
        a = rng.normal(size=(300, 70))
        x = pyframe.tensor(a, dtype=dt)
        want = np.linalg.norm(a.astype(np.float32 if dt is pyframe.float32 else np.float64).astype(np.float64))
        for got in (x.norm(), x.norm(2), x.t().norm(), x.norm("fro")):
            assert got.dtype is dt and got.shape == ()
            np.testing.assert_allclose(got.item(), want, rtol=1e-6)
        with pyframe.no_grad():
            assert x.clone().requires_grad_().norm().item() == x.norm().item()
        assert pyframe.zeros(0, dtype=dt).norm().item() == 0.0
        assert pyframe.tensor(-3.0, dtype=dt).norm().item() == 3.0
    assert pyframe.tensor([3e20, 4e20]).norm().item() == pytest.approx(5e20, rel=1e-6)
    assert np.isnan(pyframe.tensor([1.0, float("nan")]).norm().item())
    assert pyframe.tensor([1.0, float("inf")]).norm().item() == float("inf")
    y = pyframe.tensor([3.0, 4.0], requires_grad=True)  # with a gradient: the differentiable path
    n = y.norm()
    n.backward()
    assert n.item() == 5.0 and y.grad.tolist() == pytest.approx([0.6, 0.8])
