"""What the graph keeps alive and for how long: a node's saved tensors go when its backward has run
(unless retain_graph), nodes keep only what their backward reads (as torch's), dropout keeps a byte
per element, and the allocator's counters and huge-page advice. Measured with the core allocator's
live-bytes counter (``_backend.memory_stats``) and weak references, so nothing depends on the load."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import pyframe
import pyframe.nn.functional as F
from pyframe import _backend

N = 1 << 16  # elements: 256 KiB of float32, well above the 64 KiB under which Python's allocator serves


def live() -> int:
    gc.collect()
    return _backend.memory_stats()[0]


def _counting() -> bool:
    t = pyframe.empty(N)  # noqa: F841 - alive while the counters are read
    return _backend.memory_stats()[0] > 0


pytestmark = pytest.mark.skipif(not _counting(), reason="no allocator counters (AddressSanitizer build)")


def test_saved_tensors_freed_after_backward_unless_retained():
    x = pyframe.randn(N, requires_grad=True)
    base = live()
    y = x.exp().sin().tanh()  # each node saves an intermediate of N floats
    kept = live() - base
    # exp's result (which is sin's input) and tanh's result (y); sin's result is read by nobody's backward and
    # is not kept, as torch's
    assert 2 * 4 * N <= kept < 3 * 4 * N
    y.sum().backward(retain_graph=True)
    assert live() - base >= kept  # retained: every saved tensor is still there (plus x.grad)
    g1 = x.grad.clone()
    y.sum().backward()  # a second pass works, and frees them
    np.testing.assert_allclose(x.grad.numpy(), 2 * g1.numpy(), rtol=1e-6)
    x.grad = None
    del g1
    # only y (N floats) is left: the graph's saved tensors went with its single backward
    assert live() - base <= 4 * N + 4096
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


def test_saved_tensor_dies_with_its_node_run():
    x = pyframe.randn(N, requires_grad=True)
    h = x.exp()
    ref = weakref.ref(h)
    y = h.sin()  # sin's node saves h
    del h
    assert ref() is not None
    y.sum().backward()
    assert ref() is None


@pytest.mark.parametrize("op", ["mul", "div"])
def test_product_with_a_constant_keeps_only_what_backward_reads(op):
    x = pyframe.randn(N, requires_grad=True)
    c = pyframe.rand(N) + 1.0
    h = x * 2.0
    ref = weakref.ref(h)
    y = getattr(pyframe, op)(h, c)
    # as torch: the gradient of h reads only c, so h is neither kept nor version-checked
    assert y.grad_fn._saved_self is None and y.grad_fn._saved_other is c
    del h
    assert ref() is None
    y.sum().backward()
    expect = 2.0 * c.numpy() if op == "mul" else 2.0 / c.numpy()
    np.testing.assert_allclose(x.grad.numpy(), expect, rtol=1e-6)
    # and the other way round: a constant times x keeps the constant only (its gradient reads it)
    z = pyframe.mul(c, x)
    assert z.grad_fn._saved_self is c and z.grad_fn._saved_other is None


def test_in_place_change_of_an_unread_operand_is_legal():
    torch = pytest.importorskip("torch")
    grads = []
    for lib in (torch, pyframe):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        c = lib.tensor([4.0, 5.0, 6.0])
        h = x * 1.0
        y = h * c
        h.add_(1.0)  # y's node does not read h: backward is still right
        y.sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1] == [4.0, 5.0, 6.0]


def test_views_and_where_do_not_keep_their_input():
    x = pyframe.randn(64, N // 64, requires_grad=True)
    h = x * 2.0
    ref = weakref.ref(h)
    v = h.reshape(-1)[: N // 2].unsqueeze(0).expand(3, -1)
    del h
    assert ref() is not None  # the view shares its memory: alive while v is
    s = v.sum()
    del v
    assert ref() is None  # the view nodes keep shapes, not the tensor
    s.backward()
    expect = np.zeros(N, dtype=np.float32)
    expect[: N // 2] = 6.0
    np.testing.assert_array_equal(x.grad.numpy().reshape(-1), expect)

    x.grad = None
    h = x * 2.0
    ref = weakref.ref(h)
    w = pyframe.where(h > 0, h, pyframe.zeros(()))
    del h
    assert ref() is None  # where's backward reads only the condition
    w.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(x.detach().numpy() > 0, 2.0, 0.0).astype(np.float32))


def test_dropout_keeps_a_byte_mask():
    x = pyframe.randn(N, requires_grad=True)
    h = x * 1.0
    base = live()
    y = F.dropout(h, 0.5)
    del h
    # the output (4 bytes an element) and a bool mask (1 byte): not the input, not a float mask
    held = live() - base + 4 * N  # h (freed now) was counted in base
    assert held <= 4 * N + N + 8192, held
    y.sum().backward()
    kept = y.detach().numpy() != 0
    np.testing.assert_allclose(x.grad.numpy(), np.where(kept, 2.0, 0.0), rtol=1e-6)


def test_gelu_keeps_only_its_input():
    x = pyframe.randn(N, requires_grad=True)
    h = x * 1.0
    base = live()
    y = F.gelu(h)
    assert live() - base <= 4 * N + 4096  # the output alone: backward recomputes the gate from h
    y.sum().backward()
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(x.detach().numpy().copy()).requires_grad_()
    torch.nn.functional.gelu(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_allocator_counters():
    pyframe.empty_cache()
    base, _, cached = _backend.memory_stats()
    assert cached == 0
    _backend.reset_peak_memory()
    a = pyframe.empty(N)  # class 256 KiB
    b = pyframe.empty(N + 1)  # 256 KiB + 4 bytes: the next class, 320 KiB
    now, peak, _ = _backend.memory_stats()
    assert now - base == 256 * 1024 + 320 * 1024 and peak == now
    del a
    gc.collect()
    now, peak, cached = _backend.memory_stats()
    assert now - base == 320 * 1024 and peak - base == 576 * 1024 and cached == 256 * 1024
    del b
    pyframe.empty_cache()
    assert _backend.memory_stats()[0] == base and _backend.memory_stats()[2] == 0


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def test_large_block_costs_about_its_size():
    # 6.3 MB, as an attention matrix of nanoGPT's: its size class is 7 MiB in an 8 MiB block; huge pages
    # advised over the whole block made all 8 MiB resident, now only the whole 2 MiB pages it writes are
    pyframe.empty_cache()
    n = 4 * 6 * 256 * 256
    before = _rss()
    t = pyframe.ones(n)
    grown = _rss() - before
    assert t[-1].item() == 1.0
    assert grown <= 4 * n + (1 << 20), grown


def test_gradients_meeting_at_a_node_add_up_right():
    # the engine adds a second gradient into the first in place when only it holds that tensor; a gradient
    # handed to two inputs (h + h), a root gradient the caller holds, or one seen by a hook is never written
    x = pyframe.tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = x * 3.0
    seen = []
    h.register_hook(lambda g: seen.append(g.clone()))
    y = h.exp() + h.sin() + h * h + (h + h)
    gy = pyframe.ones(3)
    y.backward(gy)
    hv = 3.0 * x.detach().numpy()
    expect = np.exp(hv) + np.cos(hv) + 2 * hv + 2.0
    np.testing.assert_allclose(seen[0].numpy(), expect, rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), 3.0 * expect, rtol=1e-6)
    assert gy.tolist() == [1.0, 1.0, 1.0]
    # retain_graph: the same gradients twice, accumulated into .grad
    x.grad = None
    h = x * 3.0
    z = (h * h).sum() + h.sum()
    z.backward(retain_graph=True)
    first = x.grad.clone()
    z.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * first.numpy(), rtol=1e-6)


# ops whose backward reads their own output (as a SavedOutput): (name, function of a float64 3x3 leaf)
_READ_THEIR_OUTPUT = {
    "exp": lambda L, x: L.exp(x),
    "sigmoid": lambda L, x: L.sigmoid(x),
    "tanh": lambda L, x: L.tanh(x),
    "relu": lambda L, x: L.relu(x - 0.5),
    "sqrt": lambda L, x: L.sqrt(x),
    "pow": lambda L, x: L.pow(x, x),
    "prod": lambda L, x: x.prod(1),
    "amax": lambda L, x: x.amax(1),
    "max": lambda L, x: x.max(),
    "std": lambda L, x: x.std(0),
    "norm": lambda L, x: x.norm(),
    "softmax": lambda L, x: x.softmax(1),
    "log_softmax": lambda L, x: x.log_softmax(0),
    "cumprod": lambda L, x: x.cumprod(1),
    "logcumsumexp": lambda L, x: L.logcumsumexp(x, 0),
    "inv": lambda L, x: L.linalg.inv(x + 3 * L.eye(3, dtype=x.dtype)),
    "det": lambda L, x: L.linalg.det(x + 3 * L.eye(3, dtype=x.dtype)),
    "cholesky": lambda L, x: L.linalg.cholesky(x @ x.mT + L.eye(3, dtype=x.dtype)),
    "solve": lambda L, x: L.linalg.solve(x + 3 * L.eye(3, dtype=x.dtype), x),
    "qr": lambda L, x: L.linalg.qr(x)[1],
    "eigh": lambda L, x: L.linalg.eigh(x + x.mT)[0],
    "svd": lambda L, x: L.linalg.svd(x)[1],
    "svdvals": lambda L, x: L.linalg.svdvals(x),
    "eigvalsh": lambda L, x: L.linalg.eigvalsh(x + x.mT),
    "lu": lambda L, x: L.linalg.lu(x)[2],
    "solve_triangular": lambda L, x: L.linalg.solve_triangular(x.triu() + 2 * L.eye(3, dtype=x.dtype), x, upper=True),
    "cholesky_solve": lambda L, x: L.cholesky_solve(x, x.tril() + 2 * L.eye(3, dtype=x.dtype)),
    "cholesky_inverse": lambda L, x: L.cholesky_inverse(x.tril() + 2 * L.eye(3, dtype=x.dtype)),
    "pinv hermitian": lambda L, x: L.linalg.pinv(x + x.mT, hermitian=True),
    "expm1": lambda L, x: L.expm1(x),
    "erfinv": lambda L, x: L.erfinv(x - 0.5),
}
_X = np.array([[0.3, 0.9, 0.5], [1.2, 0.4, 0.7], [0.6, 0.8, 1.1]])


@pytest.mark.parametrize("name", list(_READ_THEIR_OUTPUT))
def test_graph_dropped_without_backward_is_freed_without_the_cyclic_gc(name):
    # a node saves its output without owning it (torch's SavedVariable of an output): no cycle
    # output -> grad_fn -> backward -> output, so plain reference counting frees the graph
    x = pyframe.tensor(_X, requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        out = _READ_THEIR_OUTPUT[name](pyframe, x)
        refs = [weakref.ref(out), weakref.ref(out.grad_fn)]
        del out
        assert [r() for r in refs] == [None, None]
        assert gc.collect() == 0
    finally:
        gc.enable()


def test_dropped_graph_frees_its_memory_without_the_cyclic_gc():
    x = pyframe.randn(N, requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        base = _backend.memory_stats()[0]
        y = x.exp().sigmoid().tanh().softmax(0)  # four results of N floats, each saved by its own node
        assert _backend.memory_stats()[0] - base >= 4 * 4 * N
        del y
        assert _backend.memory_stats()[0] == base
    finally:
        gc.enable()


@pytest.mark.parametrize("name", list(_READ_THEIR_OUTPUT))
def test_double_backward_through_a_saved_output_matches_torch(name):
    torch = pytest.importorskip("torch")
    got = []
    for lib in (pyframe, torch):
        x = lib.tensor(_X, requires_grad=True)
        out = _READ_THEIR_OUTPUT[name](lib, x)
        (g,) = lib.autograd.grad((out * out).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        got.append((g.detach().numpy(), gg.numpy()))
    np.testing.assert_allclose(got[0][0], got[1][0], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(got[0][1], got[1][1], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("layer", ["LSTM", "GRU", "RNN", "LSTMCell"])
def test_recurrent_graph_dropped_without_backward_is_freed_without_the_cyclic_gc(layer):
    pyframe.manual_seed(0)
    m = getattr(pyframe.nn, layer)(4, 5) if layer == "LSTMCell" else getattr(pyframe.nn, layer)(4, 5, 2)
    x = pyframe.randn(*((2, 4) if layer == "LSTMCell" else (3, 2, 4)), requires_grad=True)
    gc.collect()
    gc.disable()
    try:
        out = m(x)
        refs = [weakref.ref(t) for t in (out if isinstance(out, tuple) else (out,)) if isinstance(t, pyframe.Tensor)]
        del out
        assert refs and [r() for r in refs] == [None] * len(refs)
        assert gc.collect() == 0
    finally:
        gc.enable()
