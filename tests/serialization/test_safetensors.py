"""pyframe.safetensors: safetensors.torch's names over the safetensors package's NumPy API."""

from __future__ import annotations

import numpy as np
import pytest

import pyframe as pf

pytest.importorskip("safetensors")
import pyframe.safetensors as pst  # noqa: E402 - after the importorskip


def sample() -> dict:
    pf.manual_seed(0)
    return {
        "w": pf.randn(3, 4), "h": pf.tensor([1.5, -0.0, 65504.0, float("nan")], dtype=pf.float16),
        "d": pf.randn(2, dtype=pf.float64), "i": pf.tensor([-(2**31), 2**31 - 1], dtype=pf.int32),
        "l": pf.tensor([-(2**63), 2**63 - 1]), "b": pf.tensor([True, False]), "empty": pf.zeros(0, 3),
        "scalar": pf.tensor(2.5),
    }  # fmt: skip


def bits(t) -> bytes:
    return np.ascontiguousarray(t.detach()._elements()).tobytes()  # bfloat16: its uint16 patterns


def test_round_trip_bytes_files_and_metadata(tmp_path):
    d = sample()
    for out in (pst.load(pst.save(d)), (pst.save_file(d, tmp_path / "a.st", metadata={"k": "v"}), None)[1]):
        if out is None:
            out = pst.load_file(tmp_path / "a.st")
        assert list(out) == sorted(d) or set(out) == set(d)
        for k, v in d.items():
            assert out[k].dtype == v.dtype and out[k].shape == v.shape and bits(out[k]) == bits(v)
    with pst.safe_open(tmp_path / "a.st", framework="pt") as f:
        assert f.metadata() == {"k": "v"} and sorted(f.keys()) == sorted(d)
        assert bits(f.get_tensor("w")) == bits(d["w"])
    out = pst.load_file(tmp_path / "a.st")
    out["w"][0, 0] = 7.0  # loaded tensors are writable and their own
    assert float(out["w"][0, 0]) == 7.0


def test_what_safetensors_torch_refuses_is_refused():
    base = pf.randn(4, 4)
    with pytest.raises(RuntimeError, match="share memory.*save_model"):
        pst.save({"a": base, "b": base[1]})
    with pytest.raises(ValueError, match="non contiguous tensor: `t`"):
        pst.save({"t": pf.randn(3, 2).t()})
    with pytest.raises(ValueError, match="expected pyframe.Tensor"):
        pst.save({"a": np.zeros(2)})
    with pytest.raises(ValueError, match="metadata"):
        pst.save({"a": pf.ones(1)}, metadata={"a": 1})
    assert set(pst.load(pst.save({"a": base[:2], "b": base[2:]}))) == {"a", "b"}  # disjoint parts: fine


def test_tied_weights_through_save_model_and_load_model(tmp_path):
    def tied():
        m = pf.nn.Sequential(pf.nn.Embedding(5, 3), pf.nn.Linear(3, 5, bias=False))
        m[1].weight = m[0].weight
        return m

    m = tied()
    pst.save_model(m, tmp_path / "m.st")
    with pst.safe_open(tmp_path / "m.st") as f:
        assert f.keys() == ["0.weight"] and f.metadata() == {"1.weight": "0.weight"}
    m2 = tied()
    assert pst.load_model(m2, tmp_path / "m.st") == ([], [])
    assert bits(m2[1].weight) == bits(m[0].weight) and m2[1].weight is m2[0].weight
    untied = pf.nn.Sequential(pf.nn.Embedding(5, 3), pf.nn.Linear(3, 5, bias=False))
    with pytest.raises(RuntimeError, match='Missing key.*"1.weight"'):
        pst.load_model(untied, tmp_path / "m.st")
    assert pst.load_model(untied, tmp_path / "m.st", strict=False) == (["1.weight"], [])


def test_damaged_files_and_missing_dtypes_are_pyframe_errors(tmp_path):
    data = bytearray(pst.save({"a": pf.ones(3)}))
    with pytest.raises(pf.serialization.CheckpointError):
        pst.load(bytes(data[:20]))
    import json
    import struct

    (n,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8 : 8 + n])
    header["a"]["dtype"] = "U32"
    hb = json.dumps(header).encode()
    with pytest.raises(pst.SafetensorError, match="tensor 'a' has dtype uint32"):
        pst.load(struct.pack("<Q", len(hb)) + hb + bytes(data[8 + n :]))


def test_files_written_by_safetensors_torch_load_bit_identically_and_back(tmp_path):
    torch = pytest.importorskip("torch")
    stt = pytest.importorskip("safetensors.torch")
    g = torch.Generator().manual_seed(0)
    d = {
        "w": torch.randn(3, 4, generator=g), "h": torch.randn(5, generator=g).half(),
        "d": torch.randn(2, dtype=torch.float64, generator=g), "i": torch.arange(4, dtype=torch.int32),
        "l": torch.arange(3), "b": torch.tensor([True, False]), "e": torch.zeros(0, 3), "s": torch.tensor(2.0),
        "bf": torch.randn(2, 3, generator=g).bfloat16(), "u8": torch.tensor([0, 7, 255], dtype=torch.uint8),
        "i8": torch.tensor([-128, 5], dtype=torch.int8), "i16": torch.tensor([-300, 30000], dtype=torch.int16),
    }  # fmt: skip
    stt.save_file(d, tmp_path / "t.st", metadata={"from": "torch"})
    out = pst.load_file(tmp_path / "t.st")
    for k, v in d.items():
        raw = v.view(torch.int16) if v.dtype == torch.bfloat16 else v
        assert tuple(out[k].shape) == tuple(v.shape) and bits(out[k]) == raw.numpy().tobytes()
        assert out[k].dtype.name == str(v.dtype).replace("torch.", "")
    with pst.safe_open(tmp_path / "t.st", framework="pt") as f:
        assert bits(f.get_tensor("bf")) == d["bf"].view(torch.int16).numpy().tobytes()
    assert bits(pst.load(stt.save(d))["bf"]) == d["bf"].view(torch.int16).numpy().tobytes()
    pst.save_file(out, tmp_path / "p.st", metadata={"from": "pyframe"})
    back = stt.load_file(tmp_path / "p.st")
    for k, v in d.items():
        assert back[k].dtype == v.dtype and torch.equal(
            back[k].view(-1).view(torch.uint8), v.view(-1).view(torch.uint8)
        )
