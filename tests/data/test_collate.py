"""default_collate: the structure of batches of dicts, tuples, named tuples, numbers, strings and arrays, and
torch's batches."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import pyframe as pf
from pyframe.utils.data import (
    default_collate,
)

Point = collections.namedtuple("Point", "x y")


def _samples():
    return [
        {"img": np.full((2, 2), i, np.float32), "label": i, "w": 0.5 * i, "ok": i % 2 == 0, "name": f"s{i}",
         "pt": Point(i, np.float64(i)), "pair": (np.int32(i), [i, i + 1])}
        for i in range(3)
    ]  # fmt: skip


def test_default_collate_structure():
    b = default_collate(_samples())
    assert b["img"].shape == (3, 2, 2) and b["img"].dtype == pf.float32
    assert b["label"].dtype == pf.int64 and b["label"].tolist() == [0, 1, 2]
    assert b["w"].dtype == pf.float64 and b["ok"].dtype == pf.bool
    assert b["name"] == ["s0", "s1", "s2"]
    assert isinstance(b["pt"], Point) and b["pt"].y.dtype == pf.float64
    assert isinstance(b["pair"], list) and b["pair"][0].dtype == pf.int32
    assert [t.tolist() for t in b["pair"][1]] == [[0, 1, 2], [1, 2, 3]]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [1]])
    with pytest.raises(TypeError, match="found object"):
        default_collate([object(), object()])


def test_default_collate_matches_torch():
    torch = pytest.importorskip("torch")
    ours, theirs = default_collate(_samples()), torch.utils.data.default_collate(_samples())
    for key in ours:
        o, t = ours[key], theirs[key]
        assert type(o).__name__ == type(t).__name__ or (isinstance(o, pf.Tensor) and isinstance(t, torch.Tensor))
        flat_o = o if isinstance(o, (list, tuple)) else [o]
        flat_t = t if isinstance(t, (list, tuple)) else [t]
        for a, c in zip(flat_o, flat_t, strict=True):
            if isinstance(a, pf.Tensor):
                assert str(a.dtype).split(".")[-1] == str(c.dtype).split(".")[-1]
                np.testing.assert_array_equal(a.numpy(), c.numpy())
            elif isinstance(a, list):
                assert [x.tolist() for x in a] == [x.tolist() for x in c]
            else:
                assert a == c


# batches of mixed Python numbers, NumPy scalars and arrays beside tensors: torch's dtype and values (M is the
# library, so each batch is built in both)
MIXED_BATCHES = {
    "int_then_float": lambda M: [1, 2.5],
    "float_then_int": lambda M: [2.5, 1],
    "bool_then_int": lambda M: [True, 2],
    "int_then_bool": lambda M: [2, True],
    "bools": lambda M: [True, False],
    "bool_then_float": lambda M: [True, 2.5],
    "ints": lambda M: [1, 2],
    "numpy_float32_then_float": lambda M: [np.float32(1), 2.5],
    "numpy_int_then_float": lambda M: [np.int64(3), 2.5],
    "int_then_numpy_float64": lambda M: [1, np.float64(2)],
    "numpy_float16_and_int32": lambda M: [np.float16(1), np.int32(2)],
    "huge_int_then_float": lambda M: [2**62, 1.5],
    "tuples_mixed": lambda M: [(1, 2.5), (2.5, 1)],
    "dicts_mixed": lambda M: [{"a": 1}, {"a": 2.5}],
    "lists_mixed": lambda M: [[1, 2.5], [2, 3]],
    "array_then_tensor": lambda M: [np.array([1.0]), M.tensor([2.0])],
    "int_array_then_float_tensor": lambda M: [np.array([1, 2]), M.tensor([2.0, 3.0])],
    "zero_d_array_then_tensor": lambda M: [np.array(1.0), M.tensor(2.0)],
}


def _flat(r):
    if isinstance(r, (list, tuple)):
        return [_flat(x) for x in r]
    if isinstance(r, dict):
        return {k: _flat(v) for k, v in r.items()}
    return str(r.dtype).split(".")[-1], np.asarray(r.numpy()).tolist()


@pytest.mark.parametrize("name", sorted(MIXED_BATCHES))
def test_mixed_batches_collate_as_torch(name):
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate

    want = _flat(torch_collate(MIXED_BATCHES[name](torch)))
    assert _flat(default_collate(MIXED_BATCHES[name](pf))) == want


def test_tensor_after_numpy_arrays_refused_the_other_way_round():
    with pytest.raises(TypeError):
        default_collate([pf.tensor([2.0]), np.array([1.0])])  # torch.stack refuses the array too


@pytest.mark.parametrize("odd", [{"a": True}, {"a": np.float64(3.5)}, "text", object()])
def test_an_element_of_another_kind_among_arrays_is_named(odd):
    # torch refuses it too ("Could not infer dtype of dict"); the message names what could not be batched,
    # whatever its type (a dict once made the message itself fail with a slice lookup)
    with pytest.raises(TypeError, match=f"default_collate: cannot make a tensor of {type(odd).__name__}"):
        default_collate([np.array(3.0), odd, np.array(1.5)])
