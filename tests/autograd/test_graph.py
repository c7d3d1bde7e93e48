"""The autograd engine's semantics: accumulation, retain_graph, recording, detach, tensor hooks, retain_grad,
autograd.grad, in-place checks, deep and diamond graphs, freeing, threads, t.grad assignment. Same behaviour as
torch.autograd (grad mode and custom Functions are in test_grad_mode.py and test_function.py)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import pyframe
from pyframe.autograd import Function

F64 = pyframe.float64


def leaf(values, dtype=F64):
    return pyframe.tensor(values, dtype=dtype, requires_grad=True)


# ---- accumulation and backward ---------------------------------------------------------


def test_grad_accumulates_into_leaves_across_backward_calls():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    first = x.grad
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0, 9.0]
    assert x.grad is first  # accumulated in place, as torch
    x.grad = None
    x.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


def test_leaf_grad_does_not_alias_the_incoming_gradient():
    """add's backward hands the same tensor to both operands: accumulating into one must not change the other."""
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (a + b).sum().backward()
    a.grad.add_(10)
    assert b.grad.tolist() == [1.0, 1.0]
    g = pyframe.tensor([5.0, 6.0], dtype=F64)
    y = a * 1
    y.backward(g)
    g.add_(100)
    assert a.grad.tolist() == [16.0, 17.0]


def test_second_backward_needs_retain_graph():
    x = leaf([1.0, 2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    once = x.grad.tolist()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array(once))
    with pytest.raises(RuntimeError, match="retain_graph"):
        y.backward()


def test_second_backward_without_retain_graph_raises():
    x = leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time.*retain_graph=True"):
        y.backward()
    with pytest.raises(RuntimeError, match="retain_graph"):
        pyframe.autograd.grad(y, x)


def test_backward_of_non_scalar_needs_a_gradient():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x * x
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        y.backward()
    with pytest.raises(RuntimeError, match="shape"):
        y.backward(pyframe.ones(2, dtype=F64))
    y.backward(gradient=pyframe.tensor([[1.0, 0.0], [0.5, 2.0]], dtype=F64))
    assert x.grad.tolist() == [[2.0, 0.0], [3.0, 16.0]]


def function(name: str, forward, backward) -> type:
    """A custom ``Function`` class ``name`` with these static forward and backward."""
    return type(name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})


def test_leaf_gradients_keep_the_leaf_dtype():
    """As torch: a float64 seed for a float32 output, or a custom backward's float64 gradient, is cast."""
    x = pyframe.ones(3, requires_grad=True)
    x.exp().backward(pyframe.ones(3, dtype=F64))
    x.sum().backward(pyframe.tensor(2.0, dtype=F64))
    assert x.grad.dtype == pyframe.float32

    double = function("Double", lambda ctx, t: t * 2, lambda ctx, g: g.double() * 2)
    y = pyframe.ones(2, requires_grad=True)
    double.apply(y).sum().backward()
    assert y.grad.dtype == pyframe.float32 and y.grad.tolist() == [2.0, 2.0]
    (g,) = pyframe.autograd.grad(x.exp().sum(), x, pyframe.tensor(1.0, dtype=F64))
    assert g.dtype == pyframe.float32


def test_backward_of_one_element_non_0d_tensor_needs_no_gradient():
    x = leaf([3.0])
    (x * x).backward()
    assert x.grad.tolist() == [6.0]


def test_backward_on_a_tensor_that_does_not_require_grad_raises():
    x = pyframe.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        x.sum().backward()


def test_backward_of_several_roots_and_of_a_leaf_itself():
    x = leaf([1.0, 2.0])
    a, b = x * 2, x * x
    pyframe.autograd.backward([a.sum(), b], [None, pyframe.tensor([1.0, 10.0], dtype=F64)])
    assert x.grad.tolist() == [4.0, 42.0]
    x.grad = None
    x.backward(pyframe.tensor([3.0, 4.0], dtype=F64))
    assert x.grad.tolist() == [3.0, 4.0]


def test_backward_with_inputs_accumulates_only_into_those():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (x * w).sum().backward(inputs=[w])
    assert x.grad is None and w.grad.tolist() == [1.0, 2.0]


def test_backward_with_inputs_gives_each_input_its_own_accumulating_grad():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (a + b).sum().backward(inputs=[a, b])  # add hands both the same (expanded) gradient
    assert a.grad is not b.grad
    (a + b).sum().backward(inputs=[a, b])
    (a * 2).sum().backward()
    assert a.grad.tolist() == [4.0, 4.0] and b.grad.tolist() == [2.0, 2.0]


def test_root_reachable_from_another_root():
    x = leaf([2.0])
    y = x * 3
    z = y * y
    pyframe.autograd.backward([y, z], [pyframe.ones(1, dtype=F64), pyframe.ones(1, dtype=F64)])
    assert x.grad.tolist() == [3.0 + 2 * 6.0 * 3.0]


# ---- recording: is_leaf, grad_fn, requires_grad --------------------------------------------


def test_requires_grad_grad_fn_and_is_leaf_propagate():
    x = leaf([1.0, 2.0])
    c = pyframe.tensor([3.0, 4.0], dtype=F64)
    assert x.is_leaf and x.grad_fn is None and x.requires_grad
    assert c.is_leaf and not c.requires_grad
    y = x * c
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    assert type(y.grad_fn).__name__ == "MulBackward0" == y.grad_fn.name() and "MulBackward0" in repr(y.grad_fn)
    (nx, _), (nc, _) = y.grad_fn.next_functions
    assert "AccumulateGrad" in repr(nx) and nc is None
    z = c * 2 + 1
    assert not z.requires_grad and z.is_leaf and z.grad_fn is None
    s = y.sum()
    assert s.grad_fn.next_functions[0][0] is y.grad_fn
    s.backward()
    assert y.grad is None  # non-leaf gradients are not kept without retain_grad
    assert c.grad is None


def test_every_view_and_copy_records():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    outs = [
        x.t(), x.T, x.mT, x[0], x[:, 1:], x[None], x.view(4), x.reshape(4), x.unsqueeze(0), x.squeeze(),
        x.expand(2, 2, 2), x.narrow(0, 0, 1), x.select(1, 0), x.permute(1, 0), x.transpose(0, 1), x.clone(),
        x.t().contiguous(), x.to(pyframe.float32), x[0].t(), x.sum().t(), x.sum().transpose(0, -1), x.flatten(),
    ]  # fmt: skip
    for i, o in enumerate(outs):
        assert o.requires_grad and o.grad_fn is not None, f"output {i} lost its history"
    assert x.contiguous() is x and x.to(F64) is x  # no-ops return the tensor itself, as torch


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        pyframe.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        pyframe.zeros(2, dtype=pyframe.int32, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        pyframe.tensor([True]).requires_grad_()
    x = leaf([1.5, -2.0, 3.0])
    for out in (x.argmax(), x > 0, x.max(0).indices, x.to(pyframe.int64), x.isnan(), x.floor_divide(1.0).long()):
        assert not out.requires_grad and out.grad_fn is None


def test_integer_results_of_differentiable_ops_do_not_require_grad():
    x = leaf([1.5, -2.0, 3.0])
    values, indices = x.max(0)
    assert values.requires_grad and not indices.requires_grad


def test_requires_grad_flag_on_non_leaf_cannot_be_cleared():
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="leaf"):
        y.requires_grad_(False)
    y.requires_grad_(True)  # harmless


def test_factories_and_requires_grad_():
    t = pyframe.zeros(3, dtype=F64).requires_grad_()
    assert t.requires_grad and t.is_leaf
    assert t.requires_grad_(False) is t and not t.requires_grad
    assert pyframe.randn(2, 2, requires_grad=True).requires_grad


# ---- grad mode --------------------------------------------------------------------------


# ---- detach -----------------------------------------------------------------------------


def test_detach_shares_memory_and_blocks_the_gradient():
    x = leaf([1.0, 2.0])
    y = x * 3
    d = y.detach()
    assert not d.requires_grad and d.is_leaf and d.grad_fn is None
    assert d.data_ptr() == y.data_ptr()
    (y * d).sum().backward()
    assert x.grad.tolist() == [9.0, 18.0]  # d is a constant: d(y * d)/dx = 3 * d
    with pyframe.no_grad():
        x.detach().mul_(0)  # writes through to x
    assert x.tolist() == [0.0, 0.0]


# ---- hooks and retain_grad -----------------------------------------------------------------


def test_hook_on_a_leaf_replaces_its_gradient():
    x = leaf([1.0, 2.0])
    calls = []

    def hook(g):
        calls.append(g.tolist())
        return g * 10

    handle = x.register_hook(hook)
    (x * x).sum().backward()
    assert calls == [[2.0, 4.0]] and x.grad.tolist() == [20.0, 40.0]
    handle.remove()
    x.grad = None
    (x * x).sum().backward()
    assert len(calls) == 1 and x.grad.tolist() == [2.0, 4.0]
    handle.remove()  # removing twice is harmless


def test_hook_on_a_non_leaf_changes_what_flows_upstream():
    x = leaf([1.0, 2.0])
    y = x * x
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))  # None: the gradient is kept
    y.register_hook(lambda g: g * 2)
    y.register_hook(lambda g: seen.append(g.tolist()))  # sees the previous hook's result
    (y * 3).sum().backward()
    assert seen == [[3.0, 3.0], [6.0, 6.0]]
    assert x.grad.tolist() == [12.0, 24.0]


def test_hook_runs_once_with_the_summed_gradient_of_a_tensor_used_twice():
    x = leaf([1.0, 2.0])
    y = x * 1
    calls = {"x": [], "y": []}
    x.register_hook(lambda g: calls["x"].append(g.tolist()))
    y.register_hook(lambda g: calls["y"].append(g.tolist()))
    (y * y + y + x).sum().backward()
    assert calls["y"] == [[3.0, 5.0]] and calls["x"] == [[4.0, 6.0]]


def test_hook_result_is_what_autograd_grad_returns():
    x = leaf([1.0, 2.0])
    x.register_hook(lambda g: g * 10)
    (g,) = pyframe.autograd.grad((x * 3).sum(), x)
    assert g.tolist() == [30.0, 30.0]  # torch runs tensor hooks before capturing the gradient


def test_hook_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        pyframe.ones(2).register_hook(lambda g: g)
    x = leaf([1.0, 2.0])
    x.register_hook(lambda g: g.sum())
    with pytest.raises(RuntimeError, match="shape"):
        (x * 2).sum().backward()


def test_hook_as_context_manager_handle():
    x = leaf([1.0])
    with x.register_hook(lambda g: g * 0):
        (x * 2).backward()
    (x * 2).backward()
    assert x.grad.tolist() == [2.0]


def test_retain_grad_keeps_the_gradient_of_a_non_leaf():
    x = leaf([1.0, 2.0])
    y = x * x
    assert not y.retains_grad
    y.retain_grad()
    assert y.retains_grad
    z = (y * 3).sum()
    z.backward(retain_graph=True)
    assert y.grad.tolist() == [3.0, 3.0] and x.grad.tolist() == [6.0, 12.0]
    z.backward()
    assert y.grad.tolist() == [6.0, 6.0]  # accumulates like a leaf's
    x.retain_grad()  # a no-op on a leaf
    assert not x.retains_grad
    with pytest.raises(RuntimeError, match="requires_grad=False"):
        pyframe.ones(1).retain_grad()


# ---- autograd.grad ------------------------------------------------------------------------


def test_autograd_grad_returns_without_accumulating():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    gx, gw = pyframe.autograd.grad((x * w).sum(), [x, w])
    assert gx.tolist() == [3.0, 4.0] and gw.tolist() == [1.0, 2.0]
    assert x.grad is None and w.grad is None
    (gy,) = pyframe.autograd.grad(x * w, x, grad_outputs=pyframe.tensor([1.0, -1.0], dtype=F64))
    assert gy.tolist() == [3.0, -4.0]


def test_autograd_grad_with_respect_to_a_non_leaf():
    x = leaf([1.0, 2.0])
    y = x * 2
    z = (y * y).sum()
    gy, gx = pyframe.autograd.grad(z, [y, x])
    assert gy.tolist() == [4.0, 8.0] and gx.tolist() == [8.0, 16.0]


def test_second_and_third_derivative_with_create_graph():
    x = leaf(2.0)
    y = x**3
    (g,) = pyframe.autograd.grad(y, x, create_graph=True)
    assert g.item() == 12.0 and g.requires_grad  # 3 x^2
    (g2,) = pyframe.autograd.grad(g, x, create_graph=True)
    assert g2.item() == 12.0  # 6 x
    (g3,) = pyframe.autograd.grad(g2, x)
    assert g3.item() == 6.0
    assert not g3.requires_grad


def test_backward_with_create_graph_makes_grad_differentiable():
    x = leaf(2.0)
    (x**3).backward(create_graph=True)
    assert x.grad.item() == 12.0 and x.grad.requires_grad
    g = x.grad
    x.grad = None
    g.backward()
    assert x.grad.item() == 12.0  # d(3 x^2)/dx


def test_grad_of_grad_through_views_reductions_and_matmul():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = ((x @ x)[0] ** 2).sum() + x[:, 1].exp().sum()
    (g,) = pyframe.autograd.grad(y, x, create_graph=True)
    (h,) = pyframe.autograd.grad(g.sum(), x)
    assert h.shape == x.shape and np.all(np.isfinite(h.numpy()))


def test_allow_unused():
    x, unused = leaf([1.0]), leaf([2.0])
    y = x * 2
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        pyframe.autograd.grad(y, [x, unused], retain_graph=True)
    gx, gu = pyframe.autograd.grad(y, [x, unused], allow_unused=True)
    assert gx.tolist() == [2.0] and gu is None


def test_grad_with_respect_to_a_tensor_that_does_not_require_grad_raises():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="does not require grad"):
        pyframe.autograd.grad(x * 2, pyframe.ones(1))


# ---- custom Function ------------------------------------------------------------------------


# ---- in-place ops -----------------------------------------------------------------------------


def test_modifying_a_saved_tensor_raises_at_backward():
    x = leaf([1.0, 2.0])
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize(
    "build",
    [
        lambda x: (x * 1, lambda y: y.sin()),  # sin saves its input
        lambda x: (x * 1, lambda y: y * y),
        lambda x: (x * 1, lambda y: y.prod()),
        lambda x: (x * 1, lambda y: y.max()),
        lambda x: (x * 1, lambda y: y.var()),
        lambda x: (x * 1, lambda y: y @ y),
        lambda x: (x * 1, lambda y: y[0] * y[1]),  # views share the version counter
    ],
)
def test_saved_inputs_and_views_are_version_checked(build):
    x = leaf([1.0, 2.0])
    y, f = build(x)
    out = f(y)
    with pyframe.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


@pytest.mark.parametrize("op", ["prod", "max", "amax"])
def test_modifying_the_output_of_an_op_that_saves_it_raises(op):
    x = leaf([1.0, 2.0, 3.0])
    p = getattr(x, op)()
    p.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        p.backward()


def test_max_along_a_dim_does_not_save_its_values():
    x = leaf([[1.0, 3.0], [4.0, 2.0]])
    values, _ = x.max(1)
    values.mul_(2)  # torch allows this: the backward reads the indices
    values.sum().backward()
    assert x.grad.tolist() == [[0.0, 2.0], [2.0, 0.0]]


def test_in_place_on_a_leaf_requiring_grad_raises_outside_no_grad():
    x = leaf([1.0, 2.0])
    for write in (
        lambda: x.add_(1), lambda: x.mul_(2), lambda: x.zero_(), lambda: x.fill_(1.0), lambda: x.copy_(x * 2),
        lambda: x.clamp_(0, 1), lambda: x.__setitem__(0, 5.0), lambda: x.uniform_(), lambda: x.masked_fill_(x > 1, 0),
    ):  # fmt: skip
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            write()
    assert x.tolist() == [1.0, 2.0]
    v0 = x._version
    with pyframe.no_grad():
        x.mul_(3)
        x[0] = 0.5
    assert x.tolist() == [0.5, 6.0] and x.is_leaf and x.requires_grad and x._version == v0 + 2
    (x * x).sum().backward()
    assert x.grad.tolist() == [1.0, 12.0]


def test_augmented_assignment_on_a_leaf_raises():
    x = leaf([1.0])
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x += 1


def _torch_pair(values):
    torch = pytest.importorskip("torch")
    return torch, leaf(values), torch.tensor(values, dtype=torch.float64, requires_grad=True)


@pytest.mark.parametrize(
    "program",
    [
        lambda x: (x * 2).mul_(3),
        lambda x: (x * 2).mul_(x),
        lambda x: (x.exp() + 1).div_(x).sub_(x * x).add_(2.0),
        lambda x: (x * 1).pow_(3),
        lambda x: (x * 1).pow_(x),
        lambda x: (x * 1).clamp_(0.5, 1.5),
        lambda x: (x * 2).copy_(x * x),
        lambda x: (x * 2).masked_fill_(x > 1, 0.0),
        lambda x: _iadd_chain(x),
    ],
)
def test_in_place_on_a_non_leaf_matches_torch(program):
    torch, p, t = _torch_pair([0.5, 1.25, 2.0])
    pp, tt = program(p), program(t)
    assert not pp.is_leaf and pp.requires_grad
    np.testing.assert_allclose(pp.detach().numpy(), tt.detach().numpy(), rtol=1e-12)
    (pp * pyframe.tensor([1.0, 2.0, 3.0], dtype=F64)).sum().backward()
    (tt * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def _iadd_chain(x):
    y = x * 2
    y += x
    y *= x
    y -= 1
    y /= x + 1
    return y


def test_in_place_on_a_non_leaf_keeps_identity_and_bumps_version():
    x = leaf([1.0, 2.0])
    y = x * 2
    before, version = y.grad_fn, y._version
    z = y.mul_(3)
    assert z is y and y.grad_fn is not before and "MulBackward0" in repr(y.grad_fn) and y._version == version + 1


def test_in_place_on_a_view_of_a_graph_tensor_raises_the_documented_error():
    x = leaf([[1.0, 2.0], [3.0, 4.0]])
    y = x * 2
    for write in (lambda: y[0].add_(1), lambda: y[:, 1].mul_(2), lambda: y.t().copy_(x), lambda: y[0].fill_(0)):
        with pytest.raises(RuntimeError, match="in-place operation on a view of a tensor that takes part in autograd"):
            write()
    with pyframe.no_grad():  # outside autograd, views write through as usual
        y[0].add_(1)
        x[1].mul_(2)
    assert y.tolist() == [[3.0, 5.0], [6.0, 8.0]] and x.tolist() == [[1.0, 2.0], [6.0, 8.0]]


def test_setitem_on_a_non_leaf_is_the_supported_alternative():
    torch, p, t = _torch_pair([[1.0, 2.0], [3.0, 4.0]])
    results = []
    for x in (p, t):
        y = x * 2
        y[0] = y[0] + 1
        y[1, 1] = x[0, 0] * 10
        y.sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0])
    np.testing.assert_allclose(results[0][1], results[1][1])


def test_setitem_with_a_value_requiring_grad_into_a_constant():
    v = leaf([1.0, 2.0])
    buf = pyframe.zeros(3, 2, dtype=F64)
    assert not buf.requires_grad
    buf[1] = v * 3
    assert buf.requires_grad and not buf.is_leaf
    (buf * buf).sum().backward()
    assert v.grad.tolist() == [18.0, 36.0]


def test_in_place_ops_under_no_grad_on_non_leaves_record_nothing():
    x = leaf([1.0, 2.0])
    y = x * 2
    fn = y.grad_fn
    with pyframe.no_grad():
        y.add_(1)
    assert y.grad_fn is fn
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_view_taken_before_an_in_place_change_of_its_base():
    # pyframe does not replay views (torch gives [6, 0]): using the stale view is a clear error, never a wrong
    # gradient
    x = leaf([1.0, 2.0])
    y = x * 2
    v = y[0:1]
    y.mul_(3)
    assert v.tolist() == [6.0]
    with pytest.raises(RuntimeError, match="modified in place"):
        v.sum().backward()
    v = y[0:1]  # the view taken again after the write carries the write's history
    v.sum().backward()
    assert x.grad.tolist() == [6.0, 0.0]


def test_assigning_requires_grad_on_an_int_tensor_raises():
    x = pyframe.tensor([1, 2])
    with pytest.raises(RuntimeError):
        x.requires_grad = True


# ---- graph shapes ------------------------------------------------------------------------------


def test_deep_chain_does_not_hit_the_recursion_limit():
    x = leaf([1.0])
    y = x
    for _ in range(20000):
        y = y * 1.0001
    y.sum().backward()
    np.testing.assert_allclose(x.grad.item(), 1.0001**20000, rtol=1e-9)


def test_deep_chain_of_views():
    x = leaf([[1.0, 2.0]])
    y = x
    for _ in range(5000):
        y = y.t()
    (y * y).sum().backward()
    assert x.grad.tolist() == [[2.0, 4.0]]


def test_diamond_graphs_sum_gradients():
    x = leaf([1.0, 2.0])
    a = x * 2
    b = x.exp()
    c = a * b + a  # x reaches c along three paths
    c.sum().backward()
    e = np.exp([1.0, 2.0])
    np.testing.assert_allclose(x.grad.numpy(), 2 * e + 2 * np.array([1.0, 2.0]) * e + 2)

    y = leaf([3.0])
    (y + y + y * y).backward()
    assert y.grad.tolist() == [8.0]


def test_wide_fan_out_and_fan_in():
    x = leaf([1.0, 2.0])
    parts = [x * float(i) for i in range(200)]
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    total.sum().backward()
    assert x.grad.tolist() == [float(sum(range(200)))] * 2


def test_graph_is_freed_with_its_output():
    import gc
    import weakref

    x = leaf([1.0, 2.0])
    y = (x * 2).exp()
    ref = weakref.ref(y.grad_fn)
    del y
    gc.collect()
    assert ref() is None


def test_backward_frees_the_saved_tensors_unless_retain_graph():
    import gc
    import weakref

    x = leaf([1.0, 2.0])
    h = (x * 2).exp()  # exp saves its output (as a history-free alias of its memory)
    ref = weakref.ref(h.grad_fn._saved_result)
    loss = h.sum()
    del h
    loss.backward(retain_graph=True)
    gc.collect()
    assert ref() is not None
    loss.backward()
    gc.collect()
    assert ref() is None  # while loss (and its graph) is still alive, as torch


def test_leaf_dying_does_not_break_a_graph_that_uses_it():
    x = leaf([1.0, 2.0])
    y = x * 3
    del x  # the AccumulateGrad end holds the leaf weakly
    y.sum().backward()


def test_threads_record_and_backward_independently():
    """Two threads building and differentiating their own graphs."""
    errors = []

    def work(scale):
        try:
            for _ in range(50):
                x = leaf([1.0, 2.0])
                (x * scale).sum().backward()
                assert x.grad.tolist() == [scale, scale]
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(float(s),)) for s in (2, 3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [("leaky_relu", {"negative_slope": 0.2}), ("elu", {}), ("silu", {}), ("hardtanh", {}), ("relu6", {}), ("relu", {})],
)
def test_inplace_activation_after_a_saved_tensor_backpropagates(name, kwargs):
    """An in-place activation overwrites a tensor the graph saved (a Linear output, which the
    next matmul reads in backward): backward must give the out-of-place gradients, as torch."""
    fn = getattr(pyframe.nn.functional, name)
    x = pyframe.tensor([[1.0, -2.0], [0.5, 3.0]])
    grads = []
    for inplace in (False, True):
        w = pyframe.tensor([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]], requires_grad=True)
        h = x @ w.T
        (fn(h, inplace=inplace, **kwargs) @ w).pow(2).sum().backward()
        grads.append(w.grad.numpy().copy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_leaf_grad_taken_without_copy_only_when_unshared():
    """_accumulate keeps an incoming gradient nobody else holds (torch's steal) and clones a
    shared one, so a later in-place .grad update never shows up anywhere else."""
    a = pyframe.ones(3, requires_grad=True)
    b = pyframe.ones(3, requires_grad=True)
    (a + b).sum().backward()  # one gradient tensor flows to both leaves
    assert a.grad._storage is not b.grad._storage
    a.grad.add_(1.0)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]
    kept = []
    c = pyframe.ones(3, requires_grad=True)
    c.register_hook(lambda g: kept.append(g))
    (c * 2).sum().backward()
    c.grad.add_(1.0)
    assert kept[0].tolist() == [2.0, 2.0, 2.0] and c.grad.tolist() == [3.0, 3.0, 3.0]
    w = pyframe.ones(2, 2, requires_grad=True)
    (pyframe.ones(3, 2) @ w).sum().backward()
    (pyframe.ones(3, 2) @ w).sum().backward()  # accumulates into the taken tensor
    assert w.grad.tolist() == [[6.0, 6.0], [6.0, 6.0]]


def test_grad_assignment_is_validated_as_torch():
    t = pyframe.zeros(2, requires_grad=True)
    t.grad = pyframe.ones(2)
    assert t.grad.tolist() == [1.0, 1.0]
    t.grad = None
    assert t.grad is None
    with pytest.raises(TypeError, match="Tensor or None"):
        t.grad = 0.0
    with pytest.raises(RuntimeError, match="size"):
        t.grad = pyframe.zeros(3)
    with pytest.raises(RuntimeError, match="dtype"):
        t.grad = pyframe.zeros(2, dtype=pyframe.float64)
    assert t.grad is None  # a refused assignment changes nothing
    t.sum().backward()
    assert t.grad.tolist() == [1.0, 1.0]


def test_grad_assignment_vs_torch_messages():
    torch = pytest.importorskip("torch")
    tt, pt = torch.zeros(2, requires_grad=True), pyframe.zeros(2, requires_grad=True)
    for bad in (0.0, "x"):
        with pytest.raises(TypeError):
            tt.grad = bad
        with pytest.raises(TypeError):
            pt.grad = bad


def test_only_floating_tensors_require_grad():
    x = pyframe.arange(3)
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        x.requires_grad = True
    assert not x.requires_grad
    y = pyframe.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match="gradients must be floating point tensors, got int64"):
        (y * 2).backward(pyframe.ones(3, dtype=pyframe.int64))


def test_grad_of_a_non_leaf_keeps_the_graph_behind_it():
    # autograd.grad runs only the nodes between the outputs and its inputs, as torch: exp's node behind
    # the non-leaf x is neither run nor freed, so later calls still reach it
    a = pyframe.tensor([0.5, 1.0], requires_grad=True)
    x = a.exp()
    (g1,) = pyframe.autograd.grad((x * x).sum(), x)
    (g2,) = pyframe.autograd.grad((x * 3).sum(), x)
    np.testing.assert_allclose(g1.numpy(), 2 * np.exp([0.5, 1.0]), rtol=1e-6)
    assert g2.tolist() == [3.0, 3.0]
    assert a.grad is None
    (x * 3).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), 3 * np.exp([0.5, 1.0]), rtol=1e-6)


def test_grad_of_two_outputs_of_one_node():
    # chunk's two pieces come from one node: both roots' gradients reach the input
    x = pyframe.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    a, b = pyframe.chunk(x, 2)
    (g,) = pyframe.autograd.grad([a, b], [x], [pyframe.ones(1, 2), pyframe.full((1, 2), 2.0)])
    assert g.tolist() == [[1.0, 1.0], [2.0, 2.0]]


def test_a_tensor_hook_may_not_change_the_gradients_dtype():
    x = pyframe.ones(2, requires_grad=True)
    x.register_hook(lambda g: g.to(pyframe.float64))
    with pytest.raises(RuntimeError, match="changed the type"):  # torch's: no silent cast back
        (x * 2).sum().backward()
