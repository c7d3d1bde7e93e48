"""Issue 10, continued: checkpoints (6, 13), the caching allocator (13), hook notes (11) and plugin
registration (14). Each test failed before its fix."""

import io
import json
import os
import signal
import struct
import subprocess
import sys
import textwrap
import zlib

import pytest

import pyframe as pf
import pyframe.nn as nn
from pyframe import serialization
from pyframe.serialization import CheckpointError


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


# ---- 6. every stored value is valid for its dtype -------------------------------------------------------


def test_bool_storage_with_bytes_other_than_0_and_1_is_refused():
    assert pf.load(io.BytesIO(_bool_file(b"\x01\x00\x01"))).tolist() == [True, False, True]
    with pytest.raises(CheckpointError, match="storage 0 is bool but byte 1 holds 7; bool bytes are 0 or 1"):
        pf.load(io.BytesIO(_bool_file(b"\x01\x07\x01")))


# ---- 13. bounded header, no temporary files left behind ------------------------------------------------


def test_header_size_and_entry_count_are_bounded(monkeypatch):
    big = _bool_file(b"\x01")
    monkeypatch.setattr(serialization.format, "MAX_HEADER_BYTES", 100)
    with pytest.raises(CheckpointError, match=r"refused: the header is \d+ bytes, more than the 100"):
        pf.load(io.BytesIO(big))
    monkeypatch.undo()
    monkeypatch.setattr(serialization.format, "MAX_ENTRIES", 2)
    buf = io.BytesIO()
    pf.save([pf.zeros(1), pf.zeros(1), pf.zeros(1)], buf)
    with pytest.raises(CheckpointError, match="refused: 3 storages, more than the 2"):
        pf.load(io.BytesIO(buf.getvalue()))


def test_a_killed_save_leaves_a_temporary_that_the_next_save_removes(tmp_path):
    path = tmp_path / "ckpt.pf"
    code = textwrap.dedent(f"""
        import os, sys
        import pyframe as pf
        from pyframe.serialization import files as serialization
        real = serialization._write_all
        def stall(fh, data):
            real(fh, data)
            fh.flush()
            print("writing", flush=True)
            sys.stdin.readline()  # killed here, mid-save
        serialization._write_all = stall
        pf.save(pf.zeros(1000), {str(path)!r})
    """)
    env = dict(os.environ, PYFRAME_DISABLE_PLUGIN_AUTOLOAD="1")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert p.stdout.readline() == b"writing\n"
    p.send_signal(signal.SIGKILL)
    p.wait()
    left = [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]
    assert len(left) == 1 and left[0].startswith(f".ckpt.pf.{p.pid}-")
    pf.save(pf.ones(2), path)
    assert os.listdir(tmp_path) == ["ckpt.pf"]
    assert pf.load(path).tolist() == [1.0, 1.0]


def test_a_live_writers_temporary_is_left_alone(tmp_path):
    live = tmp_path / f".ckpt.pf.{os.getppid()}-0123456789ab.tmp"  # the parent process is alive
    live.write_bytes(b"partial")
    pf.save(pf.ones(1), tmp_path / "ckpt.pf")
    assert live.exists()


# ---- 13. the caching allocator is bounded and can be emptied ---------------------------------------------


def test_empty_cache_returns_cached_blocks():
    x = pf.zeros(1 << 20)  # 4 MiB: from the C allocator, cached when freed
    del x
    cached, limit = pf.memory_cached()
    assert cached >= 4 << 20
    assert 0 < limit <= 1 << 30 and limit <= os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 16
    pf.empty_cache()
    assert pf.memory_cached()[0] == 0


# ---- 11. a re-entering hook gets one note, not one per frame ---------------------------------------------


def test_reentering_hook_error_carries_one_note(no_installed_plugins):
    def reenter(module, args, kwargs):
        module(*args)  # calls itself from inside its own forward pre-hook

    h = nn.register_module_forward_pre_hook(reenter, with_kwargs=True)
    try:
        with pytest.raises(RecursionError) as info:
            nn.ReLU()(pf.ones(1))
    finally:
        h.remove()
    notes = info.value.__notes__
    assert len(notes) == 1 and "reenter" in notes[0]


# ---- 14. plugins are checked when registered --------------------------------------------------------------


def test_register_refuses_non_plugins_and_misspelt_hooks(no_installed_plugins):
    with pytest.raises(
        TypeError, match="a plugin is a module, class or object with @pyframe.hookimpl functions, got int"
    ):
        pf.plugins.register(42)

    class Misspelt:
        @pf.hookimpl
        def pyframe_module_foward(self, module, args, kwargs, output):
            return None

    with pytest.raises(ValueError, match="'pyframe_module_foward' \\(did you mean 'pyframe_module_forward'\\?\\)"):
        pf.plugins.register(Misspelt())

    class Unmarked:  # a pyframe_* function without the marker would never be called either
        def pyframe_module_forward_pr(self, module, args):
            return None

    with pytest.raises(ValueError, match="did you mean 'pyframe_module_forward_pre'"):
        pf.plugins.register(Unmarked())
    with pytest.raises(TypeError, match="implements no pyframe hook"):
        pf.plugins.register(object())
    assert all(i.name not in ("int", "Misspelt", "Unmarked", "object") for i in pf.plugins.list())
