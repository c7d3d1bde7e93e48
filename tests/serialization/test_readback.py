"""Whatever pyframe.save accepts, pyframe.load returns; whatever load accepts matches the documented format.
Each case here was a checkpoint pyframe wrote but could not read back, or read against its own docs."""

from __future__ import annotations

import collections
import io
import json
import struct
import zlib

import numpy as np
import pytest

import pyframe as pf
from pyframe.optim.lr_scheduler import MultiStepLR
from pyframe.serialization import CheckpointError
from pyframe.serialization.format import MAX_DEPTH


def roundtrip(obj, **kw):
    buf = io.BytesIO()
    pf.save(obj, buf, **kw)
    return pf.load(io.BytesIO(buf.getvalue()))


@pytest.mark.parametrize("fmt", ["pyframe", "torch"])
def test_scheduler_state_dicts_with_a_counter_save_and_load(fmt):
    model = pf.nn.Linear(2, 2)
    opt = pf.optim.SGD(model.parameters(), lr=0.1)
    sched = MultiStepLR(opt, milestones=[2, 4, 4], gamma=0.5)
    sched.step()
    state = sched.state_dict()
    out = roundtrip(state, format=fmt)
    assert out == state and type(out["milestones"]) is collections.Counter
    assert out["milestones"] == collections.Counter({2: 1, 4: 2})
    sched2 = MultiStepLR(pf.optim.SGD(pf.nn.Linear(2, 2).parameters(), lr=0.1), milestones=[9])
    sched2.load_state_dict(out)
    assert sched2.milestones == sched.milestones and sched2.last_epoch == sched.last_epoch


@pytest.mark.parametrize("fmt", ["pyframe", "torch"])
def test_a_tensor_with_2_to_the_62_elements_loads(fmt):
    x = pf.ones(1).expand(2**62)
    out = roundtrip({"x": x, "y": pf.ones(3)[None].expand(2**20, 3)}, format=fmt)
    assert tuple(out["x"].shape) == (2**62,) and out["x"].stride() == (0,)
    assert float(out["x"][2**62 - 1]) == 1.0 and tuple(out["y"].shape) == (2**20, 3)


def nested(depth: int):
    x = 1
    for _ in range(depth):
        x = (x,)
    return x


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH])
def test_nesting_that_save_accepts_loads(depth):
    assert roundtrip(nested(depth), format="pyframe") == nested(depth)
    assert roundtrip([nested(depth - 1)], format="pyframe") == [nested(depth - 1)]


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 495, 497, 5000])
def test_deeper_nesting_is_refused_on_save_with_a_clear_message(depth):
    with pytest.raises(ValueError, match=f"nested more than {MAX_DEPTH} containers deep"):
        pf.save(nested(depth), io.BytesIO(), format="pyframe")
    with pytest.raises(ValueError, match=f"nested more than {MAX_DEPTH} containers deep"):
        pf.save(nested(depth), io.BytesIO())  # the default does not fall back to a pickle for this


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 200])
def test_torch_format_saves_deep_nesting_and_loads_it(depth):
    assert roundtrip(nested(depth), format="torch") == nested(depth)


def test_torch_format_refuses_what_it_cannot_pickle_clearly():
    with pytest.raises(ValueError, match="nested too deeply"):
        pf.save(nested(5000), io.BytesIO(), format="torch")


def _file_with(edit) -> bytes:
    """A checkpoint with an ndarray, its header changed by ``edit`` and every CRC made valid again."""
    buf = io.BytesIO()
    pf.save({"a": np.arange(4.0), "t": pf.ones(2)}, buf, format="pyframe")
    good = buf.getvalue()
    (hlen,) = struct.unpack_from("<Q", good, 16)
    header = json.loads(good[24 : 24 + hlen])
    data = good[(24 + hlen + 63) // 64 * 64 :]
    edit(header)
    hb = json.dumps(header).encode()
    pre = struct.pack("<8sIIQ", b"PYFRAME\x00", 1, zlib.crc32(hb), len(hb))
    return pre + hb + bytes(-(24 + len(hb)) % 64) + data


def _array_entry(h: dict) -> dict:
    return h["tensors"][h["object"]["$dict"]["a"]["$ndarray"]]


def test_the_crafting_helper_makes_a_valid_file():
    out = pf.load(io.BytesIO(_file_with(lambda h: None)))
    assert np.array_equal(out["a"], np.arange(4.0))


def test_an_ndarray_with_stride_0_is_refused():
    def stride0(h):
        _array_entry(h)["stride"] = [0]

    with pytest.raises(CheckpointError, match=r"obj\['a'\]: array 0 has strides \[0\].*C-contiguous"):
        pf.load(io.BytesIO(_file_with(stride0)))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda h: _array_entry(h).update(stride=[2], shape=[2]), "C-contiguous"),
        (lambda h: _array_entry(h).update({"class": "Parameter"}), "stored as a Parameter"),
        (lambda h: h["object"]["$dict"].update(b={"$tensor": h["object"]["$dict"]["a"]["$ndarray"]}), "share memory"),
        (lambda h: h["tensors"].append(dict(_array_entry(h))) or h["object"]["$dict"].update(
            b={"$tensor": len(h["tensors"]) - 1}), "shares its storage"),
    ],
)  # fmt: skip
def test_an_ndarray_that_would_alias_other_memory_is_refused(edit, message):
    with pytest.raises(CheckpointError, match=message):
        pf.load(io.BytesIO(_file_with(edit)))


def test_one_array_saved_twice_loads_as_one_array():
    a = np.arange(3)
    out = roundtrip({"x": a, "y": a}, format="pyframe")
    assert out["x"] is out["y"] and out["x"].flags.c_contiguous and out["x"].flags.writeable


def test_a_file_nested_deeper_than_save_writes_is_refused():
    def deepen(h):
        obj = h["object"]
        for _ in range(MAX_DEPTH + 1):
            obj = [obj]
        h["object"] = obj

    with pytest.raises(CheckpointError, match="nests more than"):
        pf.load(io.BytesIO(_file_with(deepen)))
