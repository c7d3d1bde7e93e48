"""nn.Module mechanics: registration (and its one code path), iteration, state_dict, modes and dtypes, repr,
copy and pickle. torch is the oracle where it is importable (weights copied through NumPy); per-module hooks,
Parameter, containers and nn.utils are in test_module_hooks.py, test_parameter.py, test_container.py and
test_clip_grad.py."""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import pyframe
import pyframe.nn as nn
from pyframe.nn.modules import module as module_mod
from tests._helpers import arr
from tests._oracle import needs_torch, torch


def copy_weights(src, dst) -> None:
    """Copies every parameter and buffer of module ``src`` into ``dst`` (torch <-> pyframe)."""
    lib = torch if isinstance(dst, torch.nn.Module) else pyframe
    with lib.no_grad():
        for (n1, a), (n2, b) in zip(src.state_dict(keep_vars=True).items(), dst.state_dict(keep_vars=True).items(),
                                    strict=True):  # fmt: skip
            assert n1 == n2
            b.copy_(lib.from_numpy(np.ascontiguousarray(arr(a))))


class Plain(nn.Module):
    """A module with one parameter, one buffer, one child."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(pyframe.ones(2))
        self.register_buffer("buf", pyframe.zeros(2))
        self.child = nn.Identity()
        self.note = "plain"

    def forward(self, x):
        return self.child(x * self.w + self.buf)


def snapshot(m: nn.Module) -> tuple:
    return (dict(m._parameters), dict(m._buffers), dict(m._modules), set(m._non_persistent_buffers_set),
            {k: v for k, v in m.__dict__.items() if not k.startswith("_")})  # fmt: skip


@pytest.fixture
def chain(no_installed_plugins):
    """Global registration hooks for the three kinds, for the test: each records its call and returns
    ``chain.fn(kind, module, name, value)`` (None, the default, keeps the value)."""

    class Chain:
        fn = None
        calls: list = []

    c = Chain()
    c.calls = []

    def hook(kind):
        def run(module, name, value):
            c.calls.append((kind, type(module).__name__, name))
            return None if c.fn is None else c.fn(kind, module, name, value)

        return run

    nn.register_module_parameter_registration_hook(hook("parameter"))
    nn.register_module_buffer_registration_hook(hook("buffer"))
    nn.register_module_module_registration_hook(hook("module"))
    return c


# ---- Parameter ----------------------------------------------------------------------------------------


# ---- registration ---------------------------------------------------------------------------------------


def test_attribute_assignment_routes_to_the_right_dict():
    m = Plain()
    assert list(m._parameters) == ["w"] and list(m._buffers) == ["buf"] and list(m._modules) == ["child"]
    assert "w" not in m.__dict__ and m.note == "plain"
    new = pyframe.full((2,), 5.0)
    m.buf = new  # a tensor assigned to a buffer name updates the buffer
    assert m._buffers["buf"] is new
    m.w = None
    assert m._parameters == {"w": None} and m.w is None
    m.child = None
    assert m._modules == {"child": None}
    m.buf = None
    assert m._buffers == {"buf": None}
    # a Parameter replaces a buffer, a module or a plain attribute of the same name
    m.note = nn.Parameter(pyframe.zeros(1))
    assert "note" in m._parameters and "note" not in m.__dict__
    m.register_buffer("b2", pyframe.zeros(1), persistent=False)
    m.b2 = nn.Parameter(pyframe.zeros(1))
    assert "b2" not in m._buffers and "b2" not in m._non_persistent_buffers_set and "b2" in m._parameters
    with pytest.raises(TypeError, match="as parameter 'b2'"):  # as torch: a parameter name takes Parameters
        m.b2 = nn.Linear(1, 1)
    del m.b2
    m.b2 = nn.Linear(1, 1)
    assert "b2" not in m._parameters and isinstance(m._modules["b2"], nn.Linear)
    del m.b2
    assert "b2" not in m._modules
    m.register_buffer("b3", pyframe.zeros(1), persistent=False)
    del m.b3
    assert "b3" not in m._buffers and "b3" not in m._non_persistent_buffers_set
    with pytest.raises(AttributeError, match="has no attribute 'nothing'"):
        m.nothing  # noqa: B018


def test_register_none_and_reregister():
    m = nn.Module()
    m.register_parameter("p", None)
    m.register_buffer("b", None)
    m.add_module("c", None)
    assert m.p is None and m.b is None and m.c is None
    assert list(m.parameters()) == [] and list(m.buffers()) == [] and list(m.children()) == []
    assert m.state_dict() == {}
    m.register_parameter("p", nn.Parameter(pyframe.zeros(1)))  # same kind, same name: allowed
    m.register_buffer("b", pyframe.zeros(1), persistent=False)
    assert "b" in m._non_persistent_buffers_set
    m.register_buffer("b", pyframe.zeros(1))
    assert "b" not in m._non_persistent_buffers_set
    m.register_module("c", nn.ReLU())
    assert isinstance(m.c, nn.ReLU)


ERROR_CASES = [
    ("dot in parameter name", lambda nn_, lib: nn_.Module().register_parameter("a.b", None)),
    ("empty parameter name", lambda nn_, lib: nn_.Module().register_parameter("", None)),
    ("non-str parameter name", lambda nn_, lib: nn_.Module().register_parameter(1, None)),
    ("plain tensor as parameter", lambda nn_, lib: nn_.Module().register_parameter("p", lib.zeros(1))),
    ("non-leaf parameter", lambda nn_, lib: nn_.Module().register_parameter(
        "p", nn_.Parameter(lib.zeros(1)) * 2)),
    ("dot in buffer name", lambda nn_, lib: nn_.Module().register_buffer("a.b", None)),
    ("empty buffer name", lambda nn_, lib: nn_.Module().register_buffer("", None)),
    ("non-tensor buffer", lambda nn_, lib: nn_.Module().register_buffer("b", 3)),
    ("dot in module name", lambda nn_, lib: nn_.Module().add_module("a.b", None)),
    ("empty module name", lambda nn_, lib: nn_.Module().add_module("", None)),
    ("non-module", lambda nn_, lib: nn_.Module().add_module("m", 3)),
    ("parameter over a method", lambda nn_, lib: nn_.Module().register_parameter("forward", None)),
    ("buffer over a method", lambda nn_, lib: nn_.Module().register_buffer("train", None)),
    ("module over a method", lambda nn_, lib: nn_.Module().add_module("eval", None)),
    ("buffer over a parameter", lambda nn_, lib: nn_.Linear(1, 1).register_buffer("weight", None)),
    ("parameter over a module", lambda nn_, lib: nn_.Sequential(nn_.ReLU()).register_parameter("0", None)),
    ("module over a buffer", lambda nn_, lib: nn_.BatchNorm1d(1).add_module("running_mean", None)),
    ("parameter over an attribute", lambda nn_, lib: nn_.Linear(1, 1).register_parameter("in_features", None)),
    ("tensor assigned to a parameter", lambda nn_, lib: setattr(nn_.Linear(1, 1), "weight", lib.zeros(1, 1))),
    ("int assigned to a module", lambda nn_, lib: setattr(nn_.Sequential(nn_.ReLU()), "0", 3)),
    ("int assigned to a buffer", lambda nn_, lib: setattr(nn_.BatchNorm1d(1), "running_mean", 3)),
    ("parameter assigned before __init__", lambda nn_, lib: _before_init(nn_, nn_.Parameter(lib.zeros(1)))),
    ("module assigned before __init__", lambda nn_, lib: _before_init(nn_, nn_.ReLU())),
    ("register before __init__", lambda nn_, lib: _before_init(nn_, None, register=True)),
    ("dotted parameter by assignment", lambda nn_, lib: setattr(nn_.Module(), "a.b", nn_.Parameter(lib.zeros(1)))),
    ("Module() with arguments", lambda nn_, lib: nn_.Module(3)),
]  # fmt: skip


def _before_init(nn_, value, register=False):
    class Early(nn_.Module):
        def __init__(self):
            if register:
                self.register_buffer("b", value)
            else:
                self.x = value
            super().__init__()

    Early()


@needs_torch
@pytest.mark.parametrize("case", ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_registration_errors_match_torch(case):
    _, fn = case
    with pytest.raises(Exception) as expected:  # noqa: B017 - the type is compared below
        fn(torch.nn, torch)
    with pytest.raises(expected.type):
        fn(nn, pyframe)


def test_registration_error_messages():
    m = nn.Linear(2, 2)
    with pytest.raises(KeyError, match="contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(KeyError, match="attribute 'in_features' already exists"):
        m.register_buffer("in_features", None)
    with pytest.raises(TypeError, match="cannot assign 'pyframe.Tensor' as parameter 'weight'"):
        m.weight = pyframe.zeros(2, 2)
    with pytest.raises(
        TypeError, match=r"cannot assign 'pyframe.Tensor' object to parameter 'p' \(pyframe.nn.Parameter"
    ):
        m.register_parameter("p", pyframe.zeros(1))


def test_every_registration_goes_through_the_chain(chain):
    m = Plain()
    m.register_parameter("p", None)
    m.add_module("seq", nn.Sequential(nn.ReLU()))
    m.seq.append(nn.Tanh())
    m.seq.insert(0, nn.Sigmoid())
    m.seq[0] = nn.ReLU()
    lst = nn.ModuleList([nn.ReLU()])
    lst.extend([nn.Tanh()])
    d = nn.ModuleDict({"a": nn.ReLU()})
    d["b"] = nn.Tanh()
    m.buf = pyframe.ones(2)
    m.w = None
    assert chain.calls == [
        ("parameter", "Plain", "w"), ("buffer", "Plain", "buf"), ("module", "Plain", "child"),
        ("parameter", "Plain", "p"), ("module", "Sequential", "0"),
        ("module", "Plain", "seq"), ("module", "Sequential", "1"), ("module", "Sequential", "0"),
        ("module", "Sequential", "0"), ("module", "ModuleList", "0"), ("module", "ModuleList", "1"),
        ("module", "ModuleDict", "a"), ("module", "ModuleDict", "b"), ("buffer", "Plain", "buf"),
        ("parameter", "Plain", "w"),
    ]  # fmt: skip
    lin = nn.Linear(2, 3)
    assert chain.calls[-2:] == [("parameter", "Linear", "weight"), ("parameter", "Linear", "bias")]
    bn = nn.BatchNorm2d(3)
    assert [c[2] for c in chain.calls[-5:]] == ["weight", "bias", "running_mean", "running_var",
                                               "num_batches_tracked"]  # fmt: skip
    assert lin.weight is not None and bn.running_mean is not None


def test_a_raising_hook_changes_nothing(chain):
    m = Plain()
    m.register_buffer("nb", pyframe.zeros(1), persistent=False)

    def boom(kind, module, name, value):
        raise ValueError(f"no {kind} {name}")

    chain.fn = boom
    before = snapshot(m)
    attempts = [
        lambda: setattr(m, "buf", nn.Parameter(pyframe.zeros(1))),  # torch drops the buffer before the hook
        lambda: setattr(m, "nb", nn.Linear(1, 1)),
        lambda: setattr(m, "note", nn.Parameter(pyframe.zeros(1))),
        lambda: setattr(m, "child", None),
        lambda: setattr(m, "buf", pyframe.ones(3)),
        lambda: m.register_parameter("new", nn.Parameter(pyframe.zeros(1))),
        lambda: m.register_buffer("nb", pyframe.zeros(1)),  # would make it persistent
        lambda: m.add_module("c2", nn.ReLU()),
    ]
    for attempt in attempts:
        with pytest.raises(ValueError, match="^no "):
            attempt()
        assert snapshot(m) == before


def test_failed_validation_changes_nothing():
    m = Plain()
    before = snapshot(m)
    for attempt in (
        lambda: setattr(m, "w", pyframe.zeros(2)),
        lambda: m.register_parameter("buf", nn.Parameter(pyframe.zeros(1))),
        lambda: setattr(m, "forward", nn.Parameter(pyframe.zeros(1))),
        lambda: m.register_buffer("x", [1]),
    ):
        with pytest.raises((TypeError, KeyError)):
            attempt()
        assert snapshot(m) == before


def test_chain_results_are_checked_and_applied(chain):
    # BLOCK registers None (API.md): absent from parameters, buffers, state_dict
    chain.fn = lambda kind, module, name, value: module_mod.BLOCK if name == "bias" else value
    lin = nn.Linear(3, 2)
    assert lin.bias is None and "bias" in lin._parameters and len(list(lin.parameters())) == 1
    assert list(lin.state_dict()) == ["weight"]
    assert lin(pyframe.ones(1, 3)).shape == (1, 2)
    assert nn.BLOCK is module_mod.BLOCK and repr(nn.BLOCK) == "pyframe.nn.BLOCK"
    # a blocked child of a Sequential is the identity
    chain.fn = lambda kind, module, name, value: module_mod.BLOCK if isinstance(value, nn.Tanh) else value
    seq = nn.Sequential(nn.Linear(2, 2), nn.Tanh())
    assert seq[1] is None and len(seq) == 2 and list(seq) == [seq[0]]
    x = pyframe.randn(3, 2)
    np.testing.assert_allclose(arr(seq(x)), arr(seq[0](x)))
    layers = nn.ModuleList([nn.Tanh(), nn.ReLU(), nn.Tanh()])
    assert len(layers) == 3 and layers[0] is None and [type(m) for m in layers] == [nn.ReLU]
    assert repr(layers) == "ModuleList(\n  (0): None\n  (1): ReLU()\n  (2): None\n)"
    # a plain tensor returned for a parameter becomes a Parameter, keeping requires_grad (seed 000's .to())
    chain.fn = lambda kind, module, name, value: value.to(dtype=pyframe.float64) if kind == "parameter" else value
    lin = nn.Linear(2, 2)
    assert type(lin.weight) is nn.Parameter and lin.weight.dtype == pyframe.float64 and lin.weight.is_leaf
    assert lin.weight.requires_grad
    # a wrong kind is refused and nothing is registered
    chain.fn = lambda kind, module, name, value: 3
    m = nn.Module()
    with pytest.raises(TypeError):
        m.register_buffer("b", pyframe.zeros(1))
    with pytest.raises(TypeError):
        m.add_module("c", nn.ReLU())
    assert snapshot(m) == snapshot(nn.Module())


def test_layers_register_initialised_parameters(chain):
    """API.md: built-in layers initialise before registering, so a hook's edit is final (seed 000)."""

    def custom(kind, module, name, value):
        if kind == "parameter" and name == "weight" and isinstance(module, nn.Linear):
            assert float(value.abs().max()) > 0.05  # already kaiming-initialised
            with pyframe.no_grad():
                value.uniform_(-0.05, 0.05)
        return value

    chain.fn = custom
    lin = nn.Linear(30, 40)
    assert float(lin.weight.abs().max()) <= 0.05


# ---- iteration -------------------------------------------------------------------------------------------


def _shared_model(lib_nn):
    shared = lib_nn.Linear(2, 2)
    m = lib_nn.Sequential(shared, lib_nn.ReLU(), lib_nn.Sequential(shared, lib_nn.Linear(2, 3, bias=False)))
    m.register_buffer("b", (torch if lib_nn is torch.nn else pyframe).zeros(1))
    m[2].register_buffer("nb", (torch if lib_nn is torch.nn else pyframe).zeros(1), persistent=False)
    m.extra = m[2][1].weight  # the same Parameter under a second name
    return m


@needs_torch
def test_named_iteration_matches_torch():
    t, p = _shared_model(torch.nn), _shared_model(nn)
    calls = [
        lambda m: [n for n, _ in m.named_parameters()],
        lambda m: [n for n, _ in m.named_parameters(remove_duplicate=False)],
        lambda m: [n for n, _ in m.named_parameters(prefix="net", recurse=True)],
        lambda m: [n for n, _ in m.named_parameters(recurse=False)],
        lambda m: [n for n, _ in m.named_buffers()],
        lambda m: [n for n, _ in m.named_buffers(prefix="x", remove_duplicate=False)],
        lambda m: [n for n, _ in m.named_children()],
        lambda m: [n for n, _ in m.named_modules()],
        lambda m: [n for n, _ in m.named_modules(prefix="root")],
        lambda m: [n for n, _ in m.named_modules(remove_duplicate=False)],
        lambda m: [type(c).__name__ for c in m.children()],
        lambda m: [type(c).__name__ for c in m.modules()],
        lambda m: [tuple(q.shape) for q in m.parameters()],
        lambda m: list(m.state_dict()),
        lambda m: len(list(m.buffers())),
    ]
    for call in calls:
        assert call(p) == call(t)
    assert len(list(p.parameters())) == 3
    assert p.get_submodule("2.1") is p[2][1] and p.get_parameter("2.1.weight") is p.extra
    assert p.get_buffer("2.nb") is p[2].nb
    with pytest.raises(AttributeError):
        p.get_submodule("2.7")


def test_dir_lists_registered_names():
    m = Plain()
    names = dir(m)
    assert {"w", "buf", "child", "note", "forward"} <= set(names)
    assert "3" not in dir(nn.Sequential(*[nn.ReLU()] * 4))


# ---- state_dict -----------------------------------------------------------------------------------------


def test_state_dict_contents():
    m = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    m.register_buffer("tmp", pyframe.ones(1), persistent=False)
    sd = m.state_dict()
    assert list(sd) == ["0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                        "1.num_batches_tracked"]  # fmt: skip
    assert isinstance(sd, OrderedDict) and sd._metadata[""] == {"version": 1} and sd._metadata["1"]["version"] == 2
    assert type(sd["0.weight"]) is pyframe.Tensor and not sd["0.weight"].requires_grad
    assert sd["0.weight"].data_ptr() == m[0].weight.data_ptr()  # detached, not copied
    assert m.state_dict(keep_vars=True)["0.weight"] is m[0].weight
    assert list(m.state_dict(prefix="model."))[0] == "model.0.weight"


def test_load_state_dict_copies_in_place():
    src, dst = nn.Linear(3, 2), nn.Linear(3, 2)
    w = dst.weight
    result = dst.load_state_dict(src.state_dict())
    assert (
        result.missing_keys == [] and result.unexpected_keys == [] and repr(result) == "<All keys matched successfully>"
    )
    assert dst.weight is w and w.requires_grad and w.is_leaf
    np.testing.assert_array_equal(arr(dst.weight), arr(src.weight))
    assert dst.weight.data_ptr() != src.weight.data_ptr()
    # assign=True stores the given tensors (as Parameters keeping requires_grad)
    sd = {"weight": pyframe.zeros(2, 3), "bias": pyframe.ones(2)}
    dst.load_state_dict(sd, assign=True)
    assert type(dst.weight) is nn.Parameter and dst.weight.data_ptr() == sd["weight"].data_ptr()
    assert dst.weight.requires_grad


@needs_torch
def test_load_state_dict_errors_match_torch():
    def attempt(lib_nn, lib, strict, sd_edit):
        m = lib_nn.Sequential(lib_nn.Linear(3, 2), lib_nn.BatchNorm1d(2))
        sd = OrderedDict((k, lib.from_numpy(arr(v).copy())) for k, v in m.state_dict().items())
        sd_edit(sd, lib)
        try:
            return m.load_state_dict(sd, strict=strict), None
        except RuntimeError as e:
            return None, str(e)

    edits = [
        lambda sd, lib: sd.pop("0.bias"),
        lambda sd, lib: sd.update({"extra": lib.zeros(1), "1.nope": lib.zeros(1), "2.x": lib.zeros(1)}),
        lambda sd, lib: (sd.pop("1.running_var"), sd.update({"0.foo": lib.zeros(1)})),
        lambda sd, lib: sd.update({"0.weight": lib.zeros(5, 5)}),
        lambda sd, lib: (sd.update({"0.weight": lib.zeros(5, 5)}), sd.pop("0.bias")),
        lambda sd, lib: sd.pop("1.num_batches_tracked"),  # old checkpoints: filled in by BatchNorm
    ]
    for edit in edits:
        for strict in (True, False):
            (tr, te), (pr, pe) = attempt(torch.nn, torch, strict, edit), attempt(nn, pyframe, strict, edit)
            if te is None:
                assert pe is None and tuple(pr) == tuple(tr)
            else:
                assert pe == te.replace("torch.Size", "pyframe.Size")
    with pytest.raises(RuntimeError, match=r'^Error\(s\) in loading state_dict for Linear:\n\tMissing key\(s\) in '
                                           r'state_dict: "bias". $'):  # fmt: skip
        nn.Linear(1, 1).load_state_dict({"weight": pyframe.zeros(1, 1)})
    with pytest.raises(TypeError):
        nn.Linear(1, 1).load_state_dict([1])


def test_state_dict_hooks():
    m = nn.Linear(1, 1)
    seen = []
    h1 = m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
    h2 = m.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *rest: seen.append(sorted(sd)))
    assert m.load_state_dict({"weight": pyframe.zeros(1, 1)}).missing_keys == []
    assert seen == [["weight"]]
    h1.remove()
    h2.remove()
    with pytest.raises(RuntimeError):
        m.load_state_dict({"weight": pyframe.zeros(1, 1)})


# ---- modes, dtypes, apply ------------------------------------------------------------------------------


def test_train_eval_requires_grad_zero_grad():
    m = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.Dropout(), nn.BatchNorm1d(2)))
    assert all(x.training for x in m.modules())
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(ValueError):
        m.train("yes")
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    m(pyframe.randn(4, 2)).sum().backward()
    assert all(p.grad is not None for p in m.parameters())
    m.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum()) == 0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())


def test_to_dtype_keeps_parameter_identity():
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    params = list(m.parameters())
    m(pyframe.randn(4, 2)).sum().backward()
    assert m.double() is m
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]
    assert all(p.dtype == pyframe.float64 and p.grad.dtype == pyframe.float64 for p in params)
    assert all(type(p) is nn.Parameter and p.requires_grad and p.is_leaf for p in params)
    assert m[1].running_mean.dtype == pyframe.float64 and m[1].num_batches_tracked.dtype == pyframe.int64
    assert m(pyframe.randn(4, 2, dtype=pyframe.float64)).dtype == pyframe.float64
    m.to(pyframe.float16)
    assert m[0].weight.dtype == pyframe.float16
    m.float()
    assert m[0].weight.dtype == pyframe.float32
    m.to(pyframe.zeros(1, dtype=pyframe.float64))
    assert m[0].bias.dtype == pyframe.float64
    assert m.to("cpu") is m and m.to(device="cpu", dtype=pyframe.float32)[0].weight.dtype == pyframe.float32
    with pytest.raises(TypeError):
        m.to(pyframe.int64)
    with pytest.raises(ValueError):
        m.to("cuda")


def test_apply_visits_children_first():
    m = nn.Sequential(nn.Linear(1, 1), nn.Sequential(nn.ReLU()))
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen == ["Linear", "ReLU", "Sequential", "Sequential"]


# ---- repr ---------------------------------------------------------------------------------------------------


def _repr_model(lib_nn):
    class Net(lib_nn.Module):
        def __init__(self):
            super().__init__()
            self.features = lib_nn.Sequential(
                lib_nn.Conv2d(3, 8, 3, padding=1), lib_nn.BatchNorm2d(8), lib_nn.ReLU(inplace=True),
                lib_nn.MaxPool2d(2), lib_nn.Conv2d(8, 8, (3, 5), stride=2, dilation=2, groups=4, bias=False),
                lib_nn.AvgPool2d(2, stride=1), lib_nn.Flatten(),
            )  # fmt: skip
            self.blocks = lib_nn.ModuleList([lib_nn.Linear(4, 4) for _ in range(3)] + [lib_nn.Linear(4, 2)])
            self.heads = lib_nn.ModuleDict({"a": lib_nn.LayerNorm(4), "b": lib_nn.Embedding(10, 3, padding_idx=0)})
            self.misc = lib_nn.Sequential(
                lib_nn.GELU(), lib_nn.GELU(approximate="tanh"), lib_nn.Tanh(), lib_nn.Sigmoid(), lib_nn.Softmax(dim=1),
                lib_nn.Dropout(0.2), lib_nn.Identity(), lib_nn.BatchNorm1d(4, affine=False, momentum=None),
                lib_nn.MSELoss(), lib_nn.CrossEntropyLoss(), lib_nn.NLLLoss(), lib_nn.BCEWithLogitsLoss(),
                lib_nn.Flatten(0, 2), lib_nn.Sequential(), lib_nn.ModuleList(),
            )  # fmt: skip
            self.empty = None
            self.register_module("nothing", None)

    return Net()


@needs_torch
def test_repr_matches_torch():
    assert repr(_repr_model(nn)) == repr(_repr_model(torch.nn))


def test_repr_layout():
    m = nn.Sequential(nn.Linear(1, 2), nn.Sequential(nn.ReLU()))
    assert repr(m) == (
        "Sequential(\n  (0): Linear(in_features=1, out_features=2, bias=True)\n"
        "  (1): Sequential(\n    (0): ReLU()\n  )\n)"
    )

    class Custom(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(1, 1)

        def extra_repr(self):
            return "a=1\nb=2"

    assert repr(Custom()) == "Custom(\n  a=1\n  b=2\n  (lin): Linear(in_features=1, out_features=1, bias=True)\n)"


# ---- calling and hooks -------------------------------------------------------------------------------------


# ---- containers ------------------------------------------------------------------------------------------------


# ---- copy and pickle -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copy_round_trip(how):
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.ReLU())
    m.shared = m[0].weight
    m.register_buffer("nb", pyframe.ones(1), persistent=False)
    m.eval()
    c = copy.deepcopy(m) if how == "deepcopy" else pickle.loads(pickle.dumps(m))
    assert type(c) is nn.Sequential and not c.training and repr(c) == repr(m)
    assert c.shared is c[0].weight and type(c.shared) is nn.Parameter and c.shared.requires_grad
    assert c[0].weight.data_ptr() != m[0].weight.data_ptr()
    for (k1, v1), (k2, v2) in zip(m.state_dict().items(), c.state_dict().items(), strict=True):
        assert k1 == k2 and v1.dtype == v2.dtype
        np.testing.assert_array_equal(arr(v1), arr(v2))
    assert "nb" in c._non_persistent_buffers_set
    x = pyframe.randn(4, 2)
    np.testing.assert_allclose(arr(c(x)), arr(m(x)))


def test_setstate_fills_missing_hook_dicts():
    m = nn.Linear(1, 1)
    state = m.__getstate__()
    del state["_forward_hooks_always_called"], state["_backward_pre_hooks"]
    n = nn.Linear.__new__(nn.Linear)
    n.__setstate__(state)
    assert n(pyframe.ones(1, 1)).shape == (1, 1)
    n.register_forward_hook(lambda *a: None, always_call=True)


# ---- nn.utils ------------------------------------------------------------------------------------------------
