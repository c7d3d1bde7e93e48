"""Checkpoints: ``pyframe.save`` and ``pyframe.load``, and the file work around them (atomic writes,
stale temporaries, metadata hooks). The format itself is in ``format.py``: it is a fixed preamble, a JSON
header and raw little-endian tensor bytes; loading never imports a class or runs code named by the file
(there is no pickle anywhere), so loading a checkpoint from an untrusted source is safe. Every byte of a
file is checked: the header and each storage carry a CRC32, padding must be zero, and a file that is cut
short or altered raises :class:`CheckpointError` saying what is wrong.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import pickle
import secrets
import stat
import zlib
from collections.abc import Callable
from typing import Any

from pyframe._version import __version__
from pyframe.serialization.format import (
    _PREAMBLE,
    FORMAT_VERSION,
    MAGIC,
    CheckpointError,
    _build_tensors,
    _check_json,
    _Decoder,
    _Encoder,
    _end,
    _pad,
    _read_header,
    _read_storages,
)
from pyframe.utils.hooks import RemovableHandle

__all__ = [
    "save", "load", "read_metadata", "register_metadata_hook",
]  # fmt: skip


_metadata_hooks: dict[int, tuple[str, Callable | None, Callable | None]] = {}


# ---- hook point for metadata recorded by pyframe itself (the plugin manager uses it) -------------------


def register_metadata_hook(
    key: str,
    *,
    on_save: Callable[[], Any] | None = None,
    on_load: Callable[[Any, str], None] | None = None,
) -> RemovableHandle:
    """Record something in every checkpoint's metadata under ``key``, and check it on load.

    ``on_save()`` is called by every :func:`save`; it returns a JSON value (dict with str keys, list, str,
    int, finite float, bool, None) stored as ``metadata[key]``, replacing a value the caller passed for
    that key. ``on_load(value, source)`` is called by every :func:`load` after the file has been read and
    verified, with the stored value (``None`` when the file has none) and the path or a description of
    the file object; it may warn or raise. Returns a handle whose ``remove()`` unregisters both."""
    if not isinstance(key, str):
        raise TypeError(f"metadata hook key must be a str, got {type(key).__name__}")
    if on_save is None and on_load is None:
        raise TypeError("register_metadata_hook needs on_save, on_load or both")
    for name, fn in (("on_save", on_save), ("on_load", on_load)):
        if fn is not None and not callable(fn):
            raise TypeError(f"{name} must be callable, got {type(fn).__name__}")
    return RemovableHandle(_metadata_hooks, (key, on_save, on_load))


def _note(exc: BaseException, fn: Callable, what: str) -> None:
    name = getattr(fn, "__qualname__", None) or repr(fn)
    exc.add_note(f"raised by the {what} metadata hook {name}")


# ---- save -------------------------------------------------------------------------------------------


def save(
    obj, f, pickle_module=None, pickle_protocol=None, _use_new_zipfile_serialization=True, *, metadata=None, format=None
) -> None:
    """Write ``obj`` to ``f`` (a path or a binary file object). Same call as torch.save.

    ``format="pyframe"`` writes pyframe's checkpoint format: ``obj`` may be a tensor (or ``nn.Parameter``) or
    any nesting of dicts (str or int keys, including ``OrderedDict`` and ``Counter``), lists and tuples of
    tensors, NumPy arrays and None, bool, int, float and str. Tensors that share memory are written once and
    come back sharing it. ``metadata`` is an optional JSON dict stored in the header, read back by
    :func:`read_metadata`. ``format="torch"`` writes torch's zip format, which ``torch.load(f,
    weights_only=True)`` reads (tensors, Parameters, containers and plain values; storages shared as in
    pyframe). ``format=None`` (the default) writes pyframe's format when it can hold ``obj``, and otherwise
    does what torch.save does: pickles the whole object (a Module, say) inside torch's format, which only
    ``load(..., weights_only=False)`` reads. A path is written atomically: to a temporary file in the same
    directory, flushed to disk, then renamed over ``f``, so a crash leaves the old file or the new one.
    ``pickle_module`` may be None or ``pickle``; ``pickle_protocol`` is accepted and ignored."""
    if pickle_module is not None and pickle_module is not pickle:
        raise ValueError("pyframe.save pickles with its own pickler (torch's format) or not at all; omit pickle_module")
    del pickle_protocol  # a pickle knob: torch's format is written with protocol 2, as torch.save writes it
    if format not in (None, "pyframe", "torch"):
        raise ValueError(f"format must be None, 'pyframe' or 'torch', got {format!r}")
    if not _use_new_zipfile_serialization:
        raise ValueError("pyframe.save writes torch's zip format only (_use_new_zipfile_serialization=True)")
    is_path = isinstance(f, (str, bytes, os.PathLike))
    if not is_path:
        _check_binary(f, "write")
    if format == "torch":
        if metadata is not None:
            raise ValueError("metadata is stored in pyframe checkpoints only; torch's format has no place for it")
        return _save_torch(obj, f, is_path)
    enc = _Encoder()
    try:
        encoded = enc.encode(obj, "obj")
    except TypeError as e:
        if format == "pyframe" or metadata is not None:
            raise
        try:  # torch.save pickles what pyframe's format cannot hold: so does this default
            return _save_torch(obj, f, is_path)
        except (pickle.PicklingError, TypeError, AttributeError, ValueError) as pe:
            e.add_note(f"it cannot be pickled into torch's format either: {pe}")
            raise e from None
    except RecursionError:
        raise ValueError("obj: nested too deeply to save (deeper than Python's recursion limit allows)") from None
    meta = _collect_metadata(metadata)
    storages, chunks = enc.layout()
    header = {
        "format": FORMAT_VERSION,
        "writer": f"pyframe {__version__}",
        "metadata": meta,
        "data_nbytes": _end(storages),
        "storages": storages,
        "tensors": enc.tensors,
        "object": encoded,
    }
    hbytes = json.dumps(header, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")

    def write(fh) -> None:
        _write_all(fh, _PREAMBLE.pack(MAGIC, FORMAT_VERSION, zlib.crc32(hbytes), len(hbytes)))
        _write_all(fh, hbytes)
        _write_all(fh, bytes(_pad(_PREAMBLE.size + len(hbytes))))
        pos = 0
        for entry, chunk in zip(storages, chunks, strict=True):
            _write_all(fh, bytes(entry["offset"] - pos))
            _write_all(fh, chunk)
            pos = entry["offset"] + entry["nbytes"]

    if is_path:
        _atomic_write(os.fsdecode(f), write)
    else:
        write(f)


def _save_torch(obj, f, is_path: bool) -> None:
    from pyframe.serialization.torch_writer import write_torch

    if is_path:
        _atomic_write(os.fsdecode(f), lambda fh: write_torch(obj, fh))
    else:
        write_torch(obj, f)


def _write_all(fh, data) -> None:
    """fh.write until everything is written (a raw, unbuffered file may take part of it)."""
    mv = memoryview(data).cast("B")
    while len(mv):
        n = fh.write(mv)
        if n is None or n >= len(mv):  # None: a writer that does not report (and so wrote it all)
            return
        mv = mv[n:]


def _check_binary(f, op: str) -> None:
    if isinstance(f, io.TextIOBase):
        raise TypeError(f"pyframe checkpoints are binary: open the file with mode '{op[0]}b', not in text mode")
    if not hasattr(f, op):
        raise TypeError(f"expected a path or a binary file object with a {op}() method, got {type(f).__name__}")


def _remove_stale_temporaries(directory: str, name: str) -> None:
    """Delete temporary files left by earlier saves to ``name`` whose writer was killed: a temporary
    is named ``.{name}.{pid}-{random}.tmp``, and one whose process no longer exists is garbage. A
    live writer's file (another process saving to the same path right now) is left alone."""
    prefix = f".{name}."
    try:
        entries = os.listdir(directory or ".")
    except OSError:
        return
    for entry in entries:
        if not (entry.startswith(prefix) and entry.endswith(".tmp")):
            continue
        pid, sep, rest = entry[len(prefix) : -len(".tmp")].partition("-")
        if not (sep and pid.isdigit() and len(rest) == 12) or _process_alive(int(pid)):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, entry))


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # another thread of this process may be saving
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError, OverflowError):
        return True
    return True


def _atomic_write(path: str, write: Callable) -> None:
    """Write through ``write(fh)`` to a temporary file next to ``path``, fsync it, rename it over ``path``."""
    path = os.path.realpath(path)  # a symlink is written through, not replaced
    if os.path.isdir(path):
        raise IsADirectoryError(f"cannot save to {path!r}: it is a directory")
    directory, name = os.path.split(path)
    try:
        mode = stat.S_IMODE(os.stat(path).st_mode)  # overwriting keeps the file's permissions
    except FileNotFoundError:
        mode = None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    _remove_stale_temporaries(directory, name)
    while True:
        tmp = os.path.join(directory, f".{name}.{os.getpid()}-{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)  # the umask applies, as for a plain open()
            break
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode is not None and hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), mode)
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError, AttributeError):  # make the rename itself durable (POSIX)
        dfd = os.open(directory or ".", os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _collect_metadata(metadata) -> dict:
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise TypeError(f"metadata must be a dict or None, got {type(metadata).__name__}")
    out = _check_json(metadata, "metadata")
    for key, on_save, _ in list(_metadata_hooks.values()):
        if on_save is None:
            continue
        try:
            value = on_save()
        except Exception as e:
            _note(e, on_save, "on_save")
            raise
        out[key] = _check_json(value, f"metadata[{key!r}] (from the metadata hook {on_save!r})")
    return out


# ---- load -------------------------------------------------------------------------------------------


def load(f, map_location=None, pickle_module=None, *, weights_only=True, mmap=None, **pickle_load_args):
    """Read an object written by :func:`save` or by ``torch.save`` from ``f`` (a path or a binary file object).

    Same call as torch.load. A pyframe checkpoint holds only tensors and plain values, and every byte is
    checked. A torch checkpoint (the zip format, or the legacy one) is read as torch's
    ``load(weights_only=True)`` reads it: tensors, Parameters, containers and plain values through an
    unpickler that imports and calls nothing outside an allowlist; anything else raises
    :class:`~pyframe.serialization.WeightsOnlyError` naming what the file asked for. ``weights_only=False``
    unpickles a torch-format file with Python's pickle, which runs whatever the file says: only for files you
    trust (``docs/serialization.md``). Tensors come back in new memory (with ``mmap=True``, for a file on
    disk in either format, mapped copy-on-write and read only when used) and keep dtype, shape, strides and
    ``requires_grad``; tensors that shared a storage share it again. A damaged file raises
    :class:`CheckpointError` (a ValueError). ``map_location`` may be None, "cpu", a dict mapping saved
    locations to "cpu", or a callable ``(storage, location) -> storage`` that returns the storage."""
    from pyframe.serialization.torch_reader import LEGACY_MAGIC, ZIP_MAGIC, load_torch

    if weights_only not in (True, None, False):
        raise TypeError(f"weights_only must be a bool, got {weights_only!r}")
    if pickle_module is not None:
        raise ValueError("pyframe.load uses its own unpickler; pickle_module is not accepted")
    encoding = pickle_load_args.pop("encoding", "ASCII")
    if pickle_load_args:
        raise ValueError(f"pyframe.load: unsupported pickle load arguments {sorted(pickle_load_args)}")
    _check_location(map_location)
    with _open(f) as (fh, source, size, is_path):
        head, fh = _peek(fh, len(LEGACY_MAGIC))
        if head[:4] == ZIP_MAGIC or head == LEGACY_MAGIC:
            return load_torch(
                fh, source, head, map_location=map_location, weights_only=weights_only, use_mmap=bool(mmap),
                encoding=encoding,
            )  # fmt: skip
        header, hend = _read_header(fh, source, size)
        storages = _read_storages(fh, source, header, hend, size, is_path, use_mmap=bool(mmap))
    tensors = _build_tensors(header["tensors"], storages)
    try:
        obj = _Decoder(tensors, source, header["tensors"]).decode(header["object"], "obj")
    except RecursionError:
        raise CheckpointError(f"{source}: corrupted: the object nests too deeply to load") from None
    for key, _, on_load in list(_metadata_hooks.values()):
        if on_load is None:
            continue
        try:
            on_load(header["metadata"].get(key), source)
        except Exception as e:
            _note(e, on_load, "on_load")
            raise
    return obj


class _Prefixed:
    """A non-seekable stream with the bytes already read put back in front."""

    def __init__(self, head: bytes, fh) -> None:
        self.head, self.fh = head, fh
        self.name = getattr(fh, "name", None)

    def read(self, n: int = -1) -> bytes:
        if not self.head:
            return self.fh.read(n)
        if n is None or n < 0:
            out, self.head = self.head + self.fh.read(), b""
            return out
        out, self.head = self.head[:n], self.head[n:]
        return out + (self.fh.read(n - len(out)) if n > len(out) else b"")

    def readinto(self, buf) -> int:
        b = self.read(len(memoryview(buf).cast("B")))
        memoryview(buf).cast("B")[: len(b)] = b
        return len(b)

    def seekable(self) -> bool:
        return False


def _peek(fh, n: int):
    """The first ``n`` bytes from the current position, and a file to read from that position again."""
    try:
        seekable = fh.seekable()
    except (AttributeError, OSError, ValueError):
        seekable = False
    if seekable:
        start = fh.tell()
        head = fh.read(n)
        fh.seek(start)
        return head, fh
    head = fh.read(n)
    return head, _Prefixed(head, fh)


def read_metadata(f) -> dict:
    """The metadata dict stored by ``save(..., metadata=...)`` (plus what metadata hooks recorded).

    Reads and verifies only the preamble and the header, not the tensor data."""
    with _open(f) as (fh, source, size, _):
        return _read_header(fh, source, size)[0]["metadata"]


def _check_location(map_location) -> None:
    if map_location is None or (callable(map_location) and not isinstance(map_location, (str, dict))):
        return
    if isinstance(map_location, dict) and all(isinstance(k, str) and _is_cpu(v) for k, v in map_location.items()):
        return
    if _is_cpu(map_location):
        return
    raise ValueError(f"pyframe runs on the CPU only; map_location={map_location!r} is not supported (use 'cpu')")


def _is_cpu(loc) -> bool:
    return isinstance(loc, str) and (loc == "cpu" or loc.startswith("cpu:")) or str(loc) == "cpu"


@contextlib.contextmanager
def _open(f):
    """Yields (binary file, name for messages, bytes from the current position to the end or None,
    whether ``f`` was a path: only then must the checkpoint end where the file ends)."""
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(f)
        with open(path, "rb") as fh:
            yield fh, path, os.fstat(fh.fileno()).st_size, True
        return
    _check_binary(f, "read")
    size = None
    with contextlib.suppress(AttributeError, OSError, ValueError):
        if f.seekable():
            start = f.tell()
            size = f.seek(0, io.SEEK_END) - start
            f.seek(start)
    name = getattr(f, "name", None)
    yield f, (repr(name) if isinstance(name, str) else f"<{type(f).__name__}>"), size, False
