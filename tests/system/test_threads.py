"""Results do not depend on the thread count: one thread and two give identical bits."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe
from tests._helpers import npy

N = 1_000_000


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(99)
    return {
        "x": pyframe.tensor(rng.standard_normal(N).astype(np.float32)),
        "y": pyframe.tensor(rng.standard_normal(N).astype(np.float32)),
        "m": pyframe.tensor(rng.standard_normal((1000, 1000)).astype(np.float32)),
        "d": pyframe.tensor(rng.standard_normal((1000, 1000))),
        "h": pyframe.tensor(rng.standard_normal(N).astype(np.float16)),
        "i": pyframe.tensor(rng.integers(-100, 100, N)),
        "i32": pyframe.tensor(rng.integers(-100, 100, N).astype(np.int32)),
    }


OPS = {
    # elementwise
    "exp": lambda d: d["x"].exp(),
    "tanh": lambda d: d["x"].tanh(),
    "sigmoid": lambda d: pyframe.sigmoid(d["m"]),
    "log_abs": lambda d: d["x"].abs().log(),
    "add": lambda d: d["x"] + d["y"],
    "mul_broadcast": lambda d: d["m"] * d["m"][0],
    "div_strided": lambda d: d["m"][:, ::2] / (d["m"][:, 1::2].abs() + 1),
    "maximum_T": lambda d: pyframe.maximum(d["m"], d["m"].T),
    "pow": lambda d: d["x"].abs() ** 1.5,
    "compare": lambda d: d["x"] < d["y"],
    "where": lambda d: pyframe.where(d["x"] > 0, d["x"], d["y"]),
    "cast": lambda d: d["x"].to(pyframe.float16),
    "contiguous_T": lambda d: d["m"].T.contiguous(),
    "clamp": lambda d: d["x"].clamp(-0.5, 0.5),
    "half_exp": lambda d: d["h"].exp(),
    "int_mul": lambda d: d["i"] * d["i"] + 3,
    "int_floordiv": lambda d: d["i32"] // 7,
    "triu": lambda d: d["m"].triu(3),
    "masked_fill": lambda d: d["m"].masked_fill(d["m"] > 1, 0.0),
    "index": lambda d: d["m"][[5, 900, 2], ::3],
    # reductions
    "sum": lambda d: d["x"].sum(),
    "sum_f64": lambda d: d["d"].sum(),
    "sum_half": lambda d: d["h"].sum(),
    "sum_int": lambda d: d["i"].sum(),
    "sum_dim0": lambda d: d["m"].sum(0),
    "sum_dim1": lambda d: d["m"].sum(1),
    "sum_T": lambda d: d["m"].T.sum(1),
    "mean": lambda d: d["x"].mean(),
    "var": lambda d: d["x"].var(),
    "std_dim": lambda d: d["d"].std(0),
    "prod": lambda d: (d["x"].abs() * 0.001 + 1).prod(),
    "max": lambda d: d["x"].max(),
    "max_dim": lambda d: d["m"].max(1).values,
    "argmax": lambda d: d["x"].argmax(),
    "argmin_dim": lambda d: d["m"].argmin(0),
    "amax_tuple": lambda d: d["d"].amax((0, 1)),
    "norm": lambda d: d["x"].norm(),
    "any": lambda d: (d["x"] > 4.5).any(),
    "all_dim": lambda d: (d["m"] > -4).all(1),
    "logsumexp": lambda d: pyframe.logsumexp(d["m"], 1),
    "softmax_last": lambda d: d["m"].softmax(-1),
    "softmax_first": lambda d: d["m"].softmax(0),
    "log_softmax": lambda d: d["d"].log_softmax(1),
}


@pytest.mark.parametrize("name", list(OPS))
def test_one_and_two_threads_agree(name, data, restore_threads):
    pyframe.set_num_threads(1)
    assert pyframe.get_num_threads() == 1
    one = npy(OPS[name](data))
    pyframe.set_num_threads(2)
    assert pyframe.get_num_threads() == 2
    two = npy(OPS[name](data))
    np.testing.assert_array_equal(one, two)


def test_reductions_are_accurate_at_this_size(data):
    x = npy(data["x"]).astype(np.float64)
    np.testing.assert_allclose(data["x"].sum().item(), x.sum(), rtol=1e-5, atol=1e-2)
    np.testing.assert_allclose(data["x"].var().item(), x.var(ddof=1), rtol=1e-5)
    np.testing.assert_allclose(npy(data["m"].sum(0)), npy(data["m"]).astype(np.float64).sum(0), rtol=1e-4, atol=1e-3)
    assert data["i"].sum().item() == int(npy(data["i"]).sum())


def test_set_num_threads_round_trip(restore_threads):
    pyframe.set_num_threads(1)
    assert pyframe.get_num_threads() == 1
    pyframe.set_num_threads(3)
    assert pyframe.get_num_threads() == 3
