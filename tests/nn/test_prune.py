"""nn.utils.prune against torch.nn.utils.prune: the same masks from the same weights, the
same parameter/buffer/hook layout, the same registration events seen by global hooks, and
errors that leave the module unchanged."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf
import pyframe.nn as nn
import pyframe.nn.utils.prune as prune
from pyframe.nn.modules.module import (
    register_module_buffer_registration_hook,
    register_module_parameter_registration_hook,
)

torch = pytest.importorskip("torch")
tprune = pytest.importorskip("torch.nn.utils.prune")


class Net:
    """The same small model built in either library, torch's weights copied into pyframe's."""

    @staticmethod
    def build(n):
        return n.Sequential(n.Conv2d(2, 6, 3), n.ReLU(), n.Flatten(), n.Linear(6 * 4 * 4, 10), n.Linear(10, 3))


def twins():
    torch.manual_seed(0)
    t, p = Net.build(torch.nn).double(), Net.build(nn).double()
    with pf.no_grad():
        for a, b in zip(p.parameters(), t.parameters(), strict=True):
            a.copy_(pf.tensor(b.detach().numpy()))
    return t, p


def same(p_t, t_t):
    np.testing.assert_allclose(p_t.detach().numpy(), t_t.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "how",
    [
        lambda pr, m: pr.l1_unstructured(m[0], "weight", amount=0.3),
        lambda pr, m: pr.l1_unstructured(m[3], "weight", amount=17),
        lambda pr, m: pr.ln_structured(m[0], "weight", amount=0.5, n=2, dim=0),
        lambda pr, m: pr.ln_structured(m[3], "weight", amount=3, n=1, dim=1),
        lambda pr, m: (pr.l1_unstructured(m[0], "weight", 0.2), pr.ln_structured(m[0], "weight", 2, n=2, dim=0),
                       pr.l1_unstructured(m[0], "weight", 0.25)),
        lambda pr, m: (pr.ln_structured(m[3], "weight", 4, n=float("inf"), dim=0),
                       pr.l1_unstructured(m[3], "weight", 0.5)),
        lambda pr, m: pr.global_unstructured([(m[0], "weight"), (m[3], "weight"), (m[4], "bias")],
                                             pruning_method=pr.L1Unstructured, amount=0.4),
        lambda pr, m: pr.l1_unstructured(m[3], "weight", 0.2, importance_scores=m[3].weight * m[3].weight.sign()),
    ],
    ids=["l1", "l1_count", "ln_dim0", "ln_dim1", "container3", "ln_inf_then_l1", "global", "importance"],
)  # fmt: skip
def test_masks_match_torch(how):
    t, p = twins()
    how(tprune, t)
    how(prune, p)
    assert [k for k, _ in p.named_parameters()] == [k for k, _ in t.named_parameters()]
    assert [k for k, _ in p.named_buffers()] == [k for k, _ in t.named_buffers()]
    for (_, pb), (_, tb) in zip(p.named_buffers(), t.named_buffers(), strict=True):
        same(pb, tb)
    x = np.random.default_rng(0).standard_normal((2, 2, 6, 6))
    px, tx = pf.tensor(x), torch.tensor(x)
    po, to = p(px), t(tx)
    same(po, to)
    po.sum().backward()
    to.sum().backward()
    for (_, a), (_, b) in zip(p.named_parameters(), t.named_parameters(), strict=True):
        same(a.grad, b.grad)
    for m_p, m_t in zip(p, t, strict=True):
        for name in ("weight", "bias"):
            if hasattr(m_t, name + "_orig"):
                tprune.remove(m_t, name)
                prune.remove(m_p, name)
    assert not prune.is_pruned(p)
    assert [k for k, _ in p.named_parameters()] == [k for k, _ in t.named_parameters()]
    for a, b in zip(p.parameters(), t.parameters(), strict=True):
        same(a, b)


def test_layout_history_and_custom_method():
    m = nn.Linear(8, 4)
    prune.random_unstructured(m, "weight", amount=0.25)
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight_orig"]
    assert [n for n, _ in m.named_buffers()] == ["weight_mask"]
    assert int((m.weight_mask == 0).sum()) == 8 and len(m._forward_pre_hooks) == 1
    prune.random_structured(m, "weight", amount=1, dim=0)
    (hook,) = m._forward_pre_hooks.values()
    assert isinstance(hook, prune.PruningContainer) and [type(h).__name__ for h in hook] == [
        "RandomUnstructured", "RandomStructured"]  # fmt: skip
    assert int((m.weight.abs().sum(1) == 0).sum()) >= 1

    class PruneNegative(prune.BasePruningMethod):  # a mask that depends on the values (the tutorial's is fixed)
        PRUNING_TYPE = "unstructured"

        def compute_mask(self, t, default_mask):
            return default_mask * (t >= 0)

    with pf.no_grad():
        m.bias.copy_(pf.tensor([-1.0, 2.0, 0.0, -3.0]))
    PruneNegative.apply(m, "bias")
    np.testing.assert_array_equal(m.bias_mask.numpy(), [0, 1, 1, 0])
    np.testing.assert_array_equal(m.bias.detach().numpy(), [0, 2, 0, 0])
    prune.identity(m, "bias")  # a container of two, the second keeps everything
    np.testing.assert_array_equal(m.bias_mask.numpy(), [0, 1, 1, 0])
    with pf.no_grad():
        m.weight_orig.fill_(1.0)
    m(pf.randn(2, 8))  # the forward pre-hook recomputes weight
    np.testing.assert_array_equal(m.weight.detach().numpy(), m.weight_mask.numpy())
    prune.custom_from_mask(m, "weight", pf.zeros(4, 8))
    assert float(m.weight.abs().sum()) == 0.0
    assert prune.is_pruned(nn.Sequential(nn.ReLU(), m))


def test_global_hooks_see_torchs_registrations():
    def events(lib, pr, rp, rb):
        ev = []
        h1 = rp(lambda mod, name, val: ev.append(("param", name)))
        h2 = rb(lambda mod, name, val: ev.append(("buffer", name)))
        try:
            m = lib.Linear(3, 4)
            ev.clear()
            pr.l1_unstructured(m, "weight", 2)
            pr.l1_unstructured(m, "weight", 1)
            pr.remove(m, "weight")
        finally:
            h1.remove()
            h2.remove()
        return ev

    from torch.nn.modules.module import register_module_buffer_registration_hook as trb
    from torch.nn.modules.module import register_module_parameter_registration_hook as trp

    assert events(nn, prune, register_module_parameter_registration_hook, register_module_buffer_registration_hook) \
        == events(torch.nn, tprune, trp, trb)  # fmt: skip


def test_bad_input_leaves_module_unchanged():
    m = nn.Linear(3, 4)
    with pytest.raises(ValueError, match="should be smaller than the number of parameters"):
        prune.l1_unstructured(m, "weight", amount=13)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"] and not m._forward_pre_hooks
    assert [n for n, _ in m.named_buffers()] == []
    with pytest.raises(ValueError, match="float in the range"):
        prune.l1_unstructured(m, "weight", amount=1.5)
    with pytest.raises(TypeError, match="Invalid type for amount"):
        prune.random_unstructured(m, "weight", amount="half")
    with pytest.raises(ValueError, match="multidimensional"):
        prune.ln_structured(m, "bias", amount=1, n=2, dim=0)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"] and not m._forward_pre_hooks
    with pytest.raises(IndexError, match="Invalid index 2"):
        prune.ln_structured(m, "weight", amount=1, n=2, dim=2)
    with pytest.raises(ValueError, match="has to be pruned before"):
        prune.remove(m, "weight")
    with pytest.raises(TypeError, match='Only "unstructured"'):
        prune.global_unstructured([(m, "weight")], pruning_method=prune.LnStructured, amount=1, n=2, dim=0)
    with pytest.raises(TypeError, match="not an Iterable"):
        prune.global_unstructured(5, pruning_method=prune.L1Unstructured, amount=1)
    prune.l1_unstructured(m, "weight", amount=2)
    before = m.weight_mask.clone()
    with pytest.raises(ValueError, match="should be smaller"):
        prune.l1_unstructured(m, "weight", amount=11)  # 10 left unpruned
    np.testing.assert_array_equal(m.weight_mask.numpy(), before.numpy())
    assert len(m._forward_pre_hooks) == 1
    assert [type(h).__name__ for h in m._forward_pre_hooks.values()] in (["L1Unstructured"], ["PruningContainer"])
    for hook in m._forward_pre_hooks.values():
        assert len(getattr(hook, "_pruning_methods", (hook,))) == 1


def test_refused_mask_registration_changes_nothing():
    m = nn.Linear(3, 4)

    def refuse(module, name, value):
        if name.endswith("_mask"):
            raise RuntimeError("no masks here")

    h = register_module_buffer_registration_hook(refuse)
    try:
        with pytest.raises(RuntimeError, match="no masks here"):
            prune.l1_unstructured(m, "weight", amount=2)
    finally:
        h.remove()
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    assert not m._forward_pre_hooks and not list(m.named_buffers()) and "weight" not in m.__dict__
