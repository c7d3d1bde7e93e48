"""pyframe.nn.utils.parametrize (register, chains, right_inverse, removal, caching, copies, checkpoints, global
hooks) and the built-in plugin ``parametrize`` that applies parametrizations by rule."""

import copy
import io
import pickle
import sys

import numpy as np
import pytest

import pyframe
import pyframe.nn as nn
import pyframe.nn.utils.parametrize as P
from pyframe import plugins
from pyframe.nn.utils import parametrizations as PZ
from tests._helpers import allclose, arr


class Symmetric(nn.Module):
    def forward(self, X):
        return X.triu() + X.triu(1).T  # Return a symmetric matrix

    def right_inverse(self, A):
        return A.triu()


class Double(nn.Module):
    def forward(self, X):
        return X * 2.0

    def right_inverse(self, Y):
        return Y / 2.0


class Plus(nn.Module):  # sum of two originals; right_inverse returns a tuple
    def forward(self, a, b):
        return a + b

    def right_inverse(self, X):
        return X * 0.25, X * 0.75


class NoInverse(nn.Module):
    def forward(self, X):
        return X + 1.0


# ---- the seed's example ----------------------------------------------------------------------------------


def test_seed_symmetric_example():
    m = nn.Linear(5, 5)
    P.register_parametrization(m, "weight", Symmetric())
    assert allclose(m.weight, m.weight.T)  # m.weight is now symmetric
    A = pyframe.rand(5, 5)
    A = A + A.T  # A is now symmetric
    m.weight = A  # Initialize the weight to be the symmetric matrix A
    assert allclose(m.weight, A)


def test_structure_names_and_types():
    m = nn.Linear(4, 3)
    w = m.weight
    P.register_parametrization(m, "weight", Double())
    assert type(m).__name__ == "ParametrizedLinear" and isinstance(m, nn.Linear)
    assert P.type_before_parametrizations(m) is nn.Linear
    assert isinstance(m.parametrizations.weight, P.ParametrizationList)
    assert m.parametrizations.weight.original is w  # the same Parameter object
    assert [n for n, _ in m.named_parameters()] == ["bias", "parametrizations.weight.original"]
    assert "weight" not in m._parameters
    assert P.is_parametrized(m) and P.is_parametrized(m, "weight") and not P.is_parametrized(m, "bias")
    assert not P.is_parametrized(nn.Linear(2, 2))
    assert "weight" in dir(m)
    # one subclass per original class, not per instance
    m2 = P.register_parametrization(nn.Linear(2, 2), "weight", Double())
    assert type(m2) is type(m)


def test_gradient_flows_to_original():
    m = nn.Linear(3, 2)
    P.register_parametrization(m, "weight", Double())
    x = pyframe.randn(4, 3)
    m(x).sum().backward()
    g = m.parametrizations.weight.original.grad
    assert g is not None
    assert allclose(g, 2.0 * arr(x).sum(0)[None, :].repeat(2, 0))


def test_chaining_and_assignment_through_the_chain():
    m = nn.Linear(4, 4)
    P.register_parametrization(m, "weight", Symmetric())
    P.register_parametrization(m, "weight", Double())
    assert len(m.parametrizations.weight) == 2
    w = arr(m.weight)
    assert np.allclose(w, w.T)
    orig = arr(m.parametrizations.weight.original)
    sym = np.triu(orig) + np.triu(orig, 1).T
    assert np.allclose(w, 2 * sym)
    A = pyframe.randn(4, 4)
    A = A + A.T
    m.weight = A
    assert allclose(m.weight, A, atol=1e-6)


def test_right_inverse_tuple():
    m = nn.Linear(3, 3)
    w0 = arr(m.weight).copy()
    P.register_parametrization(m, "weight", Plus())
    pl = m.parametrizations.weight
    assert not pl.is_tensor and pl.ntensors == 2
    assert allclose(pl.original0, 0.25 * w0) and allclose(pl.original1, 0.75 * w0)
    assert isinstance(pl.original0, nn.Parameter) and pl.original0.requires_grad
    assert allclose(m.weight, w0, atol=1e-6)
    m.weight = pyframe.ones(3, 3)
    assert allclose(pl.original0, 0.25) and allclose(m.weight, 1.0)
    m(pyframe.randn(2, 3)).sum().backward()
    assert pl.original0.grad is not None and pl.original1.grad is not None


def test_buffers_can_be_parametrized():
    m = nn.Module()
    m.register_buffer("b", pyframe.ones(3))
    P.register_parametrization(m, "b", Double())
    assert allclose(m.b, 1.0) and allclose(m.parametrizations.b.original, 0.5)  # through right_inverse
    assert "parametrizations.b.original" in m.state_dict()
    assert "original" in m.parametrizations.b._buffers


def test_training_mode_follows_host():
    m = nn.Linear(2, 2)
    m.eval()
    p = Double()
    assert p.training
    P.register_parametrization(m, "weight", p)
    assert not p.training  # set at registration
    m.train()
    assert p.training
    m.eval()
    assert not p.training


def test_errors():
    m = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        P.register_parametrization(m, "nope", Double())
    with pytest.raises(TypeError, match="Module"):
        P.register_parametrization(m, "weight", lambda x: x)

    class Shape(nn.Module):
        def forward(self, X):
            return X.sum(0)

    class Dtype(nn.Module):
        def forward(self, X):
            return X.double()

    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(nn.Linear(2, 2), "weight", Shape())
    with pytest.raises(ValueError, match="may not change the dtype"):
        P.register_parametrization(nn.Linear(2, 2), "weight", Dtype())
    # a second parametrization is checked too, and a failed registration leaves the module as it was
    m = P.register_parametrization(nn.Linear(2, 2), "weight", Double())
    with pytest.raises(ValueError, match="may not change the shape"):
        P.register_parametrization(m, "weight", Shape())
    assert len(m.parametrizations.weight) == 1
    # unsafe skips the checks
    m = P.register_parametrization(nn.Linear(2, 3), "weight", Shape(), unsafe=True)
    assert m.weight.shape == (2,)
    # assignment without right_inverse
    m = P.register_parametrization(nn.Linear(2, 2), "weight", NoInverse())
    with pytest.raises(RuntimeError, match="does not implement right_inverse"):
        m.weight = pyframe.zeros(2, 2)
    with pytest.raises(ValueError, match="does not have a parametrization"):
        P.remove_parametrizations(nn.Linear(2, 2), "weight")


def test_remove_leave_parametrized_true_keeps_value_and_identity():
    m = nn.Linear(3, 3)
    w = m.weight
    P.register_parametrization(m, "weight", Double())
    value = arr(m.weight).copy()
    P.remove_parametrizations(m, "weight")
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    assert m.weight is w and isinstance(m.weight, nn.Parameter)
    assert allclose(m.weight, value)
    assert set(dict(m.named_parameters())) == {"bias", "weight"}


def test_remove_leave_parametrized_false_restores_original():
    m = nn.Linear(3, 3)
    P.register_parametrization(m, "weight", Double())
    P.register_parametrization(m, "bias", Double())
    orig = arr(m.parametrizations.weight.original).copy()
    P.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert type(m).__name__ == "ParametrizedLinear"  # bias is still parametrized
    assert allclose(m.weight, orig)
    P.remove_parametrizations(m, "bias", leave_parametrized=False)
    assert type(m) is nn.Linear


def test_remove_tuple_originals():
    m = nn.Linear(3, 3)
    P.register_parametrization(m, "weight", Plus())
    with pytest.raises(ValueError, match="sequence of tensors"):
        P.remove_parametrizations(m, "weight", leave_parametrized=False)
    value = arr(m.weight).copy()
    P.remove_parametrizations(m, "weight")
    assert isinstance(m.weight, nn.Parameter) and allclose(m.weight, value)


# ---- optimizers, serialization, copying --------------------------------------------------------------------


def test_training_loop_with_optimizer_built_before_parametrization():
    pyframe.manual_seed(0)
    m = nn.Linear(4, 4)
    opt = pyframe.optim.SGD(m.parameters(), lr=0.1)
    PZ.orthogonal(m)
    x, y = pyframe.randn(16, 4), pyframe.randn(16, 4)
    losses = []
    for _ in range(20):
        opt.zero_grad()
        loss = ((m(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    w = arr(m.weight)
    assert np.allclose(w.T @ w, np.eye(4), atol=1e-5)


def test_state_dict_round_trip_through_pyframe_save(tmp_path):
    m = nn.Linear(4, 3)
    PZ.weight_norm(m)
    sd = m.state_dict()
    assert set(sd) == {"bias", "parametrizations.weight.original0", "parametrizations.weight.original1"}
    path = tmp_path / "ckpt.pf"
    pyframe.save(sd, path)
    m2 = PZ.weight_norm(nn.Linear(4, 3))
    m2.load_state_dict(pyframe.load(path))
    assert allclose(m2.weight, m.weight)


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_deepcopy_and_pickle(how):
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    PZ.orthogonal(m[0])
    P.register_parametrization(m[0], "bias", Double())
    m2 = copy.deepcopy(m) if how == "deepcopy" else pickle.loads(pickle.dumps(m))
    assert type(m2[0]) is type(m[0])
    assert allclose(m2[0].weight, m[0].weight) and allclose(m2[0].bias, m[0].bias)
    assert m2[0].parametrizations.weight.original is not m[0].parametrizations.weight.original
    x = pyframe.randn(2, 4)
    assert allclose(m2(x), m(x))
    # the copy is independent and still works as a parametrized module
    m2[0].weight = pyframe.eye(4)
    assert allclose(m2[0].weight, np.eye(4), atol=1e-6) and not allclose(m[0].weight, np.eye(4))
    P.remove_parametrizations(m2[0], "weight")
    assert "weight" in m2[0]._parameters


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_deepcopy_and_pickle_shipped_parametrizations(how):
    m = nn.Sequential(nn.Linear(3, 3), nn.Linear(3, 3))
    PZ.weight_norm(m[0])
    PZ.spectral_norm(m[1])
    m.eval()
    m2 = copy.deepcopy(m) if how == "deepcopy" else pickle.loads(pickle.dumps(m))
    x = pyframe.randn(2, 3)
    assert allclose(m2(x), m(x))
    assert set(m2.state_dict()) == set(m.state_dict())
    # weight_norm's compat load hook survived the copy
    pl = m2[0].parametrizations.weight
    m2[0].load_state_dict(
        {"bias": m2[0].bias.detach(), "weight_g": pl.original0.detach() * 3, "weight_v": pl.original1}
    )
    assert allclose(pl.original0, 3 * arr(m[0].parametrizations.weight.original0))


def test_transfer_parametrizations_and_params():
    src = PZ.weight_norm(nn.Linear(3, 2))
    dst = nn.Linear(3, 2)
    P.transfer_parametrizations_and_params(src, dst)
    assert P.is_parametrized(dst, "weight") and allclose(dst.weight, src.weight)
    assert dst.parametrizations.weight[0] is not src.parametrizations.weight[0]


def test_to_dtype_converts_originals_and_buffers():
    m = PZ.orthogonal(nn.Linear(3, 3))
    m.double()
    assert m.parametrizations.weight.original.dtype == pyframe.float64
    assert m.parametrizations.weight[0].base.dtype == pyframe.float64
    assert m.weight.dtype == pyframe.float64


# ---- cached() ---------------------------------------------------------------------------------------------


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, X):
        self.calls += 1
        return X * 2.0


def test_cached_computes_once():
    m = nn.Linear(3, 3)
    c = Counting()
    P.register_parametrization(m, "weight", c)
    c.calls = 0
    with P.cached():
        a = m.weight
        b = m.weight
        with P.cached():
            assert m.weight is a
    assert a is b and c.calls == 1
    m.weight  # noqa: B018
    assert c.calls == 2  # outside: computed every time


def test_cached_is_invalidated_by_an_optimizer_step():
    m = nn.Linear(3, 3)
    P.register_parametrization(m, "weight", Double())
    opt = pyframe.optim.SGD(m.parameters(), lr=0.5)
    with P.cached():
        before = m.weight
        assert m.weight is before
        m(pyframe.randn(2, 3)).sum().backward()
        opt.step()
        after = m.weight
        assert after is not before
        assert allclose(after, 2 * arr(m.parametrizations.weight.original))
        assert not allclose(after, before)
        m.weight = pyframe.zeros(3, 3)  # assignment (right_inverse) also invalidates
        assert allclose(m.weight, 0.0)


# ---- errors inside parametrizations -------------------------------------------------------------------


def test_attribute_error_inside_parametrization_is_reported_as_itself():
    class Broken(nn.Module):
        def forward(self, X):
            return X.no_such_method()

    m = nn.Linear(2, 2)
    P.register_parametrization(m, "weight", NoInverse())
    m.parametrizations.weight.append(Broken())  # bypasses the registration-time check
    with pytest.raises(AttributeError, match="no_such_method") as info:
        m.weight  # noqa: B018
    assert "no attribute 'weight'" not in str(info.value)
    assert any("raised inside the parametrization" in note for note in info.value.__notes__)
    # and at registration time the error surfaces too, as itself
    with pytest.raises(AttributeError, match="no_such_method"):
        P.register_parametrization(nn.Linear(2, 2), "weight", Broken())


# ---- old checkpoints --------------------------------------------------------------------------------------


def test_load_checkpoint_saved_before_parametrization():
    plain = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    with pyframe.no_grad():
        q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))
        plain[0].weight.copy_(pyframe.tensor(q.astype(np.float32)))
    sd = plain.state_dict()
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))
    PZ.orthogonal(model[0])
    PZ.weight_norm(model[1])
    with pytest.raises(RuntimeError, match="Missing key"):
        model.load_state_dict(sd)
    P.load_unparametrized_state_dict(model, sd)
    assert allclose(model[0].weight, plain[0].weight, atol=1e-5)
    assert allclose(model[1].weight, plain[1].weight, atol=1e-6)
    assert allclose(model[0].bias, plain[0].bias)
    x = pyframe.randn(3, 4)
    assert allclose(model(x), plain(x), atol=1e-5)
    # a parametrized checkpoint goes through unchanged
    P.load_unparametrized_state_dict(model, model.state_dict())


# ---- global hooks ------------------------------------------------------------------------------------------


def test_global_hooks_see_only_user_modules():
    m = nn.Sequential(nn.Linear(3, 3))
    P.register_parametrization(m[0], "weight", Symmetric())
    PZ.spectral_norm(m[0], "weight")
    seen = []
    h1 = nn.register_module_forward_pre_hook(lambda mod, args: seen.append(("pre", type(mod).__name__)))
    h2 = nn.register_module_forward_hook(lambda mod, args, out: seen.append(("post", type(mod).__name__)))
    h3 = nn.register_module_full_backward_hook(lambda mod, gi, go: seen.append(("bw", type(mod).__name__)))
    try:
        m(pyframe.randn(2, 3, requires_grad=True)).sum().backward()
    finally:
        h1.remove()
        h2.remove()
        h3.remove()
    names = {n for _, n in seen}
    assert names == {"Sequential", "ParametrizedLinear"}, seen


# ---- shipped parametrizations: properties and gradchecks -----------------------------------------------------


# ---- vs torch ----------------------------------------------------------------------------------------------


# ---- the built-in plugin -------------------------------------------------------------------------------------


def test_builtin_plugin_is_listed_and_survives_autoload_off(monkeypatch):
    info = plugins.get("parametrize")
    assert info.source == "built-in" and info.enabled
    assert "pyframe_module_module_registration" in info.hooks
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGIN_AUTOLOAD", "1")
    plugins.reload_config()
    assert plugins.get("parametrize").enabled
    monkeypatch.setenv("PYFRAME_DISABLE_PLUGINS", "parametrize")
    plugins.reload_config()
    info = plugins.get("parametrize")
    assert not info.enabled and "disable_plugins" in info.reason
    monkeypatch.delenv("PYFRAME_DISABLE_PLUGINS")
    plugins.reload_config()
    assert plugins.get("parametrize").enabled


def test_cli_lists_builtin(capsys):
    from pyframe.__main__ import main

    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "parametrize" in out and "built-in" in out


def _orthogonal_rule(**extra):
    return {"module": "Linear", "tensor": "weight", "parametrization": "orthogonal", **extra}


def test_rules_apply_to_submodules_as_they_are_built():
    with plugins.activated("parametrize", exclusive=False, rules=[_orthogonal_rule()]):
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 4))
        assert P.is_parametrized(model[0], "weight") and P.is_parametrized(model[2], "weight")
        w = arr(model[0].weight)
        assert np.allclose(w.T @ w, np.eye(4), atol=1e-5)
        # deepcopy of an already parametrized model is not parametrized twice
        m2 = copy.deepcopy(model)
        m2(pyframe.randn(1, 4))
        assert len(m2[0].parametrizations.weight) == 1
    # rules are gone after the block
    assert not P.is_parametrized(nn.Sequential(nn.Linear(2, 2))[0])


def test_rules_apply_lazily_to_top_level_modules_on_first_forward():
    rule = {"module": "Linear", "tensor": "weight", "parametrization": "weight_norm", "options": {"dim": 1}}
    with plugins.activated("parametrize", exclusive=False, rules=[rule]):
        lin = nn.Linear(3, 2)
        assert not P.is_parametrized(lin)
        lin(pyframe.randn(1, 3))
        assert P.is_parametrized(lin, "weight")
        assert lin.parametrizations.weight.original0.shape == (1, 3)
        lin(pyframe.randn(1, 3))
        assert len(lin.parametrizations.weight) == 1
    # with no rules, no global forward hook is left behind
    assert not nn.modules.module._global_hooks_active


def test_rules_from_config_file(tmp_path, monkeypatch):
    cfg = tmp_path / "pyframe.toml"
    cfg.write_text(
        '[[parametrize.rules]]\nmodule = "Linear"\ntensor = "weight"\nparametrization = "spectral_norm"\n'
        "options = { n_power_iterations = 2 }\n"
    )
    monkeypatch.setenv("PYFRAME_CONFIG", str(cfg))
    try:
        plugins.reload_config()
        model = nn.Sequential(nn.Linear(3, 3))
        assert model[0].parametrizations.weight[0].n_power_iterations == 2
    finally:
        monkeypatch.delenv("PYFRAME_CONFIG")
        plugins.reload_config()
    assert not P.is_parametrized(nn.Sequential(nn.Linear(2, 2))[0])


class _Attn(nn.Module):
    def __init__(self):
        super().__init__()
        self.q_proj, self.k_proj = nn.Linear(4, 4), nn.Linear(4, 4)


def test_name_rules_apply_as_names_become_known_and_on_first_forward():
    rules = [
        {"names": ["*.q_proj"], "tensor": "weight", "parametrization": "orthogonal"},
        {"module": "Linear", "names": ["encoder.*.k_proj"], "tensor": "weight", "parametrization": "orthogonal"},
    ]
    with plugins.activated("parametrize", exclusive=False, rules=rules):
        model = nn.Module()
        model.encoder = nn.ModuleList([_Attn(), _Attn()])
        model.decoder = _Attn()
        # decided while the model is built: *.q_proj when q_proj is attached, encoder.*.k_proj with encoder
        picked = sorted(n for n, m in model.named_modules() if P.is_parametrized(m))
        assert picked == ["decoder.q_proj", *(f"encoder.{i}.{p}" for i in (0, 1) for p in ("k_proj", "q_proj"))]
        w = arr(model.encoder[1].k_proj.weight)
        assert np.allclose(w.T @ w, np.eye(4), atol=1e-5)
        # a module put in place without being attached (no registration hook) is found on the first forward
        model.encoder._modules["2"] = _Attn()
        assert not P.is_parametrized(model.encoder[2].k_proj)
        model.decoder.k_proj(pyframe.randn(1, 4))
        assert P.is_parametrized(model.encoder[2].k_proj, "weight") and P.is_parametrized(model.encoder[2].q_proj)
        assert not P.is_parametrized(model.decoder.k_proj)


@pytest.mark.parametrize(
    ("rules", "match"),
    [
        ([{"tensor": "weight", "parametrization": "orthogonal"}], "needs 'module'"),
        ([{"names": ["a..b"], "tensor": "weight", "parametrization": "orthogonal"}], "not a qualified-name"),
        ([{"names": "*.q", "tensor": "weight", "parametrization": "orthogonal"}], "'names' must be a list"),
        ([{"module": "Linear", "tensor": "weight", "parametrization": "orthogonl"}], "did you mean 'orthogonal'"),
        ([{"module": "Linear", "tensor": "weight"}], "missing key 'parametrization'"),
        ([{"module": "Linear", "tensor": "weight", "parametrization": "orthogonal", "bogus": 1}], "unknown key"),
        (["Linear"], "expected a table"),
        ({"module": "Linear"}, "expected a list"),
    ],
)
def test_bad_rules_are_config_errors(rules, match):
    with pytest.raises(plugins.PluginConfigError, match=match):
        plugins.configure("parametrize", rules=rules)
    plugins.configure("parametrize", rules=[])


EXAMPLE_PACKAGE = '''
import pyframe.nn as nn


class Scale(nn.Module):
    """A third-party parametrization: weight * factor."""

    def __init__(self, factor=2.0):
        super().__init__()
        self.factor = factor

    def forward(self, X):
        return X * self.factor

    def right_inverse(self, Y):
        return Y / self.factor


def clamp_weight(module, tensor_name, limit=0.1):
    """A function-style entry point, registering the parametrization itself."""
    import pyframe.nn.utils.parametrize as P

    class Clamp(nn.Module):
        def forward(self, X):
            return X.clamp(-limit, limit)

    return P.register_parametrization(module, tensor_name, Clamp(), unsafe=True)
'''


def test_third_party_parametrization_through_entry_points(tmp_path, monkeypatch):
    import importlib

    (tmp_path / "pftest_scale_param.py").write_text(EXAMPLE_PACKAGE)
    info = tmp_path / "pftest_scale_param-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pftest-scale-param\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(
        "[pyframe.parametrizations]\nscale = pftest_scale_param:Scale\nclamp = pftest_scale_param:clamp_weight\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    try:
        from pyframe.plugins import builtin_parametrize as bp

        assert {"scale", "clamp", "orthogonal"} <= set(bp.available())
        rules = [
            {"module": "Linear", "tensor": "weight", "parametrization": "scale", "options": {"factor": 3.0}},
            {"module": "Linear", "tensor": "bias", "parametrization": "clamp", "options": {"limit": 0.01}},
        ]
        with plugins.activated("parametrize", exclusive=False, rules=rules):
            model = nn.Sequential(nn.Linear(3, 3))
            lin = model[0]
            assert type(lin.parametrizations.weight[0]).__name__ == "Scale"
            assert allclose(lin.weight, 3.0 * arr(lin.parametrizations.weight.original))
            assert float(arr(lin.bias).max()) <= 0.01
    finally:
        sys.modules.pop("pftest_scale_param", None)


def test_state_dict_save_load_via_buffer(tmp_path):
    m = PZ.spectral_norm(nn.Linear(3, 3))
    buf = io.BytesIO()
    pyframe.save(m.state_dict(), buf)
    buf.seek(0)
    m2 = PZ.spectral_norm(nn.Linear(3, 3))
    m2.load_state_dict(pyframe.load(buf))
    m.eval()
    m2.eval()
    assert allclose(m2.weight, m.weight)
