"""pyframe.testing: assert_close's tolerances and messages, make_tensor's draws, checked against torch.testing."""

from __future__ import annotations

import math

import numpy as np
import pytest

import pyframe as pf
from pyframe.testing import assert_close, make_tensor


def _message(fn) -> tuple[type, str] | None:
    try:
        fn()
    except (AssertionError, TypeError, ValueError) as e:
        return type(e), str(e).replace("pyframe.tensor.Tensor", "T").replace("torch.Tensor", "T").replace(
            "pyframe.", "").replace("torch.", "")  # fmt: skip
    return None


# (actual, expected, keyword arguments) built from plain data by either library
CASES = {
    "close": lambda t: (t.tensor([1.0, 2.0]), t.tensor([1.0, 2.0 + 1e-6]), {}),
    "far 1-d": lambda t: (t.tensor([1.0, 2.0, 3.0]), t.tensor([1.0, 2.5, 3.0]), {}),
    "far 2-d": lambda t: (t.tensor([[1.0, 2.0], [3.0, 4.0]]), t.tensor([[1.0, 2.0], [3.0, 5.0]]), {}),
    "integers": lambda t: (t.tensor([1, 2, 3]), t.tensor([1, 2, 4]), {}),
    "bool": lambda t: (t.tensor([True, False]), t.tensor([True, True]), {}),
    "dtype": lambda t: (t.tensor([1.0]), t.tensor([1.0], dtype=t.float64), {}),
    "dtype unchecked": lambda t: (t.tensor([1, 2]), t.tensor([1.0, 2.0]), {"check_dtype": False}),
    "shape": lambda t: (t.tensor([1.0, 2.0, 3.0]), t.tensor([1.0, 2.0]), {}),
    "nan": lambda t: (t.tensor([math.nan]), t.tensor([math.nan]), {}),
    "nan equal": lambda t: (t.tensor([math.nan]), t.tensor([math.nan]), {"equal_nan": True}),
    "inf": lambda t: (t.tensor([1.0, math.inf]), t.tensor([1.0, -math.inf]), {}),
    "0-d": lambda t: (t.tensor(1.0), t.tensor(1.5), {}),
    "float scalars": lambda t: (1.0, 1.5, {}),
    "int scalars": lambda t: (1, 2, {}),
    "bfloat16 tolerance": lambda t: (t.tensor([1.0, 2.0]).bfloat16(), t.tensor([1.0, 2.01]).bfloat16(), {}),
    "float64 given tolerances": lambda t: (
        t.tensor([1.0, 2.0], dtype=t.float64),
        t.tensor([1.0, 2.5], dtype=t.float64),
        {"rtol": 0.0, "atol": 1e-7},
    ),
    "only rtol": lambda t: (t.tensor([1.0]), t.tensor([1.0]), {"rtol": 1e-3}),
    "sequence item": lambda t: ([t.tensor(1.0), t.tensor(2.0)], [t.tensor(1.0), t.tensor(3.0)], {}),
    "mapping item": lambda t: ({"a": t.tensor(1.0)}, {"a": t.tensor(3.0)}, {}),
    "lengths": lambda t: ([1, 2], [1, 2, 3], {}),
    "keys": lambda t: ({"a": 1}, {"b": 1}, {}),
    "tensor and number": lambda t: (t.tensor(1.0), 1.0, {}),
    "tensor and list": lambda t: (t.tensor([1.0]), [1.0], {}),
    "None": lambda t: (None, 1, {}),
    "msg": lambda t: (t.tensor([1.0, 2.0]), t.tensor([1.0, 2.1]), {"msg": "custom"}),
    "msg callable": lambda t: (t.tensor([1.0, 2.0]), t.tensor([1.0, 2.1]), {"msg": lambda m: "X" + m}),
    "stride": lambda t: (t.zeros(2, 3).T, t.zeros(3, 2), {"check_stride": True}),
    "arrays": lambda t: (np.array([1.0, 2.0]), np.array([1.0, 2.5]), {}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_assert_close_agrees_with_torch(name):
    torch = pytest.importorskip("torch")
    a, e, kw = CASES[name](pf)
    ours = _message(lambda: assert_close(a, e, **kw))
    a, e, kw = CASES[name](torch)
    theirs = _message(lambda: torch.testing.assert_close(a, e, **kw))
    assert ours == theirs


def test_default_tolerances_per_dtype():
    assert_close(pf.tensor([1.0]), pf.tensor([1.0 + 1e-5]))  # atol 1e-5 for float32
    with pytest.raises(AssertionError, match="up to 1e-07 allowed"):
        assert_close(pf.tensor([1.0], dtype=pf.float64), pf.tensor([1.0 + 1e-6], dtype=pf.float64))
    assert_close(pf.tensor([100.0]).half(), pf.tensor([100.0625]).half())  # rtol 1e-3 for float16
    with pytest.raises(AssertionError, match="Tensor-likes are not equal!"):
        assert_close(pf.tensor([1, 2]), pf.tensor([1, 3]))


def test_make_tensor_ranges_and_options(restore_seed):
    pf.manual_seed(0)
    t = make_tensor((200,), dtype=pf.float32, device="cpu", low=-2, high=3)
    assert t.shape == (200,) and t.dtype == pf.float32 and t.min().item() >= -2 and t.max().item() < 3
    i = make_tensor(2, 100, dtype=pf.int64, device="cpu", low=-3.5, high=3.5)
    assert i.shape == (2, 100) and i.min().item() >= -3 and i.max().item() <= 3  # bounds rounded up
    assert set(make_tensor((100,), dtype=pf.uint8, device="cpu").unique().tolist()) <= set(range(10))
    assert make_tensor((100,), dtype=pf.bool, device="cpu").dtype == pf.bool
    nc = make_tensor((2, 3), dtype=pf.float64, device="cpu", noncontiguous=True)
    assert nc.shape == (2, 3) and not nc.is_contiguous() and nc.stride() == (6, 2)
    nz = make_tensor((500,), dtype=pf.int8, device="cpu", low=-1, high=2, exclude_zero=True)
    assert (nz == 0).sum().item() == 0
    z = make_tensor((3,), dtype=pf.float32, device="cpu", low=-1e-40, high=1e-40, exclude_zero=True)
    assert (z == 0).sum().item() == 0
    assert make_tensor([2, 2], dtype=pf.float32, device="cpu", requires_grad=True).requires_grad
    assert make_tensor((), dtype=pf.float32, device="cpu").shape == ()


def test_make_tensor_errors_match_torch():
    torch = pytest.importorskip("torch")
    bad = [
        dict(dtype="float32", low=5, high=4),
        dict(dtype="float32", low=math.nan),
        dict(dtype="int64", requires_grad=True),
        dict(dtype="uint8", low=-20, high=-10),
    ]
    for kw in bad:
        msgs = []
        for lib in (pf, torch):
            args = dict(kw, dtype=getattr(lib, kw["dtype"]))
            with pytest.raises(ValueError) as info:
                lib.testing.make_tensor((2, 3), device="cpu", **args)
            msgs.append(str(info.value).replace("torch.", "").replace("pyframe.", ""))
        assert msgs[0] == msgs[1]
    with pytest.raises(TypeError, match="dtype"):
        make_tensor((2,), dtype="float32", device="cpu")
    with pytest.raises(pf.DeviceError):
        make_tensor((2,), dtype=pf.float32, device="cuda")
