"""Hostile torch-format files (no torch needed): pickles that name os.system, builtins.eval, subprocess,
``__reduce__`` chains, crafted rebuild arguments, bad zip members. Each is refused with a pyframe exception
and nothing runs: an audit hook records every exec, import, os.system and subprocess call while loading."""

from __future__ import annotations

import io
import pickle
import struct
import sys
import zipfile

import pytest

import pyframe as pf
from pyframe.serialization import CheckpointError, WeightsOnlyError

_EVENTS: list = []
_WATCH = ("exec", "import", "os.system", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "compile")
_ACTIVE = [False]


def _hook(event, args):
    if _ACTIVE[0] and event.startswith(_WATCH):
        _EVENTS.append((event, str(args)[:80]))


sys.addaudithook(_hook)


def load_quietly(data: bytes, **kw):
    """pf.load on bytes, with the audit hook recording; returns (result or exception, events)."""
    import pyframe.serialization.torch_reader  # noqa: F401 - imported before recording starts

    _EVENTS.clear()
    _ACTIVE[0] = True
    try:
        try:
            out = pf.load(io.BytesIO(data), **kw)
        except Exception as e:  # noqa: BLE001 - returned for the test to check
            out = e
    finally:
        _ACTIVE[0] = False
    return out, list(_EVENTS)


def torch_zip(pkl: bytes, storages: dict | None = None, *, prefix="archive", extra=(), version=b"3\n") -> bytes:
    """A torch-format zip: data.pkl, byteorder, the storages, version (as torch.save lays them out)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{prefix}/data.pkl", pkl)
        z.writestr(f"{prefix}/byteorder", b"little")
        for key, data in (storages or {}).items():
            z.writestr(f"{prefix}/data/{key}", data)
        for name, data in extra:
            z.writestr(name, data)
        if version is not None:
            z.writestr(f"{prefix}/version", version)
    return buf.getvalue()


def glob(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def uni(s: str) -> bytes:
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def ints(*xs) -> bytes:
    return b"(" + b"".join(b"J" + struct.pack("<i", x) for x in xs) + b"t"


def tensor_pkl(offset=0, size=(2,), stride=(1,), numel=2, storage="FloatStorage", key="0", location="cpu") -> bytes:
    """A dict {'w': _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())} as torch writes it."""
    pid = b"(" + uni("storage") + glob("torch", storage) + uni(key) + uni(location) + b"J" + struct.pack("<i", numel)
    pid += b"tQ"
    body = glob("torch._utils", "_rebuild_tensor_v2") + b"(" + pid + b"J" + struct.pack("<i", offset)
    body += ints(*size) + ints(*stride) + b"\x89" + glob("collections", "OrderedDict") + b")Rt" + b"R"
    return b"\x80\x02}(" + uni("w") + body + b"u."


def test_the_crafting_helpers_make_a_loadable_file():
    out, events = load_quietly(torch_zip(tensor_pkl(), {"0": struct.pack("<2f", 1.5, 2.5)}))
    assert not isinstance(out, Exception), out
    assert out["w"].tolist() == [1.5, 2.5] and not events


def test_a_storage_saved_on_an_accelerator_needs_map_location():
    data = torch_zip(tensor_pkl(location="cuda:0"), {"0": struct.pack("<2f", 1.5, 2.5)})
    out, _ = load_quietly(data)
    assert isinstance(out, CheckpointError) and "saved on 'cuda:0'" in str(out) and "map_location='cpu'" in str(out)
    for loc in ("cpu", {"cuda:0": "cpu"}, lambda storage, location: storage):
        out, events = load_quietly(data, map_location=loc)
        assert out["w"].tolist() == [1.5, 2.5] and not events
    out, _ = load_quietly(data, map_location=lambda storage, location: None)
    assert isinstance(out, CheckpointError) and "map_location returned another storage" in str(out)


class _Reduce:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


import os  # noqa: E402 - used only as pickling targets below
import subprocess  # noqa: E402

EXPLOITS = {
    "os.system": pickle.dumps(_Reduce(os.system, ("echo pwned",)), protocol=2),
    "posix.system": glob("posix", "system") + uni("echo pwned") + b"\x85R.",
    "builtins.eval": pickle.dumps(_Reduce(eval, ("1+1",)), protocol=2),
    "builtins.exec": pickle.dumps(_Reduce(exec, ("import os",)), protocol=2),
    "builtins.getattr": pickle.dumps(_Reduce(getattr, (_Reduce(__import__, ("os",)), "system")), protocol=2),
    "subprocess.Popen": pickle.dumps(_Reduce(subprocess.Popen, (["true"],)), protocol=2),
    "subprocess.check_output": pickle.dumps(_Reduce(subprocess.check_output, (["true"],)), protocol=2),
    "builtins.__import__": pickle.dumps(_Reduce(__import__, ("os",)), protocol=2),
    "importlib.import_module": glob("importlib", "import_module") + uni("os") + b"\x85R.",
    "torch.load": glob("torch", "load") + uni("x") + b"\x85R.",
    "torch._utils._rebuild_tensor_v2 chain": glob("torch._utils", "_rebuild_tensor_v2")
    + glob("builtins", "eval")
    + b"\x85R.",
    # a reduce whose callable is a value the file built, not an allowed global
    "call of a dict": b"\x80\x02}" + b")R.",
    "call of a str": b"\x80\x02" + uni("os.system") + b")R.",
    "OrderedDict.__dict__ via BUILD": b"\x80\x02" + glob("collections", "Counter") + b")R}" + uni("x") + b"Ksb.",
}


@pytest.mark.parametrize("name", list(EXPLOITS))
@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_exploit_pickles_are_refused_and_nothing_runs(name, container):
    pkl = EXPLOITS[name]
    if container == "zip":
        data = torch_zip(pkl)
    else:
        head = pickle.dumps(0x1950A86A20F9469CFC6C, protocol=2) + pickle.dumps(1001, protocol=2)
        data = head + pickle.dumps({"little_endian": True}, protocol=2) + pkl + pickle.dumps([], protocol=2)
    out, events = load_quietly(data)
    assert isinstance(out, CheckpointError), out
    assert events == []
    if name.split(" ")[0] in ("os.system", "builtins.eval", "subprocess.Popen", "posix.system"):
        assert isinstance(out, WeightsOnlyError)
        shown = name.split(" ")[0].removeprefix("builtins.")
        assert f"GLOBAL {shown}" in str(out) or "blocked" in str(out)


# ---- the zip layer, and the whole hostile walk ------------------------------------------------------------

from tools.fuzz import hostile_torch as walk  # noqa: E402


def _zip_case(name: str) -> bytes:
    zipped = walk.torch_sample()
    items = walk.members(zipped)
    prefix = items[0][0].rpartition("/")[0]
    d = dict(items)
    pkl, data0 = d[f"{prefix}/data.pkl"], d[f"{prefix}/data/0"]
    rest = [(n, v) for n, v in items if n != f"{prefix}/data.pkl"]
    cases = {
        "duplicate": walk.zip_of([(f"{prefix}/data.pkl", pkl), *rest, (f"{prefix}/data/0", data0)]),
        "missing": walk.zip_of([(f"{prefix}/data.pkl", pkl), *[x for x in rest if x[0] != f"{prefix}/data/0"]]),
        "short": walk.zip_of([(f"{prefix}/data.pkl", pkl), *[(n, v[:-4] if n.endswith("/0") else v) for n, v in rest]]),
        "compressed": walk.zip_of([(f"{prefix}/data.pkl", pkl), *[(n, v, zipfile.ZIP_DEFLATED) for n, v in rest]]),
        "bomb": walk._bomb(prefix, pkl, declared=len(pkl), inflates_to=64 << 20),
        "declared": walk._bomb(prefix, pkl, declared=300 << 20),
        "overlap": walk._overlapping(items),
        "no pickle": walk.zip_of(rest),
    }  # fmt: skip
    return cases[name]


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("duplicate", "appears twice"),
        ("missing", "has no zip member data/0"),
        ("short", "declares 24 bytes, its zip member holds 20"),
        ("compressed", "is compressed"),
        ("bomb", "cannot be read|does not hold"),
        ("declared", "refused: the member .* is 314572800 bytes"),
        ("overlap", "local header"),
        ("no pickle", "without a data.pkl"),
    ],
)
def test_hostile_zip_members_are_refused(name, message):
    out, events = load_quietly(_zip_case(name))
    assert isinstance(out, CheckpointError) and events == []
    assert __import__("re").search(message, str(out)), str(out)


def test_the_hostile_walk_refuses_or_loads_every_file_and_nothing_runs():
    files = walk.files(short=True)
    assert len(files) > 2000
    bad = []
    for kind, family, data in files:
        _EVENTS.clear()
        _ACTIVE[0] = True
        try:
            verdict = walk.check(kind, data)
        finally:
            _ACTIVE[0] = False
        if verdict not in ("refused", "loaded") or _EVENTS:
            bad.append((kind, family, len(data), verdict, list(_EVENTS)))
    assert bad == []
