"""Every differentiable op against central finite differences in float64 (pyframe.autograd.gradcheck).

One table of rows: an op (a function of float64 leaf tensors) and how to draw its inputs. Inputs stay away from
the kinks of the op (no ties for max/min/maximum, nothing near 0 for abs/relu, nothing near the bounds of clamp
or the jumps of remainder), so the finite difference is the derivative."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

import pyframe
from pyframe.autograd import GradcheckError, gradcheck

F64 = pyframe.float64


def _draw(rng: np.random.Generator, shape: tuple, domain: str) -> np.ndarray:
    """Values for one input. ``distinct``: no two within 0.1 of each other (max/min/sort have no ties)."""
    n = math.prod(shape)
    if domain == "real":
        a = rng.uniform(-2.0, 2.0, n)
    elif domain == "pos":
        a = rng.uniform(0.5, 2.0, n)
    elif domain == "unit":
        a = rng.uniform(-0.8, 0.8, n)
    elif domain == "away":  # |x| in [0.3, 2]: no kink of abs/relu/sign, no pole of 1/x
        a = rng.choice([-1.0, 1.0], n) * rng.uniform(0.3, 2.0, n)
    elif domain == "distinct":
        a = (rng.permutation(n) - n / 2) * 0.37 + rng.uniform(-0.05, 0.05, n)
    elif domain == "clampable":  # away from the bounds +-0.5 used by the clamp rows
        a = rng.choice([-1.4, -0.9, -0.3, -0.1, 0.2, 0.35, 0.8, 1.3], n) + rng.uniform(-0.05, 0.05, n)
    else:  # pragma: no cover
        raise ValueError(domain)
    return a.reshape(shape)


@dataclass(frozen=True)
class Row:
    id: str
    fn: Callable  # fn(*tensors) -> tensor or tuple of tensors
    inputs: tuple  # (shape, domain) per differentiable input, or a callable rng -> np.ndarray
    eps: float = 1e-6


def R(id: str, fn: Callable, *inputs, eps: float = 1e-6) -> Row:  # noqa: A002, N802 - short table rows
    return Row(id, fn, inputs, eps)


def _remainder_pair(rng):
    """a, b with a / b at least 0.2 away from an integer: remainder is smooth there."""
    b = rng.uniform(0.5, 1.5, (3, 4))
    a = b * (rng.integers(-3, 4, (3, 4)) + rng.uniform(0.2, 0.8, (3, 4)))
    return a, b


def _max_pair(rng):
    """a, b at least 0.1 apart everywhere, either one larger."""
    a = rng.uniform(-2, 2, (3, 4))
    return a, a + rng.choice([-1.0, 1.0], (3, 4)) * rng.uniform(0.1, 1.0, (3, 4))


def _remainder_by_scalar(rng):
    return 1.5 * (rng.integers(-3, 4, (3, 4)) + rng.uniform(0.2, 0.8, (3, 4)))


IDX = [2, 0, 2, 1]  # repeated indices: their gradients must accumulate


def _idx(*values):
    return pyframe.tensor(values if len(values) > 1 else values[0], dtype=pyframe.int64)


def _setitem(key):
    def fn(x, v):
        y = x * 1.0  # a non-leaf: setitem on a leaf that requires grad is an error
        y[key] = v
        return y

    return fn


def _inplace(op, *args):
    def fn(x, *others):
        y = x * 1.5
        getattr(y, op)(*others, *args)
        return y

    return fn


MASK34 = pyframe.tensor(np.arange(12).reshape(3, 4) % 3 == 0)
ROWMASK = pyframe.tensor([True, False, True])

# fmt: off
ROWS = [
    # ---- unary
    R("neg", pyframe.neg, ((3, 4), "real")),
    R("abs", pyframe.abs, ((3, 4), "away")),
    R("exp", pyframe.exp, ((3, 4), "real")),
    R("log", pyframe.log, ((3, 4), "pos")),
    R("sqrt", pyframe.sqrt, ((3, 4), "pos")),
    R("rsqrt", pyframe.rsqrt, ((3, 4), "pos")),
    R("tanh", pyframe.tanh, ((3, 4), "real")),
    R("sigmoid", pyframe.sigmoid, ((3, 4), "real")),
    R("relu", pyframe.relu, ((3, 4), "away")),
    R("sin", pyframe.sin, ((3, 4), "real")),
    R("cos", pyframe.cos, ((3, 4), "real")),
    R("reciprocal", pyframe.reciprocal, ((3, 4), "away")),
    R("square", pyframe.square, ((3, 4), "real")),
    R("erf", pyframe.erf, ((3, 4), "real")),
    R("log1p", pyframe.log1p, ((3, 4), "unit")),
    R("expm1", pyframe.expm1, ((3, 4), "real")),
    R("clamp", lambda x: x.clamp(-0.5, 0.5), ((3, 4), "clampable")),
    R("clamp_min", lambda x: pyframe.clamp(x, min=-0.5), ((3, 4), "clampable")),
    R("clamp_max", lambda x: x.clamp(max=0.5), ((3, 4), "clampable")),
    R("clamp_tensor_bounds", lambda x, lo: x.clamp(min=lo), ((3, 4), "clampable"), ((4,), "distinct")),
    R("method_chain", lambda x: x.exp().sin().tanh(), ((2, 3), "real")),
    # ---- binary, with broadcasting and scalar operands
    R("add_broadcast", pyframe.add, ((3, 4), "real"), ((4,), "real")),
    R("add_scalar", lambda x: x + 2.5, ((3, 4), "real")),
    R("radd_scalar", lambda x: 2.5 + x, ((3, 4), "real")),
    R("sub_broadcast", pyframe.sub, ((2, 1, 3), "real"), ((4, 1), "real")),
    R("rsub_scalar", lambda x: 2.5 - x, ((3, 4), "real")),
    R("mul_broadcast", pyframe.mul, ((3, 1), "real"), ((1, 4), "real")),
    R("mul_scalar", lambda x: x * -3.0, ((3, 4), "real")),
    R("mul_0d", pyframe.mul, ((3, 4), "real"), ((), "real")),
    R("div_broadcast", pyframe.div, ((3, 4), "real"), ((3, 1), "away")),
    R("div_scalar", lambda x: x / 4.0, ((3, 4), "real")),
    R("rdiv_scalar", lambda x: 1.5 / x, ((3, 4), "away")),
    R("pow_tensor", pyframe.pow, ((3, 4), "pos"), ((4,), "real")),
    R("pow_scalar_int", lambda x: x ** 3, ((3, 4), "real")),
    R("pow_scalar_float", lambda x: x ** 2.5, ((3, 4), "pos")),
    R("pow_negative_exponent", lambda x: pyframe.pow(x, -1.5), ((3, 4), "pos")),
    R("rpow_scalar_base", lambda x: 2.0 ** x, ((3, 4), "real")),
    R("maximum", pyframe.maximum, _max_pair),
    R("minimum", pyframe.minimum, _max_pair),
    R("maximum_broadcast", lambda a, b: pyframe.maximum(a, b[0]), _max_pair),
    R("atan2", pyframe.atan2, ((3, 4), "away"), ((3, 4), "away")),
    R("atan2_broadcast", pyframe.atan2, ((3, 4), "real"), ((4,), "away")),
    R("remainder", pyframe.remainder, _remainder_pair),
    R("remainder_scalar", lambda x: x % 1.5, _remainder_by_scalar),
    R("where", lambda a, b: pyframe.where(MASK34, a, b), ((3, 4), "real"), ((4,), "real")),
    R("where_scalar", lambda a: pyframe.where(MASK34, a, 0.5), ((3, 4), "real")),
    R("where_method", lambda a, b: a.where(MASK34, b), ((3, 4), "real"), ((3, 4), "real")),
    R("masked_fill", lambda x: x.masked_fill(MASK34, 0.25), ((3, 4), "real")),
    R("masked_fill_broadcast_mask", lambda x: pyframe.masked_fill(x, MASK34[0], -1.0), ((3, 4), "real")),
    R("triu", lambda x: x.triu(), ((3, 4), "real")),
    R("triu_diag", lambda x: pyframe.triu(x, 1), ((2, 3, 3), "real")),
    R("tril", lambda x: x.tril(), ((4, 3), "real")),
    R("tril_neg_diag", lambda x: pyframe.tril(x, -1), ((2, 3, 3), "real")),
    # ---- reductions
    R("sum_full", lambda x: x.sum(), ((2, 3, 4), "real")),
    R("sum_dim", lambda x: x.sum(1), ((2, 3, 4), "real")),
    R("sum_dims_keepdim", lambda x: x.sum((0, 2), keepdim=True), ((2, 3, 4), "real")),
    R("sum_negative_dim", lambda x: pyframe.sum(x, dim=-1), ((2, 3, 4), "real")),
    R("mean_full", lambda x: x.mean(), ((2, 3, 4), "real")),
    R("mean_dims", lambda x: x.mean((0, -1)), ((2, 3, 4), "real")),
    R("mean_keepdim", lambda x: x.mean(1, keepdim=True), ((2, 3, 4), "real")),
    R("prod_full", lambda x: x.prod(), ((2, 3), "away")),
    R("prod_dim", lambda x: x.prod(1), ((3, 4), "away")),
    R("prod_keepdim", lambda x: x.prod(0, keepdim=True), ((3, 4), "away")),
    R("var_full", lambda x: x.var(), ((3, 4), "real")),
    R("var_dim", lambda x: x.var(1), ((3, 4), "real")),
    R("var_biased_keepdim", lambda x: x.var(0, unbiased=False, keepdim=True), ((3, 4), "real")),
    R("var_correction", lambda x: x.var((0, 1), correction=0), ((2, 3, 4), "real")),
    R("std_full", lambda x: x.std(), ((3, 4), "real")),
    R("std_dim", lambda x: x.std(-1, keepdim=True), ((3, 4), "real")),
    R("norm_2", lambda x: x.norm(), ((3, 4), "real")),
    R("norm_2_dim", lambda x: x.norm(2, dim=1), ((3, 4), "real")),
    R("norm_1", lambda x: x.norm(1), ((3, 4), "away")),
    R("norm_1_dim", lambda x: x.norm(p=1, dim=0, keepdim=True), ((3, 4), "away")),
    R("norm_inf", lambda x: x.norm(math.inf), ((3, 4), "distinct")),
    R("norm_inf_dim", lambda x: x.norm(math.inf, dim=1), ((3, 4), "distinct")),
    R("norm_3", lambda x: x.norm(3), ((3, 4), "away")),
    R("amax_full", lambda x: x.amax(), ((3, 4), "distinct")),
    R("amax_dims", lambda x: x.amax((0, 2)), ((2, 3, 4), "distinct")),
    R("amin_dim_keepdim", lambda x: x.amin(1, keepdim=True), ((3, 4), "distinct")),
    R("max_full", lambda x: x.max(), ((3, 4), "distinct")),
    R("min_full", lambda x: pyframe.min(x), ((3, 4), "distinct")),
    R("max_dim", lambda x: x.max(1).values, ((3, 4), "distinct")),
    R("max_dim_tuple", lambda x: x.max(dim=0, keepdim=True), ((3, 4), "distinct")),
    R("min_dim", lambda x: x.min(-1)[0], ((2, 3, 4), "distinct")),
    R("max_binary_form", lambda a, b: pyframe.max(a, b), _max_pair),
    R("logsumexp", lambda x: x.logsumexp(1), ((3, 4), "real")),
    R("logsumexp_dims_keepdim", lambda x: pyframe.logsumexp(x, (0, 2), keepdim=True), ((2, 3, 4), "real")),
    R("softmax_last", lambda x: x.softmax(-1), ((2, 3, 4), "real")),
    R("softmax_dim0", lambda x: pyframe.softmax(x, 0), ((2, 3, 4), "real")),
    R("softmax_dim1", lambda x: x.softmax(1), ((2, 3, 4), "real")),
    R("log_softmax_last", lambda x: x.log_softmax(-1), ((2, 3, 4), "real")),
    R("log_softmax_dim0", lambda x: pyframe.log_softmax(x, 0), ((2, 3, 4), "real")),
    R("log_softmax_dim1", lambda x: x.log_softmax(1), ((2, 3, 4), "real")),
    # ---- views
    R("reshape", lambda x: x.reshape(4, 3), ((3, 4), "real")),
    R("reshape_infer", lambda x: x.reshape(-1), ((2, 3, 2), "real")),
    R("reshape_of_transpose", lambda x: x.t().reshape(12), ((3, 4), "real")),
    R("view", lambda x: x.view(2, 6), ((3, 4), "real")),
    R("flatten", lambda x: x.flatten(1), ((2, 3, 2), "real")),
    R("transpose", lambda x: x.transpose(0, 2), ((2, 3, 4), "real")),
    R("permute", lambda x: x.permute(2, 0, 1), ((2, 3, 4), "real")),
    R("T", lambda x: x.T, ((3, 4), "real")),
    R("T_3d", lambda x: x.T * pyframe.arange(1.0, 3.0, dtype=F64), ((2, 3, 4), "real")),
    R("mT", lambda x: x.mT, ((2, 3, 4), "real")),
    R("t_1d", lambda x: x.t(), ((4,), "real")),
    R("unsqueeze", lambda x: x.unsqueeze(1), ((3, 4), "real")),
    R("unsqueeze_last", lambda x: x.unsqueeze(-1), ((3, 4), "real")),
    R("squeeze_all", lambda x: x.squeeze(), ((3, 1, 4, 1), "real")),
    R("squeeze_dim", lambda x: x.squeeze(1), ((3, 1, 4), "real")),
    R("expand", lambda x: x.expand(2, 3, 4), ((3, 1), "real")),
    R("expand_keep", lambda x: x.expand(-1, 4) * pyframe.arange(4.0, dtype=F64), ((3, 1), "real")),
    R("narrow", lambda x: x.narrow(1, 1, 2), ((3, 4), "real")),
    R("narrow_negative_start", lambda x: pyframe.narrow(x, 0, -2, 2), ((3, 4), "real")),
    R("select", lambda x: x.select(1, 2), ((3, 4), "real")),
    R("select_negative", lambda x: x.select(0, -1), ((3, 4), "real")),
    R("split_size", lambda x: x.split(2, 1), ((3, 5), "real")),
    R("split_sections", lambda x: pyframe.split(x, [1, 2], 0), ((3, 4), "real")),
    R("chunk", lambda x: x.chunk(2, -1), ((3, 4), "real")),
    R("unbind", lambda x: x.unbind(1), ((3, 4), "real")),
    R("slice_basic", lambda x: x[1:, ::2], ((3, 4), "real")),
    R("slice_int", lambda x: x[1], ((3, 4), "real")),
    R("slice_negative_int", lambda x: x[:, -1], ((3, 4), "real")),
    R("slice_ellipsis", lambda x: x[..., 1:3], ((2, 3, 4), "real")),
    R("slice_none", lambda x: x[None, 0, 1:], ((3, 4), "real")),
    R("slice_of_slice", lambda x: x[1:][:, 1:3][0], ((3, 4), "real")),
    R("index_list", lambda x: x[[2, 0, 2]], ((3, 4), "real")),
    R("index_list_dim1", lambda x: x[:, [3, 1, 1]], ((3, 4), "real")),
    R("index_tensor_2d", lambda x: x[_idx([[0, 2], [1, 1]])], ((3, 4), "real")),
    R("index_two_tensors", lambda x: x[_idx(0, 2, 2), _idx(1, 3, 1)], ((3, 4), "real")),
    R("index_negative", lambda x: x[_idx(-1, 0)], ((3, 4), "real")),
    R("index_mixed", lambda x: x[1:, _idx(0, 2)], ((3, 4), "real")),
    R("index_bool_mask", lambda x: x[MASK34], ((3, 4), "real")),
    R("index_bool_rows", lambda x: x[ROWMASK], ((3, 4), "real")),
    R("iterate", lambda x: tuple(x), ((3, 2), "real")),
    # ---- joins
    R("cat_dim0", lambda a, b: pyframe.cat([a, b]), ((2, 3), "real"), ((1, 3), "real")),
    R("cat_dim1", lambda a, b: pyframe.cat([a, b, a], dim=1), ((2, 3), "real"), ((2, 2), "real")),
    R("cat_with_constant", lambda a: pyframe.cat([a, pyframe.ones(1, 3, dtype=F64)], -2), ((2, 3), "real")),
    R("stack_dim0", lambda a, b: pyframe.stack([a, b]), ((2, 3), "real"), ((2, 3), "real")),
    R("stack_last", lambda a, b: pyframe.stack([a, b, b], dim=-1), ((2, 3), "real"), ((2, 3), "real")),
    # ---- matmul
    R("matmul_1d_1d", pyframe.matmul, ((4,), "real"), ((4,), "real")),
    R("matmul_1d_2d", pyframe.matmul, ((3,), "real"), ((3, 4), "real")),
    R("matmul_2d_1d", pyframe.matmul, ((3, 4), "real"), ((4,), "real")),
    R("matmul_2d_2d", lambda a, b: a @ b, ((2, 3), "real"), ((3, 4), "real")),
    R("matmul_batched", pyframe.matmul, ((2, 3, 4), "real"), ((2, 4, 2), "real")),
    R("matmul_batched_2d", pyframe.matmul, ((2, 3, 4), "real"), ((4, 2), "real")),
    R("matmul_2d_batched", pyframe.matmul, ((3, 4), "real"), ((2, 4, 2), "real")),
    R("matmul_broadcast_batch", pyframe.matmul, ((2, 1, 2, 3), "real"), ((3, 3, 2), "real")),
    R("matmul_1d_batched", pyframe.matmul, ((3,), "real"), ((2, 3, 2), "real")),
    R("matmul_batched_1d", pyframe.matmul, ((2, 2, 3), "real"), ((3,), "real")),
    R("matmul_transposed", lambda a, b: a.T @ b.T, ((3, 2), "real"), ((4, 3), "real")),
    R("matmul_batched_transposed", lambda a, b: a.mT @ b, ((2, 3, 2), "real"), ((2, 3, 4), "real")),
    R("matmul_permuted", lambda a, b: pyframe.matmul(a.permute(1, 0, 2), b), ((3, 2, 4), "real"), ((4, 2), "real")),
    R("matmul_sliced", lambda a, b: a[:, ::2] @ b[1:], ((2, 6), "real"), ((4, 2), "real")),
    R("mm", pyframe.mm, ((2, 3), "real"), ((3, 2), "real")),
    R("bmm", pyframe.bmm, ((2, 2, 3), "real"), ((2, 3, 2), "real")),
    R("dot", pyframe.dot, ((5,), "real"), ((5,), "real")),
    R("matmul_self", lambda a: a @ a, ((3, 3), "real")),
    # ---- gather and scatter
    R("index_select_dim0", lambda x: x.index_select(0, _idx(IDX)), ((3, 4), "real")),
    R("index_select_dim1", lambda x: pyframe.index_select(x, 1, _idx([3, 3, 0])), ((3, 4), "real")),
    R("gather_dim1", lambda x: x.gather(1, _idx([[0, 0, 3], [1, 2, 1], [3, 3, 3]])), ((3, 4), "real")),
    R("gather_dim0", lambda x: pyframe.gather(x, 0, _idx([[2, 0, 1, 2], [0, 0, 0, 1]])), ((3, 4), "real")),
    R("scatter_add", lambda x, s: x.scatter_add(0, _idx([[2, 0, 1, 2], [2, 1, 0, 2]]), s),
      ((3, 4), "real"), ((2, 4), "real")),
    R("scatter_add_dim1", lambda x, s: pyframe.scatter_add(x, 1, _idx([[0, 0], [3, 1], [2, 2]]), s),
      ((3, 4), "real"), ((3, 2), "real")),
    R("index_add_", lambda x, s: (x * 1.0).index_add_(0, _idx([0, 2, 0]), s), ((3, 4), "real"), ((3, 4), "real")),
    # ---- copies and casts
    R("to_float32_and_back", lambda x: (x.to(pyframe.float32) * 3).to(F64), ((3, 4), "real"), eps=1e-2),
    R("float_double", lambda x: x.float().double() * x, ((3, 4), "real"), eps=1e-2),
    R("to_same_dtype", lambda x: x.to(F64) * 2, ((3, 4), "real")),
    R("to_copy", lambda x: x.to(F64, copy=True), ((3, 4), "real")),
    R("clone", lambda x: x.clone(), ((3, 4), "real")),
    R("contiguous", lambda x: x.t().contiguous(), ((3, 4), "real")),
    # ---- __setitem__ and in-place ops on non-leaves
    R("setitem_slice", _setitem((slice(1, 3),)), ((3, 4), "real"), ((2, 4), "real")),
    R("setitem_broadcast", _setitem((slice(None), 1)), ((3, 4), "real"), ((1,), "real")),
    R("setitem_int", _setitem(0), ((3, 4), "real"), ((4,), "real")),
    R("setitem_index_list", _setitem([2, 0]), ((3, 4), "real"), ((2, 4), "real")),
    R("setitem_mask", _setitem(MASK34), ((3, 4), "real"), ((4,), "real")),
    R("setitem_index_dim1", _setitem((slice(None), [3, 0])), ((3, 4), "real"), ((3, 2), "real")),
    R("setitem_0d_value", _setitem((1, 2)), ((3, 4), "real"), ((), "real")),
    R("add_", _inplace("add_"), ((3, 4), "real"), ((4,), "real")),
    R("sub_", _inplace("sub_"), ((3, 4), "real"), ((3, 4), "real")),
    R("mul_", _inplace("mul_"), ((3, 4), "real"), ((3, 1), "real")),
    R("mul_scalar_", _inplace("mul_", 3.0), ((3, 4), "real")),
    R("div_", _inplace("div_"), ((3, 4), "real"), ((3, 4), "away")),
    R("pow_", _inplace("pow_", 2.0), ((3, 4), "real")),
    R("pow_tensor_", lambda x, e: (x * 1.0).pow_(e), ((3, 4), "pos"), ((4,), "real")),
    R("iadd", lambda x, y: _iadd(x * 2, y), ((3, 4), "real"), ((3, 4), "real")),
    R("clamp_", _inplace("clamp_", -0.5, 0.5), ((3, 4), "clampable")),
    R("masked_fill_", _inplace("masked_fill_", MASK34, 0.0), ((3, 4), "real")),
    R("copy_", lambda x, y: (x * 1.0).copy_(y), ((3, 4), "real"), ((4,), "real")),
    R("copy_into_constant", lambda y: pyframe.zeros(3, 4, dtype=F64).copy_(y * 2), ((3, 4), "real")),
    R("scatter_add_", lambda x, s: (x * 1.0).scatter_add_(1, _idx([[0, 0], [3, 1], [2, 2]]), s),
      ((3, 4), "real"), ((3, 2), "real")),
]
# fmt: on


def _iadd(y, other):
    y += other
    return y


def _inputs(row: Row, rng) -> list:
    if len(row.inputs) == 1 and callable(row.inputs[0]):
        arrays = row.inputs[0](rng)
        arrays = arrays if isinstance(arrays, tuple) else (arrays,)
    else:
        arrays = [_draw(rng, shape, domain) for shape, domain in row.inputs]
    return [pyframe.tensor(np.array(a, dtype=np.float64, order="C"), requires_grad=True) for a in arrays]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_gradcheck(row: Row, rng):
    inputs = _inputs(row, rng)
    assert gradcheck(row.fn, inputs, eps=row.eps)
    # the gradients have the inputs' shapes and dtype; every input is reached (copy_ overwrites all of its
    # target, so the target's history is cut there: no gradient, where torch returns zeros)
    out = row.fn(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    total = sum((o * o).sum() for o in outs if o.dtype.is_floating_point)
    grads = pyframe.autograd.grad(total, inputs, allow_unused=row.id == "copy_")
    for i, (g, x) in enumerate(zip(grads, inputs, strict=True)):
        if row.id == "copy_" and i == 0:
            assert g is None
            continue
        assert g.shape == x.shape and g.dtype == F64 and not g.requires_grad


def test_table_covers_the_required_ops():
    names = {r.id.split("_")[0] for r in ROWS}
    required = [
        "neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "sin", "cos", "reciprocal", "square",
        "erf", "log1p", "expm1", "clamp", "add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2",
        "remainder", "where", "masked", "triu", "tril", "sum", "mean", "prod", "var", "std", "norm", "amax", "amin",
        "max", "min", "logsumexp", "softmax", "log", "reshape", "view", "transpose", "permute", "T", "unsqueeze",
        "squeeze", "expand", "narrow", "select", "split", "chunk", "unbind", "slice", "index", "cat", "stack",
        "matmul", "gather", "scatter", "to", "clone", "contiguous", "setitem",
    ]  # fmt: skip
    assert not [n for n in required if n not in names]


# ---- the checker itself ------------------------------------------------------------------


def test_gradcheck_catches_a_wrong_derivative():
    class Wrong(pyframe.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x  # should be 2 * x * g

    x = pyframe.tensor([0.5, -1.25, 2.0], dtype=F64, requires_grad=True)
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        gradcheck(Wrong.apply, [x])
    assert gradcheck(Wrong.apply, [x], raise_exception=False) is False


def test_gradcheck_warns_on_float32_inputs():
    x = pyframe.tensor([0.5, 1.5], requires_grad=True)
    with pytest.warns(UserWarning, match="not float64"):
        gradcheck(lambda t: t * 2, [x], eps=1e-2, atol=1e-3)


def test_gradcheck_restores_inputs():
    x = pyframe.tensor([0.5, -1.25, 2.0], dtype=F64, requires_grad=True)
    gradcheck(pyframe.exp, [x])
    assert x.tolist() == [0.5, -1.25, 2.0]


class _WrongSecondDerivative(pyframe.autograd.Function):
    """x**3 whose first derivative is right and whose backward is built from ops that give a wrong second one:
    it returns 3 * x.detach() ** 2 * g, so the gradient of the gradient w.r.t. x is 0 instead of 6 x g."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x**3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x.detach() ** 2 * g


@pytest.mark.parametrize("fn", [pyframe.sin, pyframe.tanh, lambda x: (x**3).sum(), lambda x: x.exp() * x])
def test_gradgradcheck_passes_second_derivatives(fn):
    x = pyframe.tensor([0.5, -1.25, 2.0], dtype=F64, requires_grad=True)
    assert pyframe.autograd.gradgradcheck(fn, [x])
    g = pyframe.tensor(np.full(fn(x).shape, 0.5), dtype=F64, requires_grad=True)
    assert pyframe.autograd.gradgradcheck(fn, (x,), (g,))


def test_gradgradcheck_catches_a_wrong_second_derivative_as_torch_does():
    x = pyframe.tensor([0.5, -1.25, 2.0], dtype=F64, requires_grad=True)
    assert gradcheck(_WrongSecondDerivative.apply, [x])  # first derivatives are right
    with pytest.raises(GradcheckError, match="Jacobian mismatch"):
        pyframe.autograd.gradgradcheck(_WrongSecondDerivative.apply, [x])
    assert pyframe.autograd.gradgradcheck(_WrongSecondDerivative.apply, [x], raise_exception=False) is False
    torch = pytest.importorskip("torch")

    class TorchWrong(torch.autograd.Function):
        forward = staticmethod(lambda ctx, x: (ctx.save_for_backward(x), x**3)[1])
        backward = staticmethod(lambda ctx, g: 3 * ctx.saved_tensors[0].detach() ** 2 * g)

    tx = torch.tensor([0.5, -1.25, 2.0], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(TorchWrong.apply, (tx,))
    assert torch.autograd.gradgradcheck(TorchWrong.apply, (tx,), raise_exception=False) is False
