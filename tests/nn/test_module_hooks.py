"""Per-module hooks: forward pre, forward and full backward (pre) hooks in torch's order with torch's
arguments, kwargs, hooks added by hooks, always_call, prepend, handles, returned values checked, in-place
legality and aliasing with hooks, hooks put in the dicts by hand."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pyframe
import pyframe.nn as nn
from tests._helpers import arr
from tests._oracle import needs_torch, torch


def test_forward_missing_and_fast_path():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(1)
    lin = nn.Linear(2, 2)
    y = lin(pyframe.randn(1, 2, requires_grad=True))
    assert y.grad_fn.name != "BackwardHookFunctionBackward"


def _hook_model(lib_nn):
    return lib_nn.Sequential(lib_nn.Linear(3, 4), lib_nn.ReLU(), lib_nn.Linear(4, 2), lib_nn.Tanh())


def _fmt(t):
    return None if t is None else np.round(arr(t).astype(np.float64), 5).tolist()


def _record_hooks(lib, lib_nn, x_requires_grad: bool, modify: bool):
    """Registers every kind of hook on every submodule; returns the call log of a forward and a
    backward, plus the input's gradient."""
    rng = np.random.default_rng(0)
    m = _hook_model(lib_nn)
    with lib.no_grad():
        for p in m.parameters():
            p.copy_(lib.from_numpy(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    log = []
    for name, sub in m.named_modules():
        n = name or "root"
        sub.register_forward_pre_hook(lambda mod, args, n=n: log.append(("fpre", n, [_fmt(a) for a in args])))
        sub.register_forward_hook(lambda mod, args, out, n=n: log.append(("fwd", n, _fmt(out))))
        sub.register_forward_pre_hook(lambda mod, args, kw, n=n: log.append(("fpre_kw_first", n, kw)),
                                      with_kwargs=True, prepend=True)  # fmt: skip
        sub.register_forward_hook(lambda mod, args, kw, out, n=n: log.append(("fwd_kw", n, kw)), with_kwargs=True)

        def bpre(mod, go, n=n):
            log.append(("bpre", n, [_fmt(g) for g in go]))
            if modify and n == "2":
                return tuple(g * 2 for g in go)

        def bwd(mod, gi, go, n=n):
            log.append(("bwd", n, [_fmt(g) for g in gi], [_fmt(g) for g in go]))
            if modify and n == "1":
                return tuple(None if g is None else g.clamp(-0.1, 0.1) for g in gi)

        sub.register_full_backward_pre_hook(bpre)
        sub.register_full_backward_hook(bwd)
        sub.register_full_backward_pre_hook(lambda mod, go, n=n: log.append(("bpre_first", n)), prepend=True)
    x = lib.from_numpy(rng.standard_normal((5, 3)).astype(np.float32))
    x.requires_grad_(x_requires_grad)
    out = m(x)
    out.sum().backward()
    return log, _fmt(x.grad), [_fmt(p.grad) for p in m.parameters()]


@needs_torch
@pytest.mark.parametrize("x_requires_grad", [True, False])
@pytest.mark.parametrize("modify", [False, True])
def test_hook_order_and_arguments_match_torch(x_requires_grad, modify):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns when no input requires grad; pyframe does not
        expected = _record_hooks(torch, torch.nn, x_requires_grad, modify)
    got = _record_hooks(pyframe, nn, x_requires_grad, modify)
    assert got[0] == expected[0]
    assert got[1:] == expected[1:]


def _multi_io(lib, lib_nn):
    class Split(lib_nn.Module):
        def forward(self, a, scale, b, c):
            return a * scale + b, (a * b).sum(1), c.long()

    m = Split()
    rng = np.random.default_rng(1)
    a = lib.from_numpy(rng.standard_normal((2, 3)).astype(np.float32)).requires_grad_()
    b = lib.from_numpy(rng.standard_normal((2, 3)).astype(np.float32))
    c = lib.from_numpy(rng.standard_normal((2, 3)).astype(np.float32)).requires_grad_()
    log = []
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("pre", [_fmt(g) for g in go])))
    m.register_full_backward_hook(
        lambda mod, gi, go: log.append(("post", [_fmt(g) for g in gi], [_fmt(g) for g in go]))
    )
    out = m(a, 3.0, b, c)
    assert isinstance(out, tuple) and len(out) == 3
    (out[0].sum() + out[1].sum() * 2).backward()
    return log, _fmt(a.grad), _fmt(c.grad)


def _none_where_no_grad(got, expected):
    """API.md: pyframe gives None for an input that gets no gradient, where torch sometimes gives
    zeros; anything else must be equal."""
    if got is None and expected is not None:
        assert not np.any(expected), expected
        return None
    if isinstance(got, (list, tuple)) and isinstance(expected, (list, tuple)) and len(got) == len(expected):
        return type(expected)(_none_where_no_grad(g, e) for g, e in zip(got, expected, strict=True))
    return expected


@needs_torch
def test_multi_input_output_backward_hooks_match_torch():
    got, expected = _multi_io(pyframe, nn), _multi_io(torch, torch.nn)
    post = got[0][1]
    assert post[1][1:] == [None, None, None]  # 3.0 is not a tensor, b needs no grad, c.long() has none
    assert got == _none_where_no_grad(got, expected)


@needs_torch
def test_forward_hook_returns_and_kwargs_match_torch():
    def run(lib, lib_nn):
        class Scale(lib_nn.Module):
            def forward(self, x, factor=1.0):
                return x * factor

        m = Scale()
        m.register_forward_pre_hook(lambda mod, args: args[0] + 1)  # non-tuple: wrapped
        m.register_forward_pre_hook(lambda mod, args, kw: (args, {"factor": kw["factor"] * 10}), with_kwargs=True)
        m.register_forward_hook(lambda mod, args, out: out - 1)
        m.register_forward_hook(lambda mod, args, kw, out: out * kw["factor"], with_kwargs=True)
        return _fmt(m(lib.ones(2), factor=2.0))

    assert run(pyframe, nn) == run(torch, torch.nn)


@needs_torch
def test_hooks_added_by_hooks_match_torch():
    def run(lib, lib_nn):
        m = lib_nn.Identity()
        log = []

        def pre(mod, args):
            log.append("pre")
            mod.register_forward_hook(lambda *a: log.append("added fwd"))

        h = m.register_forward_pre_hook(pre)
        m(lib.ones(1))
        h.remove()
        m(lib.ones(1))
        return log

    assert run(pyframe, nn) == run(torch, torch.nn) == ["pre", "added fwd", "added fwd"]


def test_pre_hook_with_kwargs_must_return_a_pair():
    m = nn.Identity()
    m.register_forward_pre_hook(lambda mod, args, kw: args, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of"):
        m(pyframe.ones(1))


def test_always_call_and_handles():
    class Failing(nn.Module):
        def forward(self, x, **kwargs):
            raise ValueError("forward failed")

    m = Failing()
    seen = []
    m.register_forward_hook(lambda mod, args, out: seen.append(("plain", out)))
    m.register_forward_hook(lambda mod, args, out: seen.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, kw, out: seen.append(("always_kw", kw, out)), always_call=True,
                            with_kwargs=True)  # fmt: skip

    def bad(mod, args, out):
        raise KeyError("hook failed too")

    m.register_forward_hook(bad, always_call=True)
    with pytest.raises(ValueError, match="forward failed"), pytest.warns(UserWarning, match="silenced"):
        m(pyframe.ones(1), flag=1)
    assert seen == [("always", None), ("always_kw", {"flag": 1}, None)]
    # handles: remove, context manager, idempotent
    lin = nn.Linear(1, 1)
    calls = []
    h = lin.register_forward_hook(lambda *a: calls.append(1))
    with lin.register_forward_pre_hook(lambda *a: calls.append(0)):
        lin(pyframe.ones(1, 1))
    lin(pyframe.ones(1, 1))
    h.remove()
    h.remove()
    lin(pyframe.ones(1, 1))
    assert calls == [0, 1, 1]
    assert not (lin._forward_hooks or lin._forward_pre_hooks or lin._forward_hooks_with_kwargs)
    m2 = nn.Identity()
    h = m2.register_forward_hook(lambda *a: None, with_kwargs=True, always_call=True)
    h.remove()
    assert not (m2._forward_hooks_with_kwargs or m2._forward_hooks_always_called)


def test_prepend_orders_within_module():
    m = nn.Identity()
    order = []
    m.register_forward_pre_hook(lambda *a: order.append("pre1"))
    m.register_forward_pre_hook(lambda *a: order.append("pre0"), prepend=True)
    m.register_forward_hook(lambda *a: order.append("fwd1"))
    m.register_forward_hook(lambda *a: order.append("fwd0"), prepend=True)
    m.register_full_backward_hook(lambda *a: order.append("bwd1"))
    m.register_full_backward_hook(lambda *a: order.append("bwd0"), prepend=True)
    m.register_backward_hook(lambda *a: order.append("bwd2"))
    m.register_full_backward_pre_hook(lambda *a: order.append("bpre1"))
    m.register_full_backward_pre_hook(lambda *a: order.append("bpre0"), prepend=True)
    m(pyframe.ones(2, requires_grad=True)).sum().backward()
    assert order == ["pre0", "pre1", "fwd0", "fwd1", "bpre0", "bpre1", "bwd0", "bwd1", "bwd2"]


def test_backward_hook_returns_are_checked():
    m = nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (None, None))
    with pytest.raises(RuntimeError, match="invalid number of grad_input, got 2, but expected 1"):
        m(pyframe.ones(1, 2, requires_grad=True)).sum().backward()
    m = nn.Linear(2, 2)
    m.register_full_backward_pre_hook(lambda mod, go: ())
    with pytest.raises(RuntimeError, match="invalid number of grad_output, got 0, but expected 1"):
        m(pyframe.ones(1, 2)).sum().backward()
    m = nn.Linear(2, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (pyframe.ones(1, 2),))
    with pytest.raises(RuntimeError, match="no input requires gradient"):
        m(pyframe.ones(1, 2)).sum().backward()


def test_backward_hooks_fixed_at_forward_and_no_grad():
    m = nn.Linear(2, 2)
    calls = []
    h = m.register_full_backward_hook(lambda *a: calls.append(1))
    y = m(pyframe.ones(1, 2, requires_grad=True))
    h.remove()  # as torch: hooks are captured when forward runs
    y.sum().backward()
    assert calls == [1]
    m.register_full_backward_hook(lambda *a: calls.append(2))
    with pyframe.no_grad():
        y = m(pyframe.ones(1, 2, requires_grad=True))
    assert y.grad_fn is None and calls == [1]


def test_inplace_after_hooked_module_is_legal():
    """pyframe's module boundary is a pass-through node, not a view (torch raises here, #61519)."""
    seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU(inplace=True))
    seen = []
    seq[0].register_full_backward_hook(lambda mod, gi, go: seen.append(_fmt(go[0])))
    x = pyframe.randn(2, 3, requires_grad=True)
    y = seq(x)
    y.sum().backward()
    assert len(seen) == 1 and x.grad is not None
    mask = (arr(seq[0](x)) > 0).astype(np.float64)
    np.testing.assert_allclose(seen[0], mask)


def test_inplace_legality_is_unchanged_by_hooks():
    for hooked in (False, True):
        m = nn.Identity()
        if hooked:
            m.register_full_backward_hook(lambda *a: None)
        leaf = pyframe.randn(3, requires_grad=True)
        with pytest.raises(RuntimeError):
            m(leaf).mul_(2)  # a leaf that requires grad (torch raises too)
        with pytest.raises(RuntimeError):
            m((leaf * 2)[1:]).mul_(2)  # a view of a tensor in the graph
        y = m(leaf * 2)
        y.mul_(3)
        y.sum().backward()
        np.testing.assert_allclose(arr(leaf.grad), [6.0, 6.0, 6.0])


def test_hooked_output_aliases_without_copy():
    m = nn.Identity()
    m.register_full_backward_hook(lambda *a: None)
    x = pyframe.randn(3, requires_grad=True) * 1
    y = m(x)
    assert y is not x and y.data_ptr() == x.data_ptr() and y._base is None
    assert y.grad_fn.name == "BackwardHookFunctionBackward"


def test_dict_and_list_outputs_get_backward_hooks():
    class DictOut(nn.Module):
        def forward(self, x):
            return {"a": x * 2, "n": 3, "b": [x]}

    class ListOut(nn.Module):
        def forward(self, x):
            return [x * 2, x * 3]

    seen = []
    d, lst = DictOut(), ListOut()
    d.register_full_backward_hook(lambda mod, gi, go: seen.append(("dict", _fmt(gi[0]), _fmt(go[0]), go[1:])))
    lst.register_full_backward_hook(lambda mod, gi, go: seen.append(("list", _fmt(gi[0]), len(go))))
    x = pyframe.ones(2, requires_grad=True)
    out = d(x)
    assert list(out) == ["a", "n", "b"] and out["n"] == 3
    out["a"].sum().backward()
    ys = lst(x)
    assert isinstance(ys, list)
    (ys[0] + ys[1]).sum().backward()
    assert seen == [("dict", [2.0, 2.0], [1.0, 1.0], (None, None)), ("list", [5.0, 5.0], 2)]
    with pytest.warns(UserWarning, match="module output should be"):

        class IntOut(nn.Module):
            def forward(self, x):
                return 3

        m = IntOut()
        m.register_full_backward_hook(lambda *a: None)
        assert m(x) == 3


def test_hooks_run_whether_registered_or_put_in_the_dicts_by_hand():
    # __call__ reads the hook dicts themselves: a removed hook never runs, and one some code
    # put straight into m._forward_hooks (as torch allows) does
    m = nn.Linear(2, 2)
    calls = []
    h = m.register_forward_hook(lambda mod, args, out: calls.append("registered"))
    m(pyframe.randn(1, 2))
    h.remove()
    m(pyframe.randn(1, 2))
    assert calls == ["registered"]
    m._forward_hooks[12345] = lambda mod, args, out: calls.append("by hand")
    m._forward_pre_hooks[12346] = lambda mod, args: calls.append("pre by hand")
    m(pyframe.randn(1, 2))
    assert calls == ["registered", "pre by hand", "by hand"]
