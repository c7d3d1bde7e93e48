"""pyframe.save / pyframe.load and files: paths, path-likes, bytes and file objects, several checkpoints
in one stream, atomic writes (a crash before the rename or while writing leaves the old file and no temporary;
a killed save's temporary is removed by the next save, a live writer's is left alone), permissions and symlinks."""

from __future__ import annotations

import io
import os
import signal
import stat
import subprocess
import sys
import textwrap

import pytest

import pyframe
from pyframe.serialization import load, save


def saved_bytes(obj, **kw) -> bytes:
    buf = io.BytesIO()
    save(obj, buf, **kw)
    return buf.getvalue()


def test_paths_pathlike_bytes_and_file_objects(tmp_path):
    obj = {"x": pyframe.arange(5)}
    for p in (tmp_path / "a.pf", str(tmp_path / "b.pf"), os.fsencode(tmp_path / "c.pf")):
        save(obj, p)
        assert load(p)["x"].tolist() == [0, 1, 2, 3, 4]
    with open(tmp_path / "d.pf", "wb") as fh:
        save(obj, fh)
    with open(tmp_path / "d.pf", "rb") as fh:
        assert load(fh)["x"].tolist() == [0, 1, 2, 3, 4]


def test_several_checkpoints_in_one_stream():
    buf = io.BytesIO()
    buf.write(b"prefix")
    save([pyframe.ones(2)], buf)
    save({"b": 2}, buf)
    buf.seek(6)
    assert load(buf)[0].tolist() == [1.0, 1.0]
    assert load(buf) == {"b": 2}
    assert buf.read() == b""


def test_text_mode_files_are_rejected(tmp_path):
    with open(tmp_path / "t.txt", "w") as fh, pytest.raises(TypeError, match="binary"):
        save([1], fh)
    (tmp_path / "t.txt").write_bytes(saved_bytes([1]))
    with open(tmp_path / "t.txt") as fh, pytest.raises(TypeError, match="binary"):
        load(fh)
    with pytest.raises(TypeError, match="path or a binary file"):
        load(12.5)


def test_crash_before_rename_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "ckpt.pf"
    save({"v": 1}, path)
    before = path.read_bytes()

    def crash(src, dst):
        assert os.path.dirname(src) == str(tmp_path)  # the temp file sits next to the target
        assert os.path.getsize(src) > 0
        raise OSError("simulated crash")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="simulated crash"):
        save({"v": 2, "t": pyframe.ones(100)}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.pf"]
    monkeypatch.undo()
    assert load(path) == {"v": 1}


def test_crash_while_writing_leaves_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "new.pf"

    def crash(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(OSError, match="disk full"):
        save([1], path)
    assert os.listdir(tmp_path) == []


def test_unsupported_object_leaves_the_old_file_alone(tmp_path):
    path = tmp_path / "ckpt.pf"
    save([1], path)
    with pytest.raises(TypeError):
        save([lambda: 0], path)
    assert load(path) == [1]
    assert os.listdir(tmp_path) == ["ckpt.pf"]


@pytest.mark.skipif(not hasattr(os, "fchmod"), reason="POSIX permissions")
def test_overwrite_keeps_permissions_and_writes_through_symlinks(tmp_path):
    path = tmp_path / "ckpt.pf"
    save([1], path)
    os.chmod(path, 0o640)
    save([2], path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    link = tmp_path / "latest.pf"
    link.symlink_to(path)
    save([3], link)
    assert link.is_symlink() and load(path) == [3]


def test_saving_to_a_directory_fails_cleanly(tmp_path):
    with pytest.raises(IsADirectoryError):
        save([1], tmp_path)
    assert os.listdir(tmp_path) == []


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
    save(pyframe.ones(2), path)
    assert os.listdir(tmp_path) == ["ckpt.pf"]
    assert load(path).tolist() == [1.0, 1.0]


def test_a_live_writers_temporary_is_left_alone(tmp_path):
    live = tmp_path / f".ckpt.pf.{os.getppid()}-0123456789ab.tmp"  # the parent process is alive
    live.write_bytes(b"partial")
    save(pyframe.ones(1), tmp_path / "ckpt.pf")
    assert live.exists()
