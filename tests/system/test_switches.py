"""torch's global switches: the default dtype, finfo/iinfo, inference_mode, compile,
deterministic algorithms, print options, can_cast/promote_types, matmul precision, interop threads,
flush-denormal, the legacy default tensor type, typename, the global generator object."""

import numpy as np
import pytest

import pyframe


@pytest.fixture
def default_float():
    yield
    pyframe.set_default_dtype(pyframe.float32)


def test_set_default_dtype_reaches_factories_layers_and_promotion(default_float):
    assert pyframe.get_default_dtype() == pyframe.float32
    pyframe.set_default_dtype(pyframe.float64)
    assert pyframe.get_default_dtype() == pyframe.float64
    made = [
        pyframe.randn(2), pyframe.zeros(2), pyframe.ones(1), pyframe.tensor([1.5]), pyframe.arange(0.0, 1.0, 0.5),
        pyframe.linspace(0, 1, 3), pyframe.nn.Linear(2, 2).weight, pyframe.tensor([1, 2]) * 2.5,
    ]  # fmt: skip
    assert all(t.dtype == pyframe.float64 for t in made)
    assert pyframe.tensor([1, 2]).dtype == pyframe.int64  # integers keep int64
    with pytest.raises(TypeError, match="floating-point"):
        pyframe.set_default_dtype(pyframe.int64)


def test_default_dtype_matches_torch(default_float):
    torch = pytest.importorskip("torch")
    try:
        torch.set_default_dtype(torch.float64)
        pyframe.set_default_dtype(pyframe.float64)
        for fn in (lambda L: L.tensor([1.0, 2.0]), lambda L: L.arange(0.0, 2.0), lambda L: L.tensor([1, 2]) / 3):
            assert fn(pyframe).dtype.name == str(fn(torch).dtype).split(".")[1]
    finally:
        torch.set_default_dtype(torch.float32)


def test_finfo_iinfo_match_torch():
    torch = pytest.importorskip("torch")
    for name in ("float32", "float64", "float16"):
        ours, theirs = pyframe.finfo(getattr(pyframe, name)), torch.finfo(getattr(torch, name))
        assert (ours.eps, ours.max, ours.min, ours.tiny, ours.bits) == (
            theirs.eps, theirs.max, theirs.min, theirs.tiny, theirs.bits,
        )  # fmt: skip
    for name in ("int32", "int64"):
        ours, theirs = pyframe.iinfo(getattr(pyframe, name)), torch.iinfo(getattr(torch, name))
        assert (ours.max, ours.min, ours.bits) == (theirs.max, theirs.min, theirs.bits)
    with pytest.raises(TypeError, match="iinfo"):
        pyframe.finfo(pyframe.int64)
    with pytest.raises(TypeError, match="finfo"):
        pyframe.iinfo(pyframe.float32)
    for a in ("float32", "int64", "bool", "int32"):
        for b in ("float64", "int32", "bool"):
            assert pyframe.can_cast(getattr(pyframe, a), getattr(pyframe, b)) == torch.can_cast(
                getattr(torch, a), getattr(torch, b)
            )


def test_inference_mode_nests_and_decorates():
    x = pyframe.ones(2, requires_grad=True)
    with pyframe.inference_mode():
        assert not pyframe.is_grad_enabled() and pyframe.is_inference_mode_enabled()
        with pyframe.inference_mode():
            pass
        assert pyframe.is_inference_mode_enabled()  # the inner exit keeps the outer mode
        assert (x * 2).grad_fn is None
        with pyframe.inference_mode(False):
            assert pyframe.is_inference_mode_enabled()
    assert pyframe.is_grad_enabled() and not pyframe.is_inference_mode_enabled()

    @pyframe.inference_mode()
    def called():
        return pyframe.is_grad_enabled()

    @pyframe.inference_mode
    def bare():
        return pyframe.is_grad_enabled()

    assert called() is False and bare() is False and pyframe.is_grad_enabled()


def test_compile_returns_the_model_and_results_are_unchanged():
    model = pyframe.nn.Linear(3, 2)
    x = pyframe.randn(4, 3)
    assert pyframe.compile(model) is model
    assert pyframe.compile(mode="reduce-overhead")(model.forward) == model.forward
    np.testing.assert_array_equal(pyframe.compile(model)(x).detach().numpy(), model(x).detach().numpy())
    with pytest.raises(TypeError, match="Module or a function"):
        pyframe.compile(3)


def test_deterministic_flag_and_print_options():
    try:
        pyframe.use_deterministic_algorithms(True)
        assert pyframe.are_deterministic_algorithms_enabled()
        with pytest.raises(TypeError):
            pyframe.use_deterministic_algorithms("yes")
        pyframe.set_printoptions(precision=2)
        assert repr(pyframe.tensor([1.23456])) == "tensor([1.23])"
        with pytest.raises(ValueError, match="profile"):
            pyframe.set_printoptions(profile="tiny")
    finally:
        pyframe.use_deterministic_algorithms(False)
        pyframe.set_printoptions(profile="default")
    assert repr(pyframe.tensor([1.23456])) == "tensor([1.2346])"
    assert not pyframe.is_complex(pyframe.zeros(1))


def test_recorded_switches_check_their_input():
    before = pyframe.get_float32_matmul_precision()
    try:
        pyframe.set_float32_matmul_precision("high")
        assert pyframe.get_float32_matmul_precision() == "high"
        with pytest.raises(RuntimeError, match="highest"):
            pyframe.set_float32_matmul_precision("low")
    finally:
        pyframe.set_float32_matmul_precision(before)
    n = pyframe.get_num_interop_threads()
    try:
        pyframe.set_num_interop_threads(2)
        assert pyframe.get_num_interop_threads() == 2
        with pytest.raises(RuntimeError, match="positive"):
            pyframe.set_num_interop_threads(0)
    finally:
        pyframe.set_num_interop_threads(n)
    assert pyframe.set_flush_denormal(True) is False  # denormals stay IEEE: nothing changed
    assert pyframe.tensor([1e-40], dtype=pyframe.float32).item() != 0.0
    with pytest.raises(TypeError):
        pyframe.set_flush_denormal(1)


def test_set_default_tensor_type_and_typename(default_float):
    pyframe.set_default_tensor_type(pyframe.DoubleTensor)
    assert pyframe.ones(1).dtype is pyframe.float64
    pyframe.set_default_tensor_type("torch.FloatTensor")
    assert pyframe.ones(1).dtype is pyframe.float32
    with pytest.raises(TypeError, match="floating tensor type"):
        pyframe.set_default_tensor_type(pyframe.LongTensor)
    assert pyframe.typename(pyframe.ones(1)) == "pyframe.FloatTensor"
    assert pyframe.typename(pyframe.nn.Linear(1, 1)) == "pyframe.nn.modules.linear.Linear"
    assert pyframe.typename(3) == "int" and not pyframe.is_storage(pyframe.ones(1))
    assert pyframe.ones(3)[:, pyframe.newaxis].shape == (3, 1)


def test_range_includes_its_end_and_warns():
    with pytest.warns(UserWarning, match="deprecated"):
        assert pyframe.range(0, 4).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.warns(UserWarning):
        r = pyframe.range(1, 2, 0.25, dtype=pyframe.float64)
    assert r.tolist() == [1.0, 1.25, 1.5, 1.75, 2.0] and r.dtype is pyframe.float64
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="inconsistent"):
        pyframe.range(3, 0)
    assert list(range(3)) == [0, 1, 2]  # Python's range is untouched


def test_default_generator_is_the_global_stream():
    pyframe.manual_seed(3)
    a = pyframe.rand(4)
    pyframe.default_generator.manual_seed(3)
    assert pyframe.rand(4).tolist() == a.tolist()
    assert pyframe.initial_seed() == pyframe.default_generator.initial_seed() == 3
    state = pyframe.default_generator.get_state()
    b = pyframe.rand(2)
    pyframe.set_rng_state(state)
    assert pyframe.rand(2).tolist() == b.tolist()
