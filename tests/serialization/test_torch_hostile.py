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


def tensor_pkl(offset=0, size=(2,), stride=(1,), numel=2, storage="FloatStorage", key="0") -> bytes:
    """A dict {'w': _rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())} as torch writes it."""
    pid = b"(" + uni("storage") + glob("torch", storage) + uni(key) + uni("cpu") + b"J" + struct.pack("<i", numel)
    pid += b"tQ"
    body = glob("torch._utils", "_rebuild_tensor_v2") + b"(" + pid + b"J" + struct.pack("<i", offset)
    body += ints(*size) + ints(*stride) + b"\x89" + glob("collections", "OrderedDict") + b")Rt" + b"R"
    return b"\x80\x02}(" + uni("w") + body + b"u."


def test_the_crafting_helpers_make_a_loadable_file():
    out, events = load_quietly(torch_zip(tensor_pkl(), {"0": struct.pack("<2f", 1.5, 2.5)}))
    assert not isinstance(out, Exception), out
    assert out["w"].tolist() == [1.5, 2.5] and not events


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
