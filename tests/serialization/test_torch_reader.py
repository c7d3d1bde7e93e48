"""pyframe.load on files written by torch.save (zip and legacy formats), with torch as the writer."""

from __future__ import annotations

import collections
import io
import pickle

import numpy as np
import pytest

import pyframe as pf
from pyframe.serialization import CheckpointError, WeightsOnlyError

torch = pytest.importorskip("torch")

DTYPES = {
    torch.float32: pf.float32, torch.float64: pf.float64, torch.float16: pf.float16, torch.int64: pf.int64,
    torch.int32: pf.int32, torch.bool: pf.bool,
}  # fmt: skip


def same(p, t) -> None:
    """pyframe tensor p equals torch tensor t bit for bit, with its shape, strides and offset."""
    assert isinstance(p, pf.Tensor)
    assert p.dtype == DTYPES[t.dtype]
    assert tuple(p.shape) == tuple(t.shape) and p.stride() == t.stride()
    assert p.storage_offset() == t.storage_offset()
    assert p.requires_grad == t.requires_grad
    a, b = p.detach().numpy(), t.detach().numpy()
    assert np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()


def sample():
    g = torch.Generator().manual_seed(0)
    base = torch.randn(4, 5, generator=g)
    d = collections.OrderedDict()
    d["base"] = base
    d["row"] = base[2]
    d["col"] = base[:, 1]
    d["t"] = base.t()
    d["exp"] = base[0:1].expand(3, 5)
    d["p"] = torch.nn.Parameter(torch.randn(3, generator=g))
    d["frozen"] = torch.nn.Parameter(torch.randn(2, generator=g), requires_grad=False)
    d["temperature"] = torch.nn.Parameter(torch.tensor(0.5))  # a 0-d Parameter
    d["grad"] = torch.ones(2, requires_grad=True)
    d["f64"] = torch.randn(3, dtype=torch.float64, generator=g)
    d["f16"] = torch.tensor([1.5, -2.25, 65504.0, float("nan")], dtype=torch.float16)
    d["i64"] = torch.tensor([-(2**63), 2**63 - 1, 0])
    d["i32"] = torch.tensor([[1, -2], [3, 4]], dtype=torch.int32)
    d["b"] = torch.tensor([True, False, True])
    d["scalar"] = torch.tensor(3.5)
    d["empty"] = torch.zeros(0, 3)
    d["nested"] = {"list": [1, 2.5, "s", None, True], "tuple": (base, 7), "size": torch.Size([2, 3])}
    d._metadata = {"": {"version": 2}}
    return d


def check_sample(out, d) -> None:
    assert type(out) is collections.OrderedDict and list(out) == list(d)
    assert out._metadata == {"": {"version": 2}}
    for k, v in d.items():
        if isinstance(v, torch.Tensor):
            same(out[k], v)
    assert isinstance(out["p"], pf.nn.Parameter) and isinstance(out["frozen"], pf.nn.Parameter)
    assert out["nested"]["list"] == [1, 2.5, "s", None, True]
    assert out["nested"]["tuple"][0] is out["base"] and out["nested"]["tuple"][1] == 7
    assert out["nested"]["size"] == (2, 3)
    # one storage, shared as in torch
    out["base"][2, 1] = 100.0
    assert float(out["row"][1]) == 100.0 and float(out["col"][2]) == 100.0 and float(out["t"][1, 2]) == 100.0


@pytest.mark.parametrize("how", ["zip", "legacy", "stream", "mmap"])
def test_torch_checkpoints_load_bit_identically_with_storages_shared(tmp_path, how):
    d = sample()
    path = tmp_path / "sd.pt"
    torch.save(d, path, _use_new_zipfile_serialization=how != "legacy")
    out = pf.load(io.BytesIO(path.read_bytes())) if how == "stream" else pf.load(path, mmap=how == "mmap")
    check_sample(out, d)


def test_mmap_maps_the_file_copy_on_write(tmp_path):
    path = tmp_path / "big.pt"
    torch.save({"w": torch.arange(1 << 16, dtype=torch.float32)}, path)
    before = path.read_bytes()
    out = pf.load(path, mmap=True)
    arr = out["w"].numpy()
    assert not arr.flags.owndata and float(out["w"][5]) == 5.0
    out["w"][5] = -1.0  # a private copy of the page: the file is unchanged
    assert path.read_bytes() == before and torch.load(path)["w"][5] == 5.0
    with pytest.raises(CheckpointError, match="mmap"):
        pf.load(io.BytesIO(before), mmap=True)


def test_map_location_as_torch_takes_it(tmp_path):
    path = tmp_path / "a.pt"
    torch.save({"a": torch.ones(2)}, path)
    for loc in ("cpu", {"cpu": "cpu"}, lambda storage, loc: storage, pf.device("cpu"), None):
        assert pf.load(path, map_location=loc)["a"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="CPU only"):
        pf.load(path, map_location="cuda:0")


def test_optimizer_and_scheduler_state_dicts():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    opts = [torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), torch.optim.Adam(model.parameters())]
    sched = torch.optim.lr_scheduler.MultiStepLR(opts[0], milestones=[2, 5], gamma=0.5)
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(1))
    for opt in opts:
        model(x).square().mean().backward()
        opt.step()
    sched.step()
    ck = {"model": model.state_dict(), "sgd": opts[0].state_dict(), "adam": opts[1].state_dict()}
    ck["sched"] = sched.state_dict()
    buf = io.BytesIO()
    torch.save(ck, buf)
    out = pf.load(io.BytesIO(buf.getvalue()))
    for k, v in ck["model"].items():
        same(out["model"][k], v)
    for name in ("sgd", "adam"):
        assert out[name]["param_groups"] == ck[name]["param_groups"]
        for i, st in ck[name]["state"].items():
            for k, v in st.items():
                same(out[name]["state"][i][k], v)
    assert out["sched"]["milestones"] == collections.Counter({2: 1, 5: 1})
    assert type(out["sched"]["milestones"]) is collections.Counter


@pytest.mark.parametrize(
    ("value", "what"),
    [
        (lambda: torch.ones(2, dtype=torch.complex64), "complex64"),
        (lambda: torch.ones(2, dtype=torch.uint16), "uint16"),
        (lambda: torch.ones(2, dtype=torch.float8_e4m3fn), "float8_e4m3fn"),
        (lambda: torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8), "quantized"),
    ],
)
@pytest.mark.filterwarnings("ignore:.*quantized:UserWarning")
def test_a_dtype_pyframe_lacks_is_an_error_naming_the_key(value, what):
    buf = io.BytesIO()
    torch.save({"model": {"ok": torch.ones(1), "bad": value()}}, buf)
    with pytest.raises(CheckpointError, match=rf"obj\['model'\]\['bad'\] is .*{what}"):
        pf.load(io.BytesIO(buf.getvalue()))


def test_numpy_values_load_only_when_allowlisted_as_in_torch():
    import numpy

    buf = io.BytesIO()
    arr = np.arange(6.0).reshape(2, 3)
    torch.save({"a": arr, "s": np.float32(2.5), "i": np.int64(-3)}, buf)
    data = buf.getvalue()
    with pytest.raises(WeightsOnlyError, match=r"GLOBAL numpy\.(_core|core)\.multiarray\._reconstruct") as e:
        pf.load(io.BytesIO(data))
    assert isinstance(e.value, pickle.UnpicklingError) and isinstance(e.value, CheckpointError)
    core = getattr(numpy, "_core", None) or numpy.core
    names = [core.multiarray._reconstruct, numpy.ndarray, numpy.dtype, core.multiarray.scalar]
    names += [type(np.dtype(t)) for t in ("f4", "f8", "i8")]
    with pf.serialization.safe_globals(names):
        out = pf.load(io.BytesIO(data))
    assert np.array_equal(out["a"], arr) and out["a"].dtype == np.float64 and out["a"].flags.writeable
    assert out["s"] == np.float32(2.5) and type(out["s"]) is np.float32 and out["i"] == -3
    assert pf.serialization.get_safe_globals() == []
    with pytest.raises(ValueError, match="cannot allowlist"):
        pf.serialization.add_safe_globals(["os.system"])


def test_whole_model_saved_by_torch_is_refused_with_torchs_message():
    buf = io.BytesIO()
    torch.save(torch.nn.Linear(2, 2), buf)
    with pytest.raises(WeightsOnlyError, match="GLOBAL torch.nn.modules.linear.Linear") as e:
        pf.load(io.BytesIO(buf.getvalue()))
    assert "Weights only load failed" in str(e.value) and "weights_only" in str(e.value)
    with pytest.raises(CheckpointError, match="never imports torch"):
        pf.load(io.BytesIO(buf.getvalue()), weights_only=False)


def test_weights_only_false_reads_the_same_state_dict():
    d = sample()
    buf = io.BytesIO()
    torch.save(d, buf)
    check_sample(pf.load(io.BytesIO(buf.getvalue()), weights_only=False), d)


class _Pipe(io.RawIOBase):
    """A stream that cannot seek, as a socket or a pipe."""

    def __init__(self, data: bytes) -> None:
        self._f = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        return self._f.readinto(b)


@pytest.mark.parametrize("zipped", [True, False])
def test_torch_files_load_from_a_stream_that_cannot_seek(zipped):
    buf = io.BytesIO()
    torch.save({"a": torch.arange(5.0), "b": [1, 2]}, buf, _use_new_zipfile_serialization=zipped)
    out = pf.load(io.BufferedReader(_Pipe(buf.getvalue())))
    assert out["a"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0] and out["b"] == [1, 2]
