"""pyframe.save(obj, f, format="torch") read by torch.load(weights_only=True), and whole-object saves."""

from __future__ import annotations

import collections
import io
import os
import pickle
import zipfile

import numpy as np
import pytest

import pyframe as pf
from pyframe.serialization import WeightsOnlyError

torch = pytest.importorskip("torch")

TORCH_DTYPES = {
    pf.float32: torch.float32, pf.float64: torch.float64, pf.float16: torch.float16, pf.int64: torch.int64,
    pf.int32: torch.int32, pf.bool: torch.bool,
}  # fmt: skip


def same(t, p) -> None:
    """torch tensor t equals pyframe tensor p bit for bit, with shape, strides, offset and requires_grad."""
    assert isinstance(t, torch.Tensor) and t.dtype == TORCH_DTYPES[p.dtype]
    assert tuple(t.shape) == tuple(p.shape) and t.stride() == p.stride()
    assert t.storage_offset() == p.storage_offset() and t.requires_grad == p.requires_grad
    a, b = t.detach().numpy(), p.detach().numpy()
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def sample():
    pf.manual_seed(0)
    base = pf.randn(4, 5)
    d = collections.OrderedDict()
    d["base"] = base
    d["row"] = base[2]
    d["col"] = base[:, 1]
    d["t"] = base.t()
    d["exp"] = base[0:1].expand(3, 5)
    d["p"] = pf.nn.Parameter(pf.randn(3))
    d["frozen"] = pf.nn.Parameter(pf.randn(2), requires_grad=False)
    d["temperature"] = pf.nn.Parameter(pf.tensor(0.5))  # a 0-d Parameter
    d["grad"] = pf.ones(2, requires_grad=True)
    d["f64"] = pf.randn(3, dtype=pf.float64)
    d["f16"] = pf.tensor([1.5, -2.25, 65504.0, float("nan")], dtype=pf.float16)
    d["i64"] = pf.tensor([-(2**63), 2**63 - 1, 0])
    d["i32"] = pf.tensor([[1, -2], [3, 4]], dtype=pf.int32)
    d["b"] = pf.tensor([True, False, True])
    d["scalar"] = pf.tensor(3.5)
    d["empty"] = pf.zeros(0, 3)
    d["nested"] = {
        "list": [1, 2.5, "s", None, True, float("inf")], "tuple": (base, 7), "size": base.shape,
        "dtype": pf.float64, "device": pf.device("cpu"), "counter": collections.Counter({3: 2}), "bytes": b"\x00\xff",
    }  # fmt: skip
    return d


def test_torch_reads_pyframes_torch_format_bit_identically_with_storages_shared(tmp_path):
    d = sample()
    path = tmp_path / "ck.pt"
    pf.save(d, path, format="torch")
    out = torch.load(path, weights_only=True)
    assert type(out) is collections.OrderedDict and list(out) == list(d)
    for k, v in d.items():
        if isinstance(v, pf.Tensor):
            same(out[k], v)
    assert isinstance(out["p"], torch.nn.Parameter) and isinstance(out["frozen"], torch.nn.Parameter)
    assert not isinstance(out["grad"], torch.nn.Parameter) and out["grad"].requires_grad
    n = out["nested"]
    assert n["list"] == [1, 2.5, "s", None, True, float("inf")] and n["tuple"][0] is out["base"]
    assert n["size"] == torch.Size([4, 5]) and type(n["size"]) is torch.Size and n["dtype"] is torch.float64
    assert n["device"] == torch.device("cpu") and n["counter"] == collections.Counter({3: 2})
    assert n["bytes"] == b"\x00\xff"
    ptr = out["base"].untyped_storage().data_ptr()
    for k in ("row", "col", "t", "exp"):
        assert out[k].untyped_storage().data_ptr() == ptr
    out["base"][2, 1] = 100.0
    assert out["row"][1] == 100.0 and out["t"][1, 2] == 100.0
    # and pyframe reads its own torch-format file back the same way
    back = pf.load(path)
    for k, v in d.items():
        if isinstance(v, pf.Tensor):
            assert back[k].stride() == v.stride() and back[k].dtype == v.dtype
            assert np.array_equal(back[k].detach().numpy(), v.detach().numpy(), equal_nan=True)


def test_storages_are_stored_aligned_and_uncompressed_as_torch_writes_them():
    buf = io.BytesIO()
    pf.save({"a": pf.ones(3), "b": pf.ones(5, dtype=pf.float64)}, buf, format="torch")
    data = buf.getvalue()
    z = zipfile.ZipFile(io.BytesIO(data))
    names = z.namelist()
    assert names[0] == "archive/data.pkl" and "archive/version" in names and "archive/byteorder" in names
    for info in z.infolist():
        if "/data/" in info.filename:
            assert info.compress_type == zipfile.ZIP_STORED
            start = info.header_offset + 30 + len(info.filename) + len(info.extra)
            assert start % 64 == 0
    assert b"pyframe" not in z.read("archive/data.pkl")  # only torch's names


def test_a_storage_viewed_as_two_dtypes_is_refused_as_torch_refuses_it():
    from pyframe.tensor import _new

    a = pf.ones(4)
    b = _new(a._storage, (4,), (1,), 0, pf.int32)  # pyframe has no view(dtype); a torch file can make one
    with pytest.raises(RuntimeError, match="view the same data as different types"):
        pf.save([a, b], io.BytesIO(), format="torch")


def test_whole_model_save_loads_only_with_weights_only_false(tmp_path):
    model = pf.nn.Sequential(pf.nn.Linear(3, 4), pf.nn.ReLU(), pf.nn.Linear(4, 2))
    path = tmp_path / "model.pt"
    pf.save(model, path)  # as torch.save(model, path): a pickle inside torch's format
    assert zipfile.is_zipfile(path)
    with pytest.raises(WeightsOnlyError, match=r"weights_only.*\n(.*\n)*.*GLOBAL pyframe\.nn\.modules") as e:
        pf.load(path)
    assert isinstance(e.value, pickle.UnpicklingError)
    loaded = pf.load(path, weights_only=False)
    x = pf.randn(2, 3)
    assert type(loaded) is pf.nn.Sequential and np.array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)  # torch refuses it the same way


def test_format_and_arguments_are_checked():
    with pytest.raises(ValueError, match="format"):
        pf.save([1], io.BytesIO(), format="onnx")
    with pytest.raises(ValueError, match="metadata"):
        pf.save([1], io.BytesIO(), format="torch", metadata={"a": 1})
    with pytest.raises(ValueError, match="zip"):
        pf.save([1], io.BytesIO(), _use_new_zipfile_serialization=False)
    pf.save([1], io.BytesIO(), pickle_module=pickle, format="torch")


class Net(pf.nn.Module):
    """A user's own module, as in pytorch/examples' word_language_model (saved whole, loaded with safe_globals)."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = pf.nn.LSTM(3, 4)
        self.head = pf.nn.Linear(4, 2)
        self.act = pf.nn.functional.relu
        self.scale = (2.0, [1, 2])

    def forward(self, x):
        return self.act(self.head(self.rnn(x)[0])) * self.scale[0]


def test_whole_model_loads_with_its_classes_allowlisted_as_in_torch():
    model = Net()
    buf = io.BytesIO()
    pf.save(model, buf)
    with pytest.raises(WeightsOnlyError, match=r"GLOBAL .*Net was not an allowed global.*add_safe_globals\(\["):
        pf.load(io.BytesIO(buf.getvalue()))
    with pf.serialization.safe_globals([Net, pf.nn.LSTM, pf.nn.Linear, pf.nn.functional.relu]):
        loaded = pf.load(io.BytesIO(buf.getvalue()))
    assert pf.serialization.get_safe_globals() == []
    x = pf.randn(5, 1, 3)
    assert type(loaded) is Net and loaded.scale == (2.0, [1, 2]) and loaded.act is pf.nn.functional.relu
    assert np.array_equal(loaded(x).detach().numpy(), model(x).detach().numpy())
    assert [n for n, _ in loaded.named_parameters()] == [n for n, _ in model.named_parameters()]
    only_some = pf.serialization.safe_globals([Net, pf.nn.Linear, pf.nn.functional.relu])
    with only_some, pytest.raises(WeightsOnlyError, match="GLOBAL pyframe.nn.modules.rnn.LSTM"):
        pf.load(io.BytesIO(buf.getvalue()))  # every class in the file must be allowlisted


@pytest.mark.parametrize("bad", [os.system, "os.system", "mymodule.Thing", 3])
def test_what_cannot_be_allowlisted_is_a_value_error(bad):
    with pytest.raises(ValueError, match="cannot allowlist"):
        pf.serialization.add_safe_globals([bad])
    assert pf.serialization.get_safe_globals() == []
