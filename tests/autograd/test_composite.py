"""Composite expressions against torch: forward values and gradients of every input, including broadcasting,
non-contiguous inputs (transposed, sliced with steps, expanded) and in-place ops on non-leaves.

Each expression is written once as ``fn(m, *tensors)``, where ``m`` is the ``pyframe`` or the ``torch`` module,
so both libraries run the same code."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe

torch = pytest.importorskip("torch")


def _both(arrays, dtype: str):
    """Leaves requiring grad holding the same values in pyframe and in torch."""
    p = [pyframe.tensor(np.array(a, dtype=dtype, order="C"), requires_grad=True) for a in arrays]
    t = [torch.tensor(np.array(a, dtype=dtype), requires_grad=True) for a in arrays]
    return p, t


def _check(fn, arrays, dtype="float64", seed=None):
    tol = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=2e-5, atol=2e-5)}[dtype]
    p_in, t_in = _both(arrays, dtype)
    p_out, t_out = fn(pyframe, *p_in), fn(torch, *t_in)
    np.testing.assert_allclose(p_out.detach().numpy(), t_out.detach().numpy(), **tol, err_msg="forward")
    if seed is None:
        seed = np.random.default_rng(7).uniform(-1, 1, tuple(t_out.shape))
    p_out.backward(pyframe.tensor(np.array(seed, dtype=dtype)))
    t_out.backward(torch.tensor(np.array(seed, dtype=dtype)))
    for i, (p, t) in enumerate(zip(p_in, t_in, strict=True)):
        if t.grad is None:
            assert p.grad is None or not np.any(p.grad.numpy()), f"input {i}: torch has no gradient"
            continue
        assert p.grad is not None, f"input {i}: no gradient"
        assert p.grad.dtype == p.dtype and p.grad.shape == p.shape
        np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), **tol, err_msg=f"gradient of input {i}")


def _mlp(m, x, w1, b1, w2):
    h = (x @ w1 + b1).tanh()
    return m.log_softmax(h @ w2, -1)


def _layer_norm(m, x, g, b):
    mu = x.mean(-1, keepdim=True)
    var = ((x - mu) ** 2).mean(-1, keepdim=True)
    return (x - mu) / (var + 1e-5).sqrt() * g + b


def _attention(m, q, k, v):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    return m.softmax(s, dim=-1) @ v


def _noncontig(m, a, b):
    at = a.T  # (4, 3) transposed
    bs = b[:, ::2]  # (4, 3) every other column
    return (at * bs).sigmoid() + at.exp() / (1 + bs**2)


def _expand(m, a, b):
    return (a.expand(3, 4) * b).sum(0) + a.squeeze(1).unsqueeze(0).expand(2, 3).prod(0).sum()


def _permute_matmul(m, a, b):
    return m.matmul(a.permute(2, 0, 1), b.transpose(0, 1)).relu()


def _reductions(m, x):
    return (
        x.max(dim=1).values.sum() + x.amin(0).mean() + x.var(1).sum() + x.std() + x.norm() + x.logsumexp(1).sum()
        + x.prod(1).sum() + x.abs().norm(p=1)
    ).reshape(1)  # fmt: skip


def _indexing(m, x, v):
    y = x * 2
    y[1:, 1] = v
    return y[[0, 2, 2]] + y[:, [3, 0, 0, 1]] * x[x > 0.0].sum() + y.t()[m.tensor([[1], [0]]), m.tensor([2, 0])].sum()


def _inplace(m, x, w):
    y = x * 2
    y.mul_(w)
    y.add_(x)
    y.div_(3.0)
    y = y.exp() + 1
    y.sub_(w.sum())
    return y.clamp(-1.0, 40.0)


def _scatter(m, x, src):
    idx = m.tensor([[0, 1, 2, 0], [2, 2, 1, 0]])
    g = x.gather(1, idx[:, :3]).sum() + x.index_select(0, m.tensor([1, 1, 0])).sum(0)
    return m.scatter_add(x, 0, idx[:, :4], src) * g


def _where_max(m, a, b):
    return m.where(a > b, a * b, m.maximum(a, b) - m.minimum(a, b * 0.5)) + m.atan2(a, b + 3)


def _cat_stack(m, a, b):
    s = m.stack([a, b], 1)  # (2, 2, 3)
    c = m.cat([s, s * a.unsqueeze(1)], 2)
    return c.split(2, -1)[1] * c.chunk(3, -1)[0]


def _softmax_temperature(m, x, t):
    return (x / t).softmax(-2) * (x / t).log_softmax(1)


def _pow_mixed(m, a, b):
    return a**b + 2.0**b + a**3 + (a.abs() + 1) ** -0.5


def _unbind_narrow(m, x):
    rows = x.unbind(0)
    return rows[0] * rows[2] + x.narrow(0, 1, 2).sum(0) + x.select(1, 0)[-1]


def _setitem_accumulated(m, x, v):
    y = m.zeros(3, 4, dtype=x.dtype)
    y[0] = v
    y[1:] = x[1:] * v
    return y * x


def _triu_mask(m, x):
    return x.triu(1) + x.tril(-1) * 2 + x.masked_fill(x < 0, 0.5).exp()


CASES = [
    ("mlp", _mlp, [(4, 5), (5, 6), (6,), (6, 3)]),
    ("layer_norm", _layer_norm, [(2, 3, 5), (5,), (5,)]),
    ("attention", _attention, [(2, 3, 4), (2, 5, 4), (2, 5, 3)]),
    ("noncontiguous", _noncontig, [(3, 4), (4, 6)]),
    ("expand", _expand, [(3, 1), (3, 4)]),
    ("permute_matmul", _permute_matmul, [(3, 4, 2), (4, 2, 5)]),
    ("reductions", _reductions, [(3, 4)]),
    ("indexing", _indexing, [(3, 4), (2,)]),
    ("inplace", _inplace, [(3, 4), (4,)]),
    ("scatter_gather", _scatter, [(3, 4), (2, 4)]),
    ("where_max", _where_max, [(3, 4), (3, 4)]),
    ("cat_stack", _cat_stack, [(2, 3), (2, 3)]),
    ("softmax_temperature", _softmax_temperature, [(2, 3, 4), (3, 1)]),
    ("pow_mixed", _pow_mixed, [(3, 4), (4,)]),
    ("unbind_narrow", _unbind_narrow, [(3, 4)]),
    ("setitem", _setitem_accumulated, [(3, 4), (4,)]),
    ("triu_mask", _triu_mask, [(4, 4)]),
]


def _arrays(shapes, rng, name):
    arrays = [rng.uniform(-1.5, 1.5, s) for s in shapes]
    if name == "pow_mixed":
        arrays[0] = rng.uniform(0.5, 2.0, shapes[0])
    if name == "softmax_temperature":
        arrays[1] = rng.uniform(0.5, 2.0, shapes[1])
    if name == "reductions":  # distinct values: max/amin/norm(inf) have no ties; nothing near 0 for abs
        arrays[0] = (rng.permutation(12).reshape(3, 4) - 5.5) * 0.3
    return arrays


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name, fn, shapes", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, fn, shapes, dtype, rng):
    _check(fn, _arrays(shapes, rng, name), dtype)


def test_non_contiguous_leaves_match_torch(rng):
    """Leaves that are themselves strided views (not just views made inside the expression)."""
    base = rng.uniform(-1, 1, (4, 6))
    p_leaf = pyframe.tensor(base, requires_grad=True)
    t_leaf = torch.tensor(base, requires_grad=True)
    outs = []
    for m, leaf in ((pyframe, p_leaf), (torch, t_leaf)):
        a = leaf.t()[::2]  # (3, 4), strides (1, 6*2)
        b = leaf[1:, 1::2]  # (3, 3)
        outs.append(((a[:, :3] * b).sum(0) @ b + m.matmul(a.t(), a).sum(1)[:3]).sum())
    np.testing.assert_allclose(outs[0].item(), outs[1].item(), rtol=1e-12)
    outs[0].backward()
    outs[1].backward()
    np.testing.assert_allclose(p_leaf.grad.numpy(), t_leaf.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_second_derivatives_match_torch(rng):
    a = rng.uniform(0.5, 1.5, (3, 4))
    p, t = _both([a], "float64")
    grads = []
    for m, x in ((pyframe, p[0]), (torch, t[0])):
        y = (x.sin() * x.exp() + (x**3).sum(1, keepdim=True) * x.softmax(-1)).sum()
        (g,) = m.autograd.grad(y, x, create_graph=True)
        (gg,) = m.autograd.grad((g * g).sum(), x)
        grads.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-10)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-10)


@pytest.mark.parametrize("expr", ["slice", "matmul", "index", "expand", "softmax", "max_dim", "where"])
def test_second_derivatives_through_views_and_indexing_match_torch(expr, rng):
    a = rng.uniform(0.5, 1.5, (3, 4))
    p, t = _both([a], "float64")
    results = []
    for m, x in ((pyframe, p[0]), (torch, t[0])):
        y = {
            "slice": lambda x: (x[1:, ::2] ** 3).sum(),
            "matmul": lambda x: ((x @ x.T) ** 2).sum(),
            "index": lambda x: (x[[0, 2, 2]] ** 3).sum(),
            "expand": lambda x: (x[:, :1].expand(3, 4) ** 3 * x).sum(),
            "softmax": lambda x: (x.softmax(1) * x).sum(),
            "max_dim": lambda x: (x.max(1).values ** 3).sum(),
            "where": lambda x, m=m: m.where(x > 1.0, x**3, x**2).sum(),
        }[expr](x)
        (g,) = m.autograd.grad(y, x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        results.append(gg.numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10, atol=1e-12)


def test_mixed_dtype_operands_get_gradients_like_torch(rng):
    """A float32 leaf meeting a float64 one promotes; the float32 leaf still gets a float32 gradient."""
    a, b = rng.uniform(0.5, 1.5, (2, 3)), rng.uniform(0.5, 1.5, (2, 3))
    results = []
    for m in (pyframe, torch):
        x = m.tensor(a.astype(np.float32), requires_grad=True)
        y = m.tensor(b, requires_grad=True)
        out = (x * y + x**y + y**x + m.where(x > 1, x, y) + x / y).sum()
        out.backward()
        results.append((out.item(), x.grad, y.grad))
    (po, px, py), (to, tx, ty) = results
    assert px.dtype == pyframe.float32 and py.dtype == pyframe.float64
    np.testing.assert_allclose(po, to, rtol=1e-6)
    np.testing.assert_allclose(px.numpy(), tx.numpy(), rtol=1e-5)
    np.testing.assert_allclose(py.numpy(), ty.numpy(), rtol=1e-5)


def test_mixed_dtype_matmul_gets_gradients():
    """torch refuses float32 @ float64; pyframe promotes, and both operands still get gradients."""
    x = pyframe.ones(2, 3, requires_grad=True)
    w = pyframe.full((3, 2), 0.5, dtype=pyframe.float64, requires_grad=True)
    (x @ w).sum().backward()
    assert x.grad.dtype == pyframe.float32 and x.grad.tolist() == [[1.0] * 3] * 2
    assert w.grad.dtype == pyframe.float64 and w.grad.tolist() == [[2.0, 2.0]] * 3


def test_float16_leaf_gets_float16_gradient():
    x = pyframe.tensor([0.5, 1.0, 2.0], dtype=pyframe.float16, requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.dtype == pyframe.float16
    assert x.grad.tolist() == [1.0, 2.0, 4.0]


@pytest.mark.parametrize(
    "expr",
    [
        lambda m, x: x.norm(),  # the norm of a zero vector: gradient 0, not nan
        lambda m, x: x.norm(dim=1).sum(),
        lambda m, x: (x + 1).std(),  # the std of a constant
        lambda m, x: (x + 1).std(0).sum(),
        lambda m, x: (x**0).sum(),  # 0 ** 0
        lambda m, x: (x**0.0 * 3 + x**1.0).sum(),
        lambda m, x: x.abs().sum() + x.relu().sum() + x.clamp(0, 1).sum(),
        lambda m, x: m.maximum(x, m.zeros_like(x)).sum() + x.amax() + x.max(),  # ties split the gradient
    ],
)
def test_gradients_at_kinks_match_torch(expr):
    zeros = np.zeros((2, 3))
    p, t = _both([zeros], "float64")
    expr(pyframe, p[0]).backward()
    expr(torch, t[0]).backward()
    np.testing.assert_allclose(p[0].grad.numpy(), t[0].grad.numpy(), equal_nan=False)


def test_retain_grad_sees_the_hooked_gradient_like_torch():
    results = []
    for m in (pyframe, torch):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: g * 3)
        y.sum().backward()
        results.append((y.grad.tolist(), x.grad.tolist()))
    assert results[0] == results[1] == ([3.0, 3.0], [6.0, 6.0])


def test_masked_fill_with_a_value_requiring_grad_like_torch():
    results = []
    for m in (pyframe, torch):
        v = m.tensor(3.0, dtype=m.float64, requires_grad=True)
        x = m.ones(3, dtype=m.float64, requires_grad=True)
        out = x.masked_fill(m.tensor([True, False, True]), v * 2)
        (out * m.tensor([1.0, 2.0, 3.0], dtype=m.float64)).sum().backward()
        results.append((out.tolist(), v.grad.item(), x.grad.tolist()))
    assert results[0] == results[1]


@pytest.mark.parametrize("dim", [None, 0, 1, 2])
def test_prod_gradient_at_zeros_like_torch(dim):
    """At a zero input y / x is 0 / 0: the gradient is the product of the other elements
    (one zero in a slice), or 0 (two or more), as torch; also through create_graph."""
    x = np.random.default_rng(3).uniform(0.5, 1.5, (3, 4, 5))
    x[1, 2, 3] = 0  # one zero in its slices
    x[0, 1, :2] = 0  # two zeros along dim 2
    x[2, :, 4] = 0  # a zero in every row along dim 1
    grads = []
    for m in (pyframe, torch):
        leaf = m.tensor(x, requires_grad=True)
        y = leaf.prod() if dim is None else leaf.prod(dim)
        (g,) = m.autograd.grad((y * m.tensor(np.linspace(1, 2, y.numel()).reshape(tuple(y.shape)))).sum(), leaf,
                               create_graph=True)  # fmt: skip
        (g * g).sum().backward()
        grads.append((g.detach().numpy(), leaf.grad.numpy()))
    for got, want in zip(grads[0], grads[1], strict=True):
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("how", ["split2", "sections", "chunk", "one_piece"])
def test_split_is_one_node_whose_gradient_is_a_cat_like_torch(how):
    """Pieces without a gradient contribute zeros; a piece used twice adds up."""
    x = np.random.default_rng(5).standard_normal((3, 6, 4))
    results = []
    for m in (pyframe, torch):
        leaf = m.tensor(x, requires_grad=True)
        h = leaf * 1.5
        args = {"split2": (2, 1), "sections": ([1, 0, 5], 1), "chunk": None, "one_piece": (6, 1)}[how]
        pieces = h.chunk(4, -1) if args is None else h.split(*args)
        loss = (pieces[0] * pieces[0]).sum() + pieces[-1].sin().sum() + pieces[-1].sum()
        loss.backward()
        results.append((leaf.grad.numpy(), type(pieces[0].grad_fn).__name__ if m is torch else pieces[0].grad_fn.name))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12)
    if how == "split2":
        assert results[0][1] == results[1][1] == "SplitBackward0"


def test_prod_gradient_with_a_zero_beside_inf_and_nan_like_torch():
    """The exclusive products start from ones, not from a value times 0 (inf * 0 is NaN)."""
    for v in ([float("inf"), 0.0, 2.0], [3.0, 0.0, float("nan")], [[0.0, float("inf")], [1.0, 2.0]]):
        got = pyframe.tensor(v, requires_grad=True)
        got.prod().backward()
        want = torch.tensor(v, requires_grad=True)
        want.prod().backward()
        np.testing.assert_array_equal(got.grad.numpy(), want.grad.numpy())
