"""What nodes save: torch's ``_saved_*`` attributes, saved_tensors_hooks (pack at recording, unpack when
backward reads), save_on_cpu, and node classes named for their op."""

import numpy as np
import pytest

import pyframe
from pyframe.autograd.graph import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks

F64 = pyframe.float64


def leaf(*shape):
    return pyframe.randn(*shape, dtype=F64, requires_grad=True)


def test_saved_attributes_under_torchs_names():
    x, w = leaf(3), leaf(3)
    y = x * w
    assert y.grad_fn._saved_self is x and y.grad_fn._saved_other is w
    assert "_saved_self" in dir(y.grad_fn)
    e = x.exp()
    assert np.array_equal(e.grad_fn._saved_result.detach().numpy(), e.detach().numpy())
    s = x.sin()
    assert s.grad_fn._saved_self is x
    u = x.unsqueeze(1).transpose(0, 1)
    assert (u.grad_fn._saved_dim0, u.grad_fn._saved_dim1) == (0, 1)
    assert u.grad_fn.next_functions[0][0]._saved_dim == 1
    with pytest.raises(AttributeError):
        _ = y.grad_fn._saved_nothing
    y.sum().backward()
    with pytest.raises(RuntimeError, match="freed"):
        _ = y.grad_fn._saved_self


def test_node_classes_and_name():
    x = leaf(2)
    y = 2 * x
    assert type(y.grad_fn).__name__ == "MulBackward0" and y.grad_fn.name() == "MulBackward0"
    assert isinstance(y.grad_fn, pyframe.autograd.graph.Node)
    acc = y.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is x
    y.grad_fn.metadata["tag"] = 1
    assert y.grad_fn.metadata == {"tag": 1}


def test_pack_and_unpack_hooks_apply():
    packed, unpacked = [], []

    def pack(t):
        packed.append(t)
        return ("box", t)

    def unpack(p):
        unpacked.append(p)
        return p[1]

    x, w = leaf(3), leaf(3)
    with saved_tensors_hooks(pack, unpack):
        y = x * w
    assert len(packed) == 2 and packed[0] is x and packed[1] is w
    assert y.grad_fn._saved_self is x and len(unpacked) == 1
    y.sum().backward()
    assert len(unpacked) == 3  # backward read both
    assert np.allclose(x.grad.numpy(), w.detach().numpy())


def test_unpack_result_is_what_backward_uses():
    x = leaf(3)
    with saved_tensors_hooks(lambda t: t, lambda t: t * 10):
        y = x * x
    y.sum().backward()
    # d(x*x)/dx = self*g + other*g, each read through the unpack hook: 2 * 10x
    assert np.allclose(x.grad.numpy(), 20 * x.detach().numpy())
    assert np.array_equal(x.detach().numpy(), x.detach().numpy())  # x itself unchanged after backward


def test_unpack_of_the_wrong_shape_raises():
    x = leaf(3)
    with saved_tensors_hooks(lambda t: t, lambda t: pyframe.zeros(2, dtype=F64)):
        y = x.sin()
    with pytest.raises(RuntimeError, match="unpack hook returned"):
        y.sum().backward()
    assert x.shape == (3,)


def test_hooks_nest_and_close():
    seen = []
    x = leaf(2)
    with saved_tensors_hooks(lambda t: seen.append("outer") or t, lambda t: t):
        with saved_tensors_hooks(lambda t: seen.append("inner") or t, lambda t: t):
            _ = x.sin()
        _ = x.cos()
    _ = x.tan()
    assert seen == ["inner", "outer"]


def test_save_on_cpu_and_disable():
    x = leaf(4)
    with save_on_cpu(pin_memory=True):
        y = (x * x).sum()
    y.backward()
    assert np.allclose(x.grad.numpy(), 2 * x.detach().numpy())
    hooks = saved_tensors_hooks(lambda t: t, lambda t: t)
    with disable_saved_tensors_hooks("no hooks here"), pytest.raises(RuntimeError, match="no hooks here"):
        hooks.__enter__()


def test_against_torch():
    torch = pytest.importorskip("torch")
    counts = {}
    for lib in (torch, pyframe):
        n = [0, 0]

        def pack(t, n=n):
            n[0] += 1
            return t

        def unpack(t, n=n):
            n[1] += 1
            return t

        x = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = (x * x).sum()
        y.backward()
        counts[lib.__name__] = (n, type(y.grad_fn).__name__, x.grad.tolist())
    assert counts["torch"] == counts["pyframe"]


def test_pack_hook_that_computes_runs_without_recording():
    # torch's tutorial: pack scales the saved tensor, unpack scales it back; the pack hook's own op must not
    # save (and so pack) again
    x = pyframe.randn(5, requires_grad=True)
    seen = []

    def pack(t):
        seen.append(pyframe.is_grad_enabled())
        return t * 4

    with pyframe.autograd.graph.saved_tensors_hooks(pack, lambda t: t / 4):
        y = pyframe.pow(x, 2)
    y.sum().backward()
    assert seen and not any(seen)
    assert pyframe.allclose(x.grad, 2 * x)
