"""Tests of the lora plugin on the GPT of tests/compat/programs/gpt.py: only the adapters train, merging folds them
in exactly, the adapter checkpoint is small, and the adapted forward is PEFT's formula (checked with torch)."""

from __future__ import annotations

import math
import re
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pyframe_lora as lora
import pytest

import pyframe
import pyframe.plugins.testing

PROGRAM = Path(__file__).resolve().parents[3] / "tests" / "compat" / "programs" / "gpt.py"
CONFIG = {"targets": ["*.c_attn", "*.c_proj"], "rank": 8, "alpha": 16.0, "dropout": 0.05}

_defaults = pyframe.plugins.testing.unconfigured_fixture(lora)


def gpt_module() -> types.ModuleType:
    """The program's classes (not its training run), its imports rewritten as a user porting it would."""
    if not PROGRAM.is_file():
        pytest.skip("tests/compat/programs/gpt.py is not here (the plugin tested outside pyframe's repository)")
    source = PROGRAM.read_text()
    source = source[: source.index("torch.manual_seed(1337)")]
    source = re.sub(r"^import torch\.nn as nn$", "import pyframe.nn as nn", source, flags=re.M)
    source = re.sub(r"^import torch$", "import pyframe as torch", source, flags=re.M)
    source = re.sub(r"^from torch\.nn import functional as F$", "from pyframe.nn import functional as F", source,
                    flags=re.M)  # fmt: skip
    module = types.ModuleType("lora_test_gpt")
    sys.modules[module.__name__] = module
    exec(compile(source, str(PROGRAM), "exec"), module.__dict__)
    return module


def build_gpt(**config):
    g = gpt_module()
    pyframe.manual_seed(0)
    return g.GPT(g.GPTConfig(**config))


def arrays(sd) -> dict:
    return {k: v.detach().numpy().copy() for k, v in sd.items()}


def batches(n, vocab=16, block=16, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = rng.integers(0, vocab, (8, block))
        yield pyframe.tensor(x), pyframe.tensor(np.roll(x, -1, axis=1))


def test_only_the_adapters_train_and_the_rest_stays_bit_identical():
    with pyframe.plugins.testing.activated(lora, "lora", **CONFIG):
        model = build_gpt()
        optimizer = model.configure_optimizers(0.1, 3e-3, (0.9, 0.95))  # right after the model, as scripts do
        trainable = sorted(n for n, p in model.named_parameters() if p.requires_grad)
        assert trainable == sorted(
            f"transformer.h.{i}.{layer}.parametrizations.weight.0.lora_{ab}"
            for i in (0, 1)
            for layer in ("attn.c_attn", "attn.c_proj", "mlp.c_proj")
            for ab in "AB"
        )
        before = arrays(model.state_dict())
        model.train()
        for x, y in batches(5):
            _, loss = model(x, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        after = arrays(model.state_dict())
    changed = sorted(k for k in before if not np.array_equal(before[k], after[k]))
    assert changed and all(k.endswith(("lora_A", "lora_B")) for k in changed)
    assert all(not np.array_equal(before[k], after[k]) for k in before if k.endswith("lora_B"))


def test_merged_model_equals_base_plus_adapters():
    with pyframe.plugins.testing.activated(lora, "lora", **CONFIG):
        model = build_gpt()
        opt = model.configure_optimizers(0.0, 1e-2, (0.9, 0.95))
        for x, y in batches(3):
            opt.zero_grad()
            model(x, y)[1].backward()
            opt.step()
        model.eval()
        expected = {}
        for name, ad in lora.adapters(model).items():
            m = model.get_submodule(name)
            w = m.parametrizations.weight.original.detach().numpy().astype(np.float64)
            a, b = ad.lora_A.detach().numpy().astype(np.float64), ad.lora_B.detach().numpy().astype(np.float64)
            assert np.abs(b).max() > 0  # trained: the check is not trivial
            expected[name + ".weight"] = w + (ad.alpha / ad.rank) * b @ a
        x = next(batches(1, seed=7))[0]
        adapted_out = model(x)[0].detach().numpy()
        lora.merge(model)
    sd = arrays(model.state_dict())
    assert not any("parametrizations" in k or "lora" in k for k in sd)
    for key, want in expected.items():
        np.testing.assert_allclose(sd[key], want, rtol=0, atol=1e-6)
    np.testing.assert_allclose(model(x)[0].detach().numpy(), adapted_out, rtol=1e-5, atol=1e-6)
    assert type(model.transformer.h[0].attn.c_attn) is pyframe.nn.Linear
    assert not any(p.requires_grad for p in model.parameters())


def test_adapter_checkpoint_is_small_and_loads_back(tmp_path):
    with pyframe.plugins.testing.activated(lora, "lora", targets=["*.c_attn", "*.v_proj"], rank=8, alpha=16.0):
        model = build_gpt(n_embd=128, n_head=4)
        with pyframe.no_grad():
            for ad in lora.adapters(model).values():
                ad.lora_B.normal_()
        sd = lora.state_dict(model)
        assert sorted(sd) == [
            f"transformer.h.{i}.attn.c_attn.parametrizations.weight.0.lora_{ab}" for i in (0, 1) for ab in "AB"
        ]
        pyframe.save(sd, tmp_path / "adapters.pf")
        pyframe.save(model.state_dict(), tmp_path / "full.pf")
        ratio = (tmp_path / "adapters.pf").stat().st_size / (tmp_path / "full.pf").stat().st_size
        assert ratio < 0.05, ratio
        other = build_gpt(n_embd=128, n_head=4)
        lora.load_state_dict(other, pyframe.load(tmp_path / "adapters.pf"))
        for k, v in lora.state_dict(other).items():
            assert np.array_equal(v.detach().numpy(), sd[k].detach().numpy())
        with pytest.raises(KeyError, match="not adapters"):
            lora.load_state_dict(other, {"lm_head.weight": pyframe.zeros(1)})


def test_a_base_checkpoint_loads_into_an_adapted_model():
    base = build_gpt()
    base_sd = arrays(base.state_dict())
    with pyframe.plugins.testing.activated(lora, "lora", **CONFIG):
        model = build_gpt()
        a_before = arrays(lora.state_dict(model))
        model.load_state_dict({k: pyframe.tensor(v) for k, v in base_sd.items()})  # strict, plain keys
    got = arrays(model.state_dict())
    c_attn = "transformer.h.0.attn.c_attn."
    assert np.array_equal(got[c_attn + "parametrizations.weight.original"], base_sd[c_attn + "weight"])
    assert np.array_equal(got["lm_head.weight"], base_sd["lm_head.weight"])
    assert all(np.array_equal(got[k], v) for k, v in a_before.items())


def test_the_models_own_init_reaches_the_base_weights():
    with pyframe.plugins.testing.activated(lora, "lora", **CONFIG):
        model = build_gpt()
    w = model.transformer.h[0].attn.c_attn.parametrizations.weight.original.detach().numpy()
    assert abs(w.std() - 0.02) < 0.004  # GPT._init_weights' normal(0, 0.02), not Linear's default init


def test_initialisation_and_scaling_follow_peft():
    with pyframe.plugins.testing.activated(lora, "lora", **CONFIG):
        model = build_gpt(n_embd=64, n_head=4)
    ad = lora.adapters(model)["transformer.h.0.attn.c_attn"]
    a, b = ad.lora_A.detach().numpy(), ad.lora_B.detach().numpy()
    bound = 1 / math.sqrt(64)  # kaiming_uniform_(a=sqrt(5)) on (rank, in_features): U(-1/sqrt(in), 1/sqrt(in))
    assert a.shape == (8, 64) and b.shape == (192, 8) and not b.any()
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.9 * bound and abs(a.mean()) < 0.2 * bound
    assert ad.scaling == 16.0 / 8


def test_adapted_forward_is_pefts_formula_computed_with_torch():
    torch = pytest.importorskip("torch")
    with pyframe.plugins.testing.activated(lora, "lora", **CONFIG):
        model = build_gpt()
    layer = model.transformer.h[1].attn.c_attn
    ad = lora.adapters(model)["transformer.h.1.attn.c_attn"]
    with pyframe.no_grad():
        ad.lora_B.normal_()
    x = np.random.default_rng(3).normal(size=(2, 5, 32)).astype(np.float32)
    model.eval()
    got = layer(pyframe.tensor(x)).detach().numpy()
    pairs = [("W", layer.parametrizations.weight.original), ("b", layer.bias), ("A", ad.lora_A), ("B", ad.lora_B)]
    t = {k: torch.from_numpy(v.detach().numpy().copy()) for k, v in pairs}
    # peft.tuners.lora.Linear.forward: result = base_layer(x) + lora_B(lora_A(dropout(x))) * scaling
    base = torch.nn.functional.linear(torch.from_numpy(x), t["W"], t["b"])
    want = base + torch.nn.functional.linear(torch.nn.functional.linear(torch.from_numpy(x), t["A"]), t["B"]) * 2.0
    np.testing.assert_allclose(got, want.detach().numpy(), rtol=1e-5, atol=1e-5)


def test_dropout_is_on_the_adapters_input_only():
    p = 0.5
    with pyframe.plugins.testing.activated(lora, "lora", targets=["lin"], rank=4, alpha=4.0, dropout=p):
        net = pyframe.nn.Sequential()
        net.add_module("lin", pyframe.nn.Linear(4, 4))
    ad = lora.adapters(net)["lin"]
    rng = np.random.default_rng(0)
    with pyframe.no_grad():
        ad.lora_B.copy_(pyframe.tensor(rng.normal(size=(4, 4)).astype(np.float32)))
    x = rng.normal(size=(64, 4)).astype(np.float32) + 3.0
    lin = net.lin
    w, bias = lin.parametrizations.weight.original.detach().numpy(), lin.bias.detach().numpy()
    m = ad.lora_A.detach().numpy().T @ ad.lora_B.detach().numpy().T  # x @ A^T @ B^T
    net.train()
    out = net(pyframe.tensor(x)).detach().numpy()
    dropped = np.linalg.solve(m.T, (out - (x @ w.T + bias)).T).T / ad.scaling  # the adapter's input: dropout(x)
    kept = np.isclose(dropped, x / (1 - p), rtol=1e-3, atol=1e-3)
    zero = np.isclose(dropped, 0.0, atol=1e-3)
    assert np.all(kept | zero) and 0.3 < zero.mean() < 0.7  # the base path saw x itself
    net.eval()
    merged = w + ad.scaling * (ad.lora_B @ ad.lora_A).detach().numpy()
    np.testing.assert_allclose(net(pyframe.tensor(x)).detach().numpy(), x @ merged.T + bias, rtol=1e-4, atol=1e-4)


def test_off_without_targets_and_late_targets_warn():
    from pyframe import _hooks
    from pyframe.plugins import tree

    with pyframe.plugins.testing.activated(lora, "lora"):  # installed, not configured: nothing changes
        # and costs nothing: none of its hooks is in a registry, so a call takes no hooked path
        assert pyframe.plugins.get("lora").idle and tree._handle is None
        assert not any(src.name == "lora" for r in _hooks.REGISTRIES for (_, _, src) in r.entries)
        model = build_gpt()
    assert all(p.requires_grad for p in model.parameters()) and not lora.adapters(model)
    with pyframe.plugins.testing.activated(lora, "lora", targets=["transformer.h.0.attn.c_attn"]):
        model = build_gpt()
        assert not lora.adapters(model)  # the full name is unknown while the model is built
        with pytest.warns(UserWarning, match="matched targets only once the model was complete"):
            model(next(batches(1))[0])
        assert list(lora.adapters(model)) == ["transformer.h.0.attn.c_attn"]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            model(next(batches(1))[0])  # once


def test_settings_are_validated():
    with pytest.raises(
        pyframe.plugins.PluginConfigError, match=r"configure\('lora', rank=...\): expected an integer >= 1, got 0"
    ):
        pyframe.plugins.activated(lora, "lora", rank=0).__enter__()
    with pytest.raises(pyframe.plugins.PluginConfigError, match="not a qualified-name pattern"):
        pyframe.plugins.activated(lora, "lora", targets=["*..q"]).__enter__()


def test_parametrization_entry_point_object():
    cls = lora.LoRAParametrization
    p = cls(3, 2, rank=1, alpha=2.0)
    assert p.scaling == 2.0 and repr(p) == "LoRAParametrization(rank=1, alpha=2.0, dropout=0.0)"


def test_adapters_through_parametrize_rules_freeze_nothing():
    rule = {"names": ["*.c_attn"], "tensor": "weight", "parametrization": "lora", "options": {"rank": 2, "alpha": 4}}
    with pyframe.plugins.activated("parametrize", exclusive=False, rules=[rule]):
        model = build_gpt()
    ad = lora.adapters(model)
    assert sorted(ad) == [f"transformer.h.{i}.attn.c_attn" for i in range(len(model.transformer.h))]
    assert all(a.rank == 2 and a.scaling == 2.0 for a in ad.values())
    assert all(p.requires_grad for p in model.parameters())
    with pytest.raises(ValueError, match="adapts the weight of a Linear"):
        lora.apply(pyframe.nn.LayerNorm(4), "weight")
    with pytest.raises(TypeError, match="options are rank, alpha and dropout"):
        lora.apply(pyframe.nn.Linear(2, 2), "weight", r=4)


class TestPackaging(pyframe.plugins.testing.PackagingTests):
    plugin, name = lora, "lora"
    defaults = {"targets": [], "rank": 8, "alpha": 8.0, "dropout": 0.0}
