"""Qualified names for plugin authors: what a hook sees when, ``NamePatterns``, and ``pyframe_model_ready``."""

from __future__ import annotations

import copy

import pytest

import pyframe
from pyframe import _hooks
from pyframe.hookspecs import hookimpl
from pyframe.plugins import NamePatterns, PluginConfigError, Setting, qualified_name
from tests.plugins.gpt_model import make_gpt


class NameRecorder:
    """Records the qualified name known at each hook."""

    def __init__(self):
        self.params, self.attached, self.ready = [], [], []

    @hookimpl
    def pyframe_module_parameter_registration(self, module, name, param):
        self.params.append(qualified_name(module, name))

    @hookimpl
    def pyframe_module_module_registration(self, module, name, submodule):
        self.attached.append(qualified_name(module, name))

    @hookimpl
    def pyframe_model_ready(self, model):
        self.ready.append(sorted(n for n, _ in model.named_parameters()))
        self.ready_names = [qualified_name(m) for m in model.modules()]


def test_what_a_plugin_sees_when():
    rec = NameRecorder()
    with pyframe.plugins.activated(rec, "names"):
        model = pyframe.nn.Sequential(pyframe.nn.Linear(2, 3), pyframe.nn.Sequential(pyframe.nn.ReLU()))
        model.add_module("head", pyframe.nn.Linear(3, 1))
        # a Linear registers its weight before it is attached: only the local name is known
        assert rec.params[:2] == ["weight", "bias"]
        # attaching: the path as far as the tree is built (the Sequential holding ReLU has no parent yet)
        assert rec.attached == ["0", "0", "1", "head"]
        assert rec.ready == []
        assert qualified_name(model.head, "weight") == "head.weight" and qualified_name(model[1][0]) == "1.0"
        model(pyframe.ones(1, 2))
        model(pyframe.ones(1, 2))
        assert rec.ready == [["0.bias", "0.weight", "head.bias", "head.weight"]]  # once, with every name final
        assert rec.ready_names == ["", "0", "1", "1.0", "head"]
        model.head(pyframe.ones(1, 3))  # an inner module called alone is not an outermost module
        assert len(rec.ready) == 1
    assert not _hooks.forward_pre  # no implementation left: nothing runs on forward


def test_names_follow_the_tree_and_deep_copies():
    enc = pyframe.nn.TransformerEncoder(pyframe.nn.TransformerEncoderLayer(8, 2, 16), num_layers=2)
    model = pyframe.nn.Sequential()
    model.add_module("encoder", enc)
    # the layers are deep copies: their submodules were never attached one by one, and still have their names
    lin = enc.layers[1].linear1
    assert qualified_name(lin, "weight") == "encoder.layers.1.linear1.weight"
    assert qualified_name(enc.layers[1].self_attn) == "encoder.layers.1.self_attn"
    moved = copy.deepcopy(enc.layers[0])
    assert qualified_name(moved.linear1) == "linear1"  # a copy's submodules are linked to the copy
    holder = pyframe.nn.ModuleList([moved])
    assert qualified_name(moved.linear1) == "0.linear1"
    assert qualified_name(enc.layers[0].linear1) == "encoder.layers.0.linear1"
    del holder
    model.encoder = pyframe.nn.Identity()  # replaced: the old subtree is no longer under model
    assert qualified_name(lin) == "layers.1.linear1"


def test_names_of_an_unpickled_model():
    import pickle

    model = pickle.loads(pickle.dumps(make_gpt()))
    attn = model.transformer.h[1].attn
    assert qualified_name(attn.c_attn, "weight") == "transformer.h.1.attn.c_attn.weight"
    assert [qualified_name(m) for _, m in model.named_modules()] == [n for n, _ in model.named_modules()]


def test_patterns_select_exactly_the_intended_parameters_in_a_gpt():
    model = make_gpt()
    names = [n for n, _ in model.named_parameters()]
    attn = NamePatterns(["*.attn.c_attn.*"]).select(names)
    assert attn == [f"transformer.h.{i}.attn.c_attn.{p}" for i in (0, 1) for p in ("weight", "bias")]
    first_block = NamePatterns("transformer.h.0.*").select(names)
    assert first_block and all(n.startswith("transformer.h.0.") for n in first_block)
    assert len(first_block) == len([n for n in names if n.startswith("transformer.h.0.")])
    # *.c_proj matches the attention's and the MLP's output projection, modules only (not their weights)
    modules = [n for n, _ in model.named_modules()]
    assert NamePatterns(["*.c_proj"]).select(modules) == [
        f"transformer.h.{i}.{part}.c_proj" for i in (0, 1) for part in ("attn", "mlp")
    ]
    every = [n for n, _ in model.named_parameters(remove_duplicate=False)]  # lm_head.weight is wte's, tied
    assert NamePatterns(["transformer.h.[1].mlp.c_fc.weight", "lm_head.*"]).select(every) == [
        "transformer.h.1.mlp.c_fc.weight",
        "lm_head.weight",
    ]
    assert NamePatterns([]).select(names) == []


def test_match_suffix_is_what_can_be_decided_before_the_tree_is_complete():
    p = NamePatterns(["*.q_proj", "encoder.*"])
    assert p.match_suffix("q_proj") and p.match_suffix("attn.q_proj")
    assert not p.match_suffix("k_proj")
    assert p.match_suffix("encoder.layers.0")  # could already be the full name
    assert not NamePatterns(["encoder.*"]).match_suffix("layers.0")  # needs the start of the name
    assert p.match("encoder.layers.0.q_proj") and not p.match("decoder.k_proj")


def test_name_patterns_as_a_setting():
    s = Setting(NamePatterns, ["*.q_proj"], help="modules to adapt")
    assert s.validate(["*.v_proj", "encoder.*"], where="w") == ["*.v_proj", "encoder.*"]
    assert s.validate("*.k_proj", where="w") == ["*.k_proj"]
    for bad, msg in [
        (["*..q"], "not a qualified-name pattern"),
        ([""], "non-empty string"),
        (["h.[01"], "unclosed"),
        ([1], "expected a list of qualified-name patterns"),
        (["a b"], "not a qualified-name pattern"),
    ]:
        with pytest.raises(PluginConfigError, match=msg) as e:
            s.validate(bad, where="pyframe.toml: key 'lora.targets'")
        assert str(e.value).startswith("pyframe.toml: key 'lora.targets': ")
    assert repr(s) == "Setting(name patterns, ['*.q_proj'])"
