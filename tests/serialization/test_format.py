"""The checkpoint format: round trips of every value, dtype and layout, sharing, metadata, the documented layout,
and damaged or hostile files (truncations, flipped bytes, crafted headers, invalid bools, bounded headers)."""

from __future__ import annotations

import collections
import io
import json
import math
import os
import pickle
import struct
import sys
import types
import zlib

import numpy as np
import pytest

import pyframe
from pyframe import serialization as ser
from pyframe.serialization import CheckpointError, load, read_metadata, save
from pyframe.tensor import Tensor

DTYPES = ["float32", "float64", "float16", "int64", "int32", "bool"]


def roundtrip(obj, **kw):
    buf = io.BytesIO()
    save(obj, buf, **kw)
    buf.seek(0)
    return load(buf)


def make(dtype: str, shape, rng) -> Tensor:
    if dtype == "bool":
        arr = rng.random(shape) > 0.5
    elif dtype.startswith("int"):
        arr = rng.integers(-(2**31), 2**31 - 1, size=shape)
    else:
        arr = rng.standard_normal(shape) * 100
    return pyframe.tensor(np.asarray(arr), dtype=getattr(pyframe, dtype if dtype != "bool" else "bool"))


def assert_same_tensor(a: Tensor, b: Tensor) -> None:
    assert type(a) is type(b)
    assert a.dtype == b.dtype
    assert a.shape == b.shape
    assert a.requires_grad == b.requires_grad
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def header_of(data: bytes) -> tuple[dict, int]:
    """(header, where the data section starts) of a checkpoint's bytes."""
    magic, version, crc, hlen = struct.unpack_from("<8sIIQ", data)
    assert (magic, version) == (b"PYFRAME\x00", 1)
    hbytes = data[24 : 24 + hlen]
    assert zlib.crc32(hbytes) == crc
    return json.loads(hbytes), 24 + hlen + (-(24 + hlen) % 64)


def craft(header: dict | bytes, data: bytes = b"") -> bytes:
    """A file with a valid preamble (magic, version, header CRC) around ``header`` and ``data``."""
    hbytes = header if isinstance(header, bytes) else json.dumps(header).encode()
    pre = struct.pack("<8sIIQ", b"PYFRAME\x00", 1, zlib.crc32(hbytes), len(hbytes))
    return pre + hbytes + bytes(-(24 + len(hbytes)) % 64) + data


def saved_bytes(obj, **kw) -> bytes:
    buf = io.BytesIO()
    save(obj, buf, **kw)
    return buf.getvalue()


# ---- round trips ----------------------------------------------------------------------------------


def test_nested_plain_values_round_trip():
    obj = {
        "none": None,
        "bools": [True, False],
        "ints": [0, -1, 2**62, -(2**70), 10**100],
        "floats": [0.0, -0.0, 1.5, 1e-300, 1e300, math.pi],
        "strings": ["", "héllo ✓", "tab\tnewline\n", "\ud800 lone surrogate", '{"$tensor": 0}'],
        "tuple": (1, (2, (3, [4, (5,)])), ()),
        "empty": [[], {}, ()],
        7: "int key",
        -3: {"nested": {0: [None]}},
        "$tensor": "a key that looks like a tag",
        "odict": collections.OrderedDict([("b", 1), ("a", 2)]),
        "odict_int": collections.OrderedDict([(2, "x"), ("y", 3)]),
    }
    out = roundtrip(obj)
    assert out == obj
    assert list(out) == list(obj)  # order kept
    assert type(out["tuple"]) is tuple and type(out["tuple"][1][1][1]) is list
    assert type(out["odict"]) is collections.OrderedDict and list(out["odict"]) == ["b", "a"]
    assert type(out["odict_int"]) is collections.OrderedDict
    assert type(out["ints"][0]) is int and type(out["floats"][0]) is float
    assert math.copysign(1.0, out["floats"][1]) == -1.0
    assert type(out[7]) is str and 7 in out and "7" not in out


def test_non_finite_floats_round_trip():
    out = roundtrip([float("nan"), float("inf"), -float("inf"), (float("nan"),)])
    assert math.isnan(out[0]) and out[1] == math.inf and out[2] == -math.inf and math.isnan(out[3][0])


def test_bare_values_round_trip():
    assert roundtrip(None) is None
    assert roundtrip(3) == 3
    assert roundtrip("s") == "s"
    t = pyframe.arange(6.0)
    assert_same_tensor(roundtrip(t), t)


def test_numpy_scalars_are_saved_as_python_values():
    out = roundtrip([np.float32(1.5), np.int64(3), np.bool_(True), np.float16(0.25)])
    assert out == [1.5, 3, True, 0.25]
    assert [type(v) for v in out] == [float, int, bool, float]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0, 2), (1,), (5,), (3, 4), (2, 1, 3, 1, 2)])
def test_every_dtype_and_shape(dtype, shape, rng):
    t = make(dtype, shape, rng)
    out = roundtrip({"t": t})["t"]
    assert_same_tensor(out, t)
    assert out.is_contiguous() and out.is_leaf
    assert out.data_ptr() != t.data_ptr() or t.numel() == 0  # new memory


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_requires_grad_and_special_float_values(dtype):
    t = pyframe.tensor([0.0, -0.0, float("nan"), float("inf"), -float("inf"), 1e-5], dtype=getattr(pyframe, dtype))
    t.requires_grad_()
    out = roundtrip([t, t.detach()])
    assert out[0].requires_grad and out[0].is_leaf and out[0].grad is None
    assert not out[1].requires_grad
    a, b = out[0].detach().numpy(), t.detach().numpy()
    assert a.tobytes() == b.tobytes()  # bit-exact: signed zero and NaN payloads kept


def test_non_leaf_tensor_is_saved_as_a_leaf():
    x = pyframe.ones(3, requires_grad=True)
    y = x * 2
    out = roundtrip(y)
    assert out.requires_grad and out.is_leaf and out.grad_fn is None
    assert out.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_non_contiguous_views(dtype, rng):
    base = make(dtype, (6, 8), rng)
    views = {
        "T": base.T,
        "cols": base[:, 1::3],
        "rows": base[2:5],
        "elem": base[4, 5],
        "expanded": base[1:2, 2:3].expand(4, 3),
        "permuted": make(dtype, (2, 3, 4), rng).permute(2, 0, 1),
    }
    for name, v in views.items():
        out = roundtrip(v)
        assert_same_tensor(out, v)
        if name in ("T", "permuted", "expanded"):
            assert out.stride() == v.stride(), name  # layouts that cover their memory densely are kept
        np.testing.assert_array_equal((out + 0).numpy() if dtype != "bool" else out.numpy(), v.numpy())


def test_a_small_view_does_not_write_its_whole_base():
    base = pyframe.zeros(100_000)
    assert len(saved_bytes(base[10:20])) < 1024  # a slice: only the elements it reaches
    assert len(saved_bytes(base[::10_000])) < 1024  # a strided slice: a compact copy
    out = roundtrip(base[::10_000])
    assert out.shape == (10,) and out.is_contiguous()


# ---- shared storage -------------------------------------------------------------------------------


def test_same_tensor_twice_comes_back_as_one_object():
    t = pyframe.randn(3)
    out = roundtrip({"a": t, "b": [t, (t,)]})
    assert out["a"] is out["b"][0] is out["b"][1][0]


def test_views_come_back_sharing_storage():
    a = pyframe.arange(20.0).reshape(4, 5)
    obj = {"a": a, "row": a[1], "T": a.T, "cols": a[:, 1::2], "flat": a.view(20)}
    data = saved_bytes(obj)
    header, _ = header_of(data)
    assert len(header["storages"]) == 1 and header["storages"][0]["nbytes"] == 20 * 4  # written once
    out = load(io.BytesIO(data))
    for k in obj:
        assert_same_tensor(out[k], obj[k])
        assert out[k].stride() == obj[k].stride() and out[k].storage_offset() == obj[k].storage_offset()
    out["a"][1, 3] = -7.0  # writes through to every view, as before saving
    assert out["row"][3].item() == -7.0
    assert out["T"][3, 1].item() == -7.0
    assert out["cols"][1, 1].item() == -7.0
    assert out["flat"][8].item() == -7.0


def test_views_of_part_of_a_storage_share_and_are_rebased():
    base = pyframe.arange(1000, dtype=pyframe.int64)
    v1, v2 = base[500:510], base[505:520:5]
    data = saved_bytes([v1, v2])
    header, _ = header_of(data)
    assert header["data_nbytes"] == 16 * 8  # elements 500..515 only
    out = load(io.BytesIO(data))
    assert out[0].tolist() == list(range(500, 510)) and out[1].tolist() == [505, 510, 515]
    out[0][5] = 0
    assert out[1][0].item() == 0


def test_tensor_over_numpy_memory(rng):
    arr = rng.standard_normal((4, 6))
    t = pyframe.from_numpy(arr)
    out = roundtrip([t, t[1:3, ::2]])
    assert_same_tensor(out[0], t)
    assert_same_tensor(out[1], t[1:3, ::2])
    out[0][1, 2] = 99.0  # new memory, not the array's; views share it again
    assert arr[1, 2] != 99.0 and out[1][0, 1].item() == 99.0


def test_deep_nesting():
    deep: list = []
    node = deep
    for _ in range(99):  # 100 lists: the most a pyframe checkpoint holds
        node.append([])
        node = node[0]
    assert roundtrip(deep) == deep
    for _ in range(5000):
        node.append([])
        node = node[0]
    with pytest.raises(ValueError, match="nested more than 100 containers deep"):
        saved_bytes(deep)
    for depth in (800, 5000):  # JSON that parses but nests deeper than the decoder goes; and deeper
        hbytes = json.dumps(_header(object="PLACEHOLDER")).encode()
        hbytes = hbytes.replace(b'"PLACEHOLDER"', b"[" * depth + b"]" * depth)
        with pytest.raises(CheckpointError, match="nest|JSON"):
            load(io.BytesIO(craft(hbytes, bytes(8))))


def test_tensors_over_different_storages_stay_separate():
    a, b = pyframe.ones(3), pyframe.ones(3)
    out = roundtrip([a, b])
    out[0][0] = 5.0
    assert out[1][0].item() == 1.0


# ---- nn.Parameter -------------------------------------------------------------------------------


def _fake_parameter_module(monkeypatch):
    """pyframe.nn.parameter if the nn package is there; else a stand-in with the same name and shape."""
    try:
        from pyframe.nn.parameter import Parameter

        return Parameter
    except ImportError:
        pass

    class Parameter(Tensor):
        __slots__ = ()

        def __new__(cls, data, requires_grad=True):
            p = object.__new__(cls)
            for name in Tensor.__slots__:
                if name != "__weakref__":
                    setattr(p, name, getattr(data, name))
            p.requires_grad = requires_grad
            return p

    Parameter.__module__ = "pyframe.nn.parameter"
    mod = types.ModuleType("pyframe.nn.parameter")
    mod.Parameter = Parameter
    monkeypatch.setitem(sys.modules, "pyframe.nn.parameter", mod)
    return Parameter


def test_parameter_round_trips_as_parameter(monkeypatch):
    Parameter = _fake_parameter_module(monkeypatch)
    w = Parameter(pyframe.randn(3, 2))
    frozen = Parameter(pyframe.randn(2), requires_grad=False)
    sd = collections.OrderedDict(weight=w, bias=frozen, weight_again=w, buf=pyframe.zeros(2))
    data = saved_bytes(sd)
    header, _ = header_of(data)
    assert [t["class"] for t in header["tensors"]] == ["Parameter", "Parameter", "Tensor"]
    out = load(io.BytesIO(data))
    assert isinstance(out["weight"], Parameter) and out["weight"].requires_grad
    assert isinstance(out["bias"], Parameter) and not out["bias"].requires_grad
    assert out["weight_again"] is out["weight"]
    assert type(out["buf"]) is Tensor
    np.testing.assert_array_equal(out["weight"].detach().numpy(), w.detach().numpy())


def test_parameter_loads_as_tensor_without_nn(monkeypatch):
    Parameter = _fake_parameter_module(monkeypatch)
    data = saved_bytes([Parameter(pyframe.ones(2))])
    monkeypatch.setattr(ser.format, "_parameter_class", lambda: False)
    (out,) = load(io.BytesIO(data))
    assert type(out) is Tensor and out.requires_grad and out.tolist() == [1.0, 1.0]


# ---- metadata ---------------------------------------------------------------------------------------


def test_metadata_round_trip(tmp_path):
    meta = {"epoch": 3, "loss": 0.25, "tags": ["a", "b"], "nested": {"ok": True, "none": None}, "tuple": (1, 2)}
    path = tmp_path / "ckpt.pf"
    save({"w": pyframe.ones(2)}, path, metadata=meta)
    expected = dict(meta, tuple=[1, 2])  # JSON: tuples come back as lists
    assert read_metadata(path) == expected
    assert read_metadata(str(path)) == expected
    with open(path, "rb") as fh:
        assert read_metadata(fh) == expected
    assert load(path)["w"].tolist() == [1.0, 1.0]
    save([1], path)
    assert read_metadata(path) == {}


def test_read_metadata_reads_only_the_header(tmp_path):
    path = tmp_path / "ckpt.pf"
    save(pyframe.ones(1000), path, metadata={"k": "v"})
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # damage the tensor data: load sees it, read_metadata does not need it
    path.write_bytes(bytes(data))
    assert read_metadata(path) == {"k": "v"}
    with pytest.raises(CheckpointError, match="CRC32"):
        load(path)


@pytest.mark.parametrize(
    ("meta", "exc", "match"),
    [
        ({1: "x"}, TypeError, r"metadata: metadata dict keys must be str, got int"),
        ({"a": {"b": {2, 3}}}, TypeError, r"metadata\['a'\]\['b'\]: cannot store a set"),
        ({"a": [float("nan")]}, ValueError, r"metadata\['a'\]\[0\]: nan is not valid JSON"),
        ({"t": pyframe.ones(1)}, TypeError, r"metadata\['t'\]: cannot store a Tensor"),
        (["not", "a", "dict"], TypeError, "metadata must be a dict"),
    ],
)
def test_bad_metadata_is_rejected(meta, exc, match):
    with pytest.raises(exc, match=match):
        saved_bytes([], metadata=meta)


def test_metadata_hook_records_and_checks(tmp_path):
    seen = []
    handle = ser.register_metadata_hook(
        "plugins", on_save=lambda: [{"name": "x", "version": "1.0"}], on_load=lambda v, src: seen.append((v, src))
    )
    path = tmp_path / "ckpt.pf"
    try:
        save([1], path, metadata={"plugins": "stale", "user": 1})  # the hook owns its key
        assert read_metadata(path) == {"plugins": [{"name": "x", "version": "1.0"}], "user": 1}
        assert load(path) == [1]
        assert seen == [([{"name": "x", "version": "1.0"}], str(path))]
    finally:
        handle.remove()
    save([2], path)
    assert read_metadata(path) == {}
    assert load(path) == [2] and len(seen) == 1


def test_metadata_hook_on_load_sees_none_for_files_without_it_and_errors_get_a_note():
    data = saved_bytes([1])

    def check(value, source):
        assert value is None
        raise RuntimeWarning("plugins differ")

    with ser.register_metadata_hook("plugins", on_load=check), pytest.raises(RuntimeWarning) as info:
        load(io.BytesIO(data))
    assert any("on_load metadata hook" in n for n in info.value.__notes__)
    with ser.register_metadata_hook("bad", on_save=lambda: {1, 2}), pytest.raises(TypeError, match="bad"):
        saved_bytes([])


# ---- files, paths and atomic writes ---------------------------------------------------------------


# ---- the format on disk ---------------------------------------------------------------------------


def test_layout_matches_the_documentation():
    obj = {"a": pyframe.arange(3, dtype=pyframe.int32), "b": pyframe.tensor([1.0, 2.0], dtype=pyframe.float64)}
    data = saved_bytes(obj, metadata={"m": 1})
    assert data[:8] == b"PYFRAME\x00"
    assert struct.unpack_from("<I", data, 8)[0] == 1
    header, start = header_of(data)
    hend = 24 + struct.unpack_from("<Q", data, 16)[0]
    assert start % 64 == 0 and start - hend < 64 and data[hend:start] == bytes(start - hend)  # zero padding
    assert header["format"] == 1 and header["metadata"] == {"m": 1}
    assert header["object"] == {"$dict": {"a": {"$tensor": 0}, "b": {"$tensor": 1}}}
    assert header["tensors"][1] == {
        "class": "Tensor", "storage": 1, "shape": [2], "stride": [1], "offset": 0, "requires_grad": False,
    }  # fmt: skip
    s0, s1 = header["storages"]
    assert (s0["dtype"], s0["nbytes"], s0["offset"]) == ("int32", 12, 0)
    assert (s1["dtype"], s1["nbytes"], s1["offset"]) == ("float64", 16, 64)
    assert len(data) == start + header["data_nbytes"] == start + 64 + 16
    raw0 = data[start : start + 12]
    raw1 = data[start + 64 : start + 80]
    assert raw0 == np.arange(3, dtype="<i4").tobytes() and zlib.crc32(raw0) == s0["crc32"]
    assert raw1 == np.array([1.0, 2.0], dtype="<f8").tobytes() and zlib.crc32(raw1) == s1["crc32"]
    assert data[start + 12 : start + 64] == bytes(52)


def test_tags_for_tuples_int_keys_and_floats():
    header, _ = header_of(saved_bytes({1: (2.5, float("inf")), "odd": collections.OrderedDict(a=None)}))
    assert header["object"] == {
        "$dict": [[1, {"$tuple": [2.5, {"$float": "inf"}]}], ["odd", {"$odict": {"a": None}}]],
    }


def test_big_endian_hosts_swap_bytes(monkeypatch, rng):
    obj = [make(d, (3, 2), rng) for d in DTYPES]
    little = saved_bytes(obj)
    monkeypatch.setattr(ser.format, "_LITTLE", False)  # pretend: the host's bytes need swapping to and from the file
    swapped = saved_bytes(obj)
    assert swapped != little
    for a, b in zip(load(io.BytesIO(swapped)), obj, strict=True):
        assert_same_tensor(a, b)


# ---- damaged and hostile files ----------------------------------------------------------------------


@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "ckpt.pf"
    save({"w": pyframe.arange(300.0).reshape(10, 30), "i": pyframe.arange(7), "n": 1}, path, metadata={"e": 1})
    return path


def test_truncated_file_is_reported_at_every_cut(good_file, tmp_path):
    data = good_file.read_bytes()
    header, start = header_of(data)
    cut_path = tmp_path / "cut.pf"
    for cut in [*range(0, 40), *range(40, len(data), 37), start - 1, start, start + 1, len(data) - 1]:
        cut_path.write_bytes(data[:cut])
        with pytest.raises(CheckpointError, match="truncated") as info:
            load(cut_path)
        assert str(cut_path) in str(info.value)
        with pytest.raises(CheckpointError, match="truncated"):
            load(io.BytesIO(data[:cut]))
    cut_path.write_bytes(data[:-100])
    with pytest.raises(CheckpointError) as info:
        load(cut_path)
    n = header["data_nbytes"]
    assert f"truncated: header says {n} bytes of tensor data, file has {n - 100}" in str(info.value)


class _Unseekable(io.RawIOBase):
    """A pipe-like stream: no seek, no size known in advance."""

    def __init__(self, data: bytes):
        self._f = io.BytesIO(data)

    def readable(self):
        return True

    def readinto(self, b):
        return self._f.readinto(b)


def test_truncated_stream_without_a_size(good_file):
    data = good_file.read_bytes()
    assert load(io.BufferedReader(_Unseekable(data)))["n"] == 1
    obj = [pyframe.zeros(0), pyframe.ones(3), pyframe.tensor(True)]
    for a, b in zip(load(io.BufferedReader(_Unseekable(saved_bytes(obj)))), obj, strict=True):
        assert_same_tensor(a, b)
    for cut in (10, 30, len(data) - 1):
        with pytest.raises(CheckpointError, match="truncated"):
            load(io.BufferedReader(_Unseekable(data[:cut])))


def test_every_flipped_byte_is_detected(good_file):
    data = good_file.read_bytes()
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x10
        with pytest.raises(CheckpointError):
            load(io.BytesIO(bytes(bad)))


def test_flipped_byte_in_tensor_data_is_a_crc_error(good_file):
    data = bytearray(good_file.read_bytes())
    _, start = header_of(bytes(data))
    data[start + 100] ^= 0x01
    good_file.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="corrupted: CRC32 mismatch in storage 0"):
        load(good_file)


def test_trailing_garbage_after_a_file_is_reported(good_file):
    good_file.write_bytes(good_file.read_bytes() + b"\x00junk")
    with pytest.raises(CheckpointError, match="5 unexpected bytes after the tensor data"):
        load(good_file)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"", "truncated: the file is empty"),
        (b"PYFRA", "truncated"),
        (b"NOTAFILE" + bytes(100), "not a pyframe checkpoint: it starts with b'NOTAFILE'"),
        (b"PK\x03\x04" + bytes(100), "zip file"),
        (b"PYFRAME\x00" + struct.pack("<IIQ", 7, 0, 0), "unsupported checkpoint format version 7"),
    ],
)
def test_bad_magic_and_version(tmp_path, data, match):
    path = tmp_path / "bad.pf"
    path.write_bytes(data)
    with pytest.raises(CheckpointError, match=match):
        load(path)
    assert isinstance(CheckpointError("x"), ValueError)


@pytest.mark.parametrize(
    ("header", "match"),
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe", "not valid JSON"),
        (b'{"format": NaN}', "not valid JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
        ({"format": 1}, "has no 'metadata'"),
    ],
)
def test_bad_json_header(header, match):
    with pytest.raises(CheckpointError, match=match):
        load(io.BytesIO(craft(header)))


def _header(**over):
    h = {"format": 1, "metadata": {}, "data_nbytes": 8, "storages": [], "tensors": [], "object": None}
    h["storages"] = [{"dtype": "float32", "nbytes": 8, "offset": 0, "crc32": zlib.crc32(bytes(8))}]
    h["tensors"] = [{"class": "Tensor", "storage": 0, "shape": [2], "stride": [1], "offset": 0, "requires_grad": False}]
    h["object"] = {"$tensor": 0}
    h.update(over)
    return h


def _tensor(**over):
    return [dict(_header()["tensors"][0], **over)]


def test_crafted_header_base_case_loads():
    assert load(io.BytesIO(craft(_header(), bytes(8)))).tolist() == [0.0, 0.0]


@pytest.mark.parametrize(
    ("over", "match"),
    [
        ({"tensors": _tensor(shape=[3])}, "reaches element 2, but its storage has 2"),
        ({"tensors": _tensor(offset=1, shape=[2])}, "reaches element 2"),
        ({"tensors": _tensor(stride=[2**61])}, "reaches element"),
        ({"tensors": _tensor(shape=[1] * 9, stride=[1] * 9)}, "has shape"),
        ({"tensors": _tensor(shape=[-1])}, "has shape"),
        ({"tensors": _tensor(stride=[1, 1])}, "has stride"),
        ({"tensors": _tensor(storage=1)}, "names storage 1"),
        ({"tensors": _tensor(requires_grad="yes")}, "requires_grad"),
        ({"tensors": _tensor(**{"class": "os.system"})}, "may only name Tensor, Parameter"),
        ({"tensors": _tensor(**{"class": "__main__.Evil"})}, "may only name"),
        ({"object": {"$tensor": 1}}, "tensor reference 1"),
        (
            {"object": {"$pickle": "gASVIQAAAAAAAACMBXBvc2l4lIwGc3lzdGVtlJOUjAJsc5SFlFKULg=="}},
            "unknown tag '\\$pickle'",
        ),
        ({"object": {"$dict": {"a": 1}, "$tuple": []}}, "one tag"),
        ({"object": {"$dict": [[1.5, 1]]}}, "pair"),
        ({"object": {"$dict": [[1, 1], [1, 2]]}}, "duplicate key 1"),
        ({"object": {"$float": "1e5"}}, r"\$float"),
        ({"data_nbytes": 16}, "data_nbytes"),
        ({"storages": [{"dtype": "complex64", "nbytes": 8, "offset": 0, "crc32": 0}]}, "unknown dtype"),
        ({"storages": [{"dtype": "float64", "nbytes": 6, "offset": 0, "crc32": 0}]}, "not a multiple of 8"),
        ({"storages": [{"dtype": "float32", "nbytes": 8, "offset": 4, "crc32": 0}]}, "offset 4"),
        ({"format": 2}, "format 2"),
    ],
)
def test_crafted_headers_are_rejected(over, match):
    with pytest.raises(CheckpointError, match=match):
        load(io.BytesIO(craft(_header(**over), bytes(8))))


def test_int_tensor_cannot_require_grad():
    h = _header(storages=[{"dtype": "int32", "nbytes": 8, "offset": 0, "crc32": zlib.crc32(bytes(8))}])
    h["tensors"][0]["requires_grad"] = True
    with pytest.raises(CheckpointError, match="int32 but requires grad"):
        load(io.BytesIO(craft(h, bytes(8))))


def test_huge_header_length_is_truncation_not_an_allocation():
    data = b"PYFRAME\x00" + struct.pack("<IIQ", 1, 0, 1 << 60)
    with pytest.raises(CheckpointError, match="truncated: preamble says the header is"):
        load(io.BytesIO(data))
    with pytest.raises(CheckpointError, match="refused: the header is 1152921504606846976 bytes"):
        load(io.BufferedReader(_Unseekable(data)))  # a stream's size is unknown: the header bound refuses it


class _Exploit:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_pickle_payloads_are_never_unpickled(tmp_path):
    marker = str(tmp_path / "pwned")
    payload = pickle.dumps(_Exploit(marker), protocol=2)
    for data in (payload, pickle.dumps({"w": _Exploit(marker)}, protocol=4)):
        path = tmp_path / "evil.pt"
        path.write_bytes(data)
        with pytest.raises(CheckpointError, match="pickle"):
            load(path)
    # a pickle hidden after a valid preamble, as the header or as tensor data
    with pytest.raises(CheckpointError):
        load(io.BytesIO(craft(payload)))
    h = _header(storages=[{"dtype": "bool", "nbytes": len(payload), "offset": 0, "crc32": zlib.crc32(payload)}])
    h["data_nbytes"] = len(payload)
    with pytest.raises(CheckpointError, match="is bool but byte 0 holds 128"):  # data is only ever checked bytes
        load(io.BytesIO(craft(h, payload)))
    assert not os.path.exists(marker)


def test_pickle_arguments_are_rejected_and_weights_only_reads_the_same_data(good_file):
    with pytest.raises(TypeError, match="weights_only"):
        load(good_file, weights_only="yes")
    with pytest.raises(ValueError, match="pickle_module"):
        load(good_file, pickle_module=pickle)
    with pytest.raises(ValueError, match="fix_imports"):
        load(good_file, fix_imports=False)
    load(good_file, encoding="latin1")  # a pickle argument for torch files; a pyframe file has no pickle
    with pytest.raises(ValueError, match="pickle_module"):
        save([1], io.BytesIO(), pickle_module=json)
    with pytest.raises(ValueError, match="CPU only"):
        load(good_file, map_location="cuda:0")
    kws = (
        {},
        {"mmap": True},
        {"weights_only": True},
        {"weights_only": False},
        {"map_location": "cpu"},
        {"map_location": {"cpu": "cpu"}},
    )
    for kw in kws:
        assert load(good_file, **kw)["n"] == 1
    save([1], io.BytesIO(), pickle_protocol=4)  # a format knob: accepted and ignored


# ---- unsupported objects ------------------------------------------------------------------------------


def _fn():
    return 0


@pytest.mark.parametrize(
    ("obj", "exc", "message"),
    [
        ({"model": {"fn": _fn}}, TypeError, "obj['model']['fn']: cannot save a function"),
        ({"model": {"fn": print}}, TypeError, "obj['model']['fn']: cannot save a function"),
        ([1, [2, {3}]], TypeError, "obj[1][1]: cannot save a set"),
        ({"cls": int}, TypeError, "obj['cls']: cannot save a class (int)"),
        ({"mod": os}, TypeError, "obj['mod']: cannot save a module (os)"),
        ({"a": np.array([None, 1])}, TypeError, "obj['a']: cannot save a NumPy array"),
        ({"c": 1j}, TypeError, "obj['c']: cannot save a complex"),
        ({"b": b"bytes"}, TypeError, "obj['b']: cannot save a bytes"),
        ({(1, 2): 3}, TypeError, "obj: cannot save a dict key of type tuple"),
        ({True: 3}, TypeError, "obj: cannot save a dict key of type bool"),
        ({"d": collections.defaultdict(int)}, TypeError, "obj['d']: cannot save a defaultdict (a dict subclass)"),
        ([pyframe.ones(1).max(0)], TypeError, "obj[0]: cannot save"),
        ([10**5000], ValueError, "obj[0]: int with"),
    ],
)
def test_unsupported_objects_name_their_path(obj, exc, message):
    with pytest.raises(exc) as info:
        saved_bytes(obj, format="pyframe")
    assert message in str(info.value)


def test_by_default_what_pyframes_format_cannot_hold_is_pickled_as_torch_does():
    for obj in ({"s": {1, 2}, "b": b"x", "c": 1j, "k": {(1, 2): 3}}, {"d": collections.defaultdict(int)}):
        data = saved_bytes(obj)
        assert data[:4] == b"PK\x03\x04"  # torch's zip format, with a pickle inside
    assert load(io.BytesIO(saved_bytes({"s": {1, 2}, "b": b"x", "c": 1j})))["c"] == 1j  # all allowlisted
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL collections.defaultdict"):
        load(io.BytesIO(data))
    assert load(io.BytesIO(data), weights_only=False) == obj
    with pytest.raises(TypeError, match=r"obj\['model'\]\['fn'\]: cannot save a function") as info:
        saved_bytes({"model": {"fn": lambda: 0}})  # neither format holds it: pyframe's message, noted
    assert "cannot be pickled" in info.value.__notes__[0]


def test_recursive_structure_is_rejected():
    a: list = [1]
    a.append({"self": a})
    with pytest.raises(ValueError, match=r"obj\[1\]\['self'\]: cannot save a recursive structure"):
        saved_bytes(a)
    shared = [1, 2]
    assert roundtrip([shared, shared]) == [[1, 2], [1, 2]]  # repeated, not recursive: fine


def test_tensor_subclass_is_rejected():
    class Custom(Tensor):
        __slots__ = ()

    t = pyframe.ones(2)
    c = object.__new__(Custom)
    for name in Tensor.__slots__:
        if name != "__weakref__":
            setattr(c, name, getattr(t, name))
    with pytest.raises(TypeError, match=r"obj\['c'\]: cannot save a .*Custom, a Tensor subclass"):
        saved_bytes({"c": c})


def test_numpy_arrays_are_saved_as_data_and_restored_as_numpy():
    state = {
        "weights": np.arange(6, dtype=np.float64).reshape(2, 3),
        "mask": np.array([True, False]),
        "ids": np.array([[1, 2], [3, 4]], dtype=np.int32).T,  # not contiguous
        "scalar": np.array(2.5, dtype=np.float32),
        "t": pyframe.ones(2),
    }
    buf = io.BytesIO()
    pyframe.save(state, buf)
    buf.seek(0)
    back = pyframe.load(buf)
    for k in ("weights", "mask", "ids", "scalar"):
        assert isinstance(back[k], np.ndarray) and back[k].dtype == state[k].dtype
        np.testing.assert_array_equal(back[k], state[k])
    assert isinstance(back["t"], pyframe.Tensor)
    assert b"pickle" not in buf.getvalue() and b"numpy.core" not in buf.getvalue()


def test_unsupported_numpy_arrays_are_refused_clearly():
    with pytest.raises(TypeError, match="object"):
        pyframe.save({"a": np.array([1, "x"], dtype=object)}, io.BytesIO(), format="pyframe")
    with pytest.raises(TypeError, match="complex"):
        pyframe.save([np.zeros(2, dtype=np.complex64)], io.BytesIO(), format="pyframe")


def _craft(header: dict, data: bytes = b"") -> bytes:
    hbytes = json.dumps(header).encode()
    pre = struct.pack("<8sIIQ", b"PYFRAME\x00", 1, zlib.crc32(hbytes), len(hbytes))
    return pre + hbytes + bytes(-(24 + len(hbytes)) % 64) + data


def _bool_file(data: bytes) -> bytes:
    n = len(data)
    return _craft(
        {
            "format": 1,
            "metadata": {},
            "data_nbytes": n,
            "storages": [{"dtype": "bool", "nbytes": n, "offset": 0, "crc32": zlib.crc32(data)}],
            "tensors": [
                {"class": "Tensor", "storage": 0, "shape": [n], "stride": [1], "offset": 0, "requires_grad": False}
            ],
            "object": {"$tensor": 0},
        },
        data,
    )


def test_bool_storage_with_bytes_other_than_0_and_1_is_refused():
    assert load(io.BytesIO(_bool_file(b"\x01\x00\x01"))).tolist() == [True, False, True]
    with pytest.raises(CheckpointError, match="storage 0 is bool but byte 1 holds 7; bool bytes are 0 or 1"):
        load(io.BytesIO(_bool_file(b"\x01\x07\x01")))


def test_header_size_and_entry_count_are_bounded(monkeypatch):
    big = _bool_file(b"\x01")
    monkeypatch.setattr(ser.format, "MAX_HEADER_BYTES", 100)
    with pytest.raises(CheckpointError, match=r"refused: the header is \d+ bytes, more than the 100"):
        load(io.BytesIO(big))
    monkeypatch.undo()
    monkeypatch.setattr(ser.format, "MAX_ENTRIES", 2)
    buf = io.BytesIO()
    save([pyframe.zeros(1), pyframe.zeros(1), pyframe.zeros(1)], buf)
    with pytest.raises(CheckpointError, match="refused: 3 storages, more than the 2"):
        load(io.BytesIO(buf.getvalue()))


def test_mmap_maps_a_pyframe_file_copy_on_write(tmp_path):
    # torch.load(path, mmap=True) is how torch programs load what torch.save wrote; here pyframe.save wrote it
    base = pyframe.arange(24.0).reshape(4, 6)
    obj = {"w": base, "col": base[:, 2], "i": pyframe.arange(5), "b": pyframe.tensor([True, False]),
           "e": pyframe.zeros(0), "p": pyframe.nn.Parameter(pyframe.ones(3))}  # fmt: skip
    path = tmp_path / "m.pt"
    save(obj, path)
    got = load(path, mmap=True)
    for k in obj:
        assert type(got[k]) is type(obj[k]) and got[k].dtype == obj[k].dtype, k
        assert got[k].tolist() == obj[k].tolist(), k
    assert got["p"].requires_grad and got["col"].storage_offset() == 2  # the view still shares its base
    got["w"][0, 2] = -1.0
    assert got["col"][0].item() == -1.0
    assert load(path)["w"][0, 2].item() == 2.0  # copy-on-write: the file is unchanged
    with pytest.raises(CheckpointError, match="mmap=True needs a file on disk"):
        load(io.BytesIO(path.read_bytes()), mmap=True)
    data = path.read_bytes()
    for cut, what in ((len(data) - 1, "truncated"), (len(data) + 64, "corrupted")):
        (tmp_path / "c.pt").write_bytes(data[:cut] if cut < len(data) else data + bytes(64))
        with pytest.raises(CheckpointError, match=what):
            load(tmp_path / "c.pt", mmap=True)
    (tmp_path / "b.pt").write_bytes(_bool_file(b"\x01\x07"))
    with pytest.raises(CheckpointError, match="storage 0 is bool but holds a byte other than 0 and 1"):
        load(tmp_path / "b.pt", mmap=True)
