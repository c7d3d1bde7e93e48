"""Custom autograd Functions: saved tensors, needs_input_grad, no recording inside forward, gradient count
and shape checks, version checks of saved tensors, several outputs, returning an input. Same behaviour as torch."""

from __future__ import annotations

import pytest

import pyframe
from pyframe.autograd import Function

F64 = pyframe.float64


def leaf(values, dtype=F64):
    return pyframe.tensor(values, dtype=dtype, requires_grad=True)


def function(name: str, forward, backward) -> type:
    """A custom ``Function`` class ``name`` with these static forward and backward."""
    return type(name, (Function,), {"forward": staticmethod(forward), "backward": staticmethod(backward)})


class Cube(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        return x * x * x * scale

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x * ctx.scale, None


def test_function_saves_tensors_and_computes_gradients():
    x = leaf([1.0, 2.0])
    y = Cube.apply(x, 2.0)
    assert y.tolist() == [2.0, 16.0] and "CubeBackward" in repr(y.grad_fn)
    y.sum().backward()
    assert x.grad.tolist() == [6.0, 24.0]
    assert pyframe.autograd.gradcheck(lambda t: Cube.apply(t, 0.5), [leaf([0.3, -1.2, 2.0])])


def test_function_needs_input_grad():
    seen = []

    class Mul(Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append(ctx.needs_input_grad)
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return (g * b if ctx.needs_input_grad[0] else None, g * a if ctx.needs_input_grad[1] else None)

    a, b = leaf([2.0]), pyframe.tensor([5.0], dtype=F64)
    Mul.apply(a, b).backward()
    assert seen == [(True, False)] and a.grad.tolist() == [5.0]


def test_function_forward_does_not_record_and_no_grad_apply_records_nothing():
    class Twice(Function):
        @staticmethod
        def forward(ctx, x):
            inner = x * 2
            assert not inner.requires_grad  # forward runs under no_grad
            return inner

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = leaf([1.0])
    with pyframe.no_grad():
        assert not Twice.apply(x).requires_grad
    Twice.apply(x).backward()
    assert x.grad.tolist() == [2.0]


def test_function_wrong_number_of_gradients_raises():
    TooFew = function("TooFew", lambda ctx, a, b: a + b, lambda ctx, g: g)  # noqa: N806 - classes
    TooMany = function("TooMany", lambda ctx, a: a * 1, lambda ctx, g: (g, g))  # noqa: N806

    a, b = leaf([1.0]), leaf([2.0])
    with pytest.raises(RuntimeError, match=r"TooFew.backward returned 1 gradients, expected 2"):
        TooFew.apply(a, b).backward()
    with pytest.raises(RuntimeError, match=r"TooMany.backward returned 2 gradients, expected 1"):
        TooMany.apply(a).backward()


def test_function_wrong_gradient_shape_raises():
    class Bad(Function):
        @staticmethod
        def forward(ctx, a):
            return a.sum()

        @staticmethod
        def backward(ctx, g):
            return g  # should be expanded to a's shape

    with pytest.raises(RuntimeError, match="shape"):
        Bad.apply(leaf([1.0, 2.0])).backward()


def test_function_saved_tensor_modified_in_place_raises():
    x = leaf([1.0, 2.0])
    y = x * 1
    out = Cube.apply(y, 1.0)
    y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_function_with_two_outputs_and_a_non_differentiable_one():
    class SplitSign(Function):
        @staticmethod
        def forward(ctx, x):
            mask = x > 0
            ctx.mark_non_differentiable(mask)
            return x * 2, x * 3, mask

        @staticmethod
        def backward(ctx, g1, g2, g_mask):
            seen.append((g2.tolist(), g_mask))
            return g1 * 2 + g2 * 3

    seen = []

    x = leaf([1.0, -1.0])
    a, b, m = SplitSign.apply(x)
    assert a.requires_grad and b.requires_grad and not m.requires_grad
    a.sum().backward()  # b's gradient is materialised as zeros
    assert x.grad.tolist() == [2.0, 2.0]
    assert seen[0][0] == [0.0, 0.0] and (seen[0][1] is None or not seen[0][1].any())


def test_function_returning_its_input_does_not_steal_its_history():
    class Identity(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    x = leaf([1.0])
    y = Identity.apply(x)
    assert x.is_leaf and y is not x and not y.is_leaf
    y.backward()
    assert x.grad.tolist() == [5.0]


def test_once_differentiable_runs_backward_without_graph_and_refuses_double_backward():
    from pyframe.autograd.function import once_differentiable

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = leaf([1.0, 2.0])
    (g,) = pyframe.autograd.grad(Square.apply(x).sum(), x)
    assert g.tolist() == [2.0, 4.0]
    assert not g.requires_grad  # nothing was recorded inside backward
    seed = leaf([1.0, 1.0])  # a gradient that requires grad: the result is differentiable, and refuses to be
    (g,) = pyframe.autograd.grad(Square.apply(x), x, seed, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


def test_setup_context_style_function_matches_torch():
    torch = pytest.importorskip("torch")

    def make(base):
        class Mul(base):
            @staticmethod
            def forward(x, k):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.k = inputs[1]

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None

        return Mul

    x = leaf([1.0, -2.0])
    make(Function).apply(x, 3.0).sum().backward()
    tx = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    make(torch.autograd.Function).apply(tx, 3.0).sum().backward()
    assert x.grad.tolist() == tx.grad.tolist()
